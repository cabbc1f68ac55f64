"""Topic-slug extraction: seed 000 prompt 3 tests 1-4, plus normalization and synonyms."""

from __future__ import annotations

import pytest

from f09_memory.errors import ErrorCode, InputInvalidError
from f09_memory.runtime import STOPWORDS, extract_topic_slug, tokenize_topic_words

OCI = {"oci": ["oracle", "tenancy"]}


# --- seed 000, prompt 3, tests 1-4 -------------------------------------------------------


def test_top_non_stop_word_is_the_slug() -> None:
    slug = extract_topic_slug("Fix the OCI deployment pipeline")
    assert slug in {"oci", "deployment", "pipeline"}
    assert slug == "deployment"  # all tie at 1: alphabetical first


def test_synonym_alias_maps_to_its_slug() -> None:
    text = "Move the oracle tenancy to the new oracle region"
    assert extract_topic_slug(text, synonyms=OCI) == "oci"


def test_empty_text_gives_none() -> None:
    assert extract_topic_slug("") is None
    assert extract_topic_slug("  ...!? ") is None


def test_only_stop_words_gives_none() -> None:
    assert extract_topic_slug("the a an is") is None


# --- frequency, ties, normalization ------------------------------------------------------


def test_most_frequent_word_wins() -> None:
    assert extract_topic_slug("zebra apple zebra; Zebra!") == "zebra"


def test_ties_break_alphabetically() -> None:
    assert extract_topic_slug("pipeline deployment") == "deployment"
    assert extract_topic_slug("deployment pipeline") == "deployment"


def test_normalization_lowercases_and_strips_punctuation() -> None:
    assert tokenize_topic_words("The user's CI/CD, it's BROKEN!") == [
        "users", "ci", "cd", "its", "broken"
    ]


def test_stopwords_are_the_seed_list() -> None:
    seed = "the a an is are was were to for in on of and or but with this that it we i you my"
    assert set(seed.split(" ")) == STOPWORDS


def test_synonyms_do_not_apply_when_alias_is_not_the_top_word() -> None:
    assert extract_topic_slug("deploy deploy oracle", synonyms=OCI) == "deploy"


def test_synonyms_are_case_insensitive_and_slug_key_is_returned() -> None:
    assert extract_topic_slug("ORACLE", synonyms={"oci": ["Oracle "]}) == "oci"


def test_a_top_word_equal_to_a_slug_wins_over_an_alias_of_another_slug() -> None:
    synonyms = {"cloud": ["oci"], "oci": ["oracle"]}
    assert extract_topic_slug("oci", synonyms=synonyms) == "oci"


def test_alias_claimed_by_two_slugs_resolves_to_smallest_slug() -> None:
    synonyms = {"zeta": ["db"], "alpha": ["db"]}
    assert extract_topic_slug("db", synonyms=synonyms) == "alpha"


def test_extraction_is_deterministic() -> None:
    text = "map tiles map sprites tiles sprites"
    assert {extract_topic_slug(text) for _ in range(5)} == {"map"}


@pytest.mark.parametrize(
    "synonyms",
    [["oci"], {"oci": "oracle"}, {"oci": [1]}, {"": ["x"]}, {3: ["x"]}],
)
def test_bad_synonyms_raise_input_invalid(synonyms: object) -> None:
    with pytest.raises(InputInvalidError) as info:
        extract_topic_slug("oracle", synonyms=synonyms)  # type: ignore[arg-type]
    assert info.value.code is ErrorCode.MEMORY_INPUT_INVALID


def test_non_string_text_raises_input_invalid() -> None:
    with pytest.raises(InputInvalidError):
        extract_topic_slug(42)  # type: ignore[arg-type]
