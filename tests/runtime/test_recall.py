"""Topic extraction and blended contextual recall: seed 000 prompt 3 tests, plus more."""

from __future__ import annotations

from typing import Any

import pytest

from f09_memory import MemoryEngine
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.runtime import CHANNELS, contextual_recall, extract_topic_slug

AGENT = "agent-1"


def seed_memories(engine: MemoryEngine) -> dict[str, str]:
    """Ids by name: an important old fact, a relevant mid-importance note, recent chatter."""
    spec = [
        ("important", "Production database password rotates every 30 days", 0.95),
        ("relevant", "The deployment pipeline builds images with Kaniko", 0.5),
        ("medium", "Backups are kept for two weeks", 0.75),
        *[(f"recent{i}", f"Chatted about the weather, round {i}", 0.2) for i in range(6)],
    ]
    ids = {}
    for now, (name, content, importance) in enumerate(spec, start=1):
        ids[name] = engine.ingest(AGENT, content, importance=importance, layer="semantic",
                                  now=now).id
    return ids


def channels_of(result: Any) -> dict[str, tuple[str, ...]]:
    return {c.id: c.channels for c in result.candidates}


# --- seed 000, prompt 3, tests 1-4: extract_topic_slug --------------------------------


def test_topic_slug_is_a_non_stop_word_of_the_text() -> None:
    assert extract_topic_slug("Fix the OCI deployment pipeline") in {
        "oci", "deployment", "pipeline", "fix"}


def test_topic_slug_maps_an_alias_to_its_synonym_slug() -> None:
    synonyms = {"oci": ["oracle", "tenancy"]}

    assert "oci" == extract_topic_slug("Check the oracle oracle tenancy", synonyms=synonyms)


def test_topic_slug_of_empty_text_is_none() -> None:
    assert None is extract_topic_slug("")


def test_topic_slug_of_only_stop_words_is_none() -> None:
    assert None is extract_topic_slug("the a an is")


# --- seed 000, prompt 3, tests 5-9: contextual_recall --------------------------------


def test_recall_blends_results_from_all_three_channels(engine: MemoryEngine) -> None:
    ids = seed_memories(engine)

    result = contextual_recall(engine, AGENT, "How does the deployment pipeline build?",
                               max_tokens=2000, now=100)

    found = channels_of(result)
    assert set(CHANNELS) == {c for chans in found.values() for c in chans}
    assert "importance" in found[ids["important"]]
    assert "semantic" in found[ids["relevant"]]
    assert "recency" in found[ids["recent5"]]
    got = {m.id for m in result.memories}
    assert {ids["important"], ids["relevant"], ids["recent5"]} <= got


def test_recall_counts_a_memory_found_by_several_channels_once(engine: MemoryEngine) -> None:
    only = engine.ingest(AGENT, "The deployment pipeline is slow", importance=0.9, now=1).id

    result = contextual_recall(engine, AGENT, "deployment pipeline", max_tokens=500, now=2)

    assert [only] == [m.id for m in result.memories]
    assert CHANNELS == result.candidates[0].channels
    assert 0 == result.excluded


def test_recall_respects_the_max_tokens_budget(engine: MemoryEngine) -> None:
    seed_memories(engine)

    result = contextual_recall(engine, AGENT, "deployment pipeline", max_tokens=20, now=100)

    assert result.total_tokens <= 20
    assert result.total_tokens == sum(m.tokens_estimate or 0 for m in result.memories)
    assert result.excluded > 0
    assert len(result.candidates) == len(result.memories) + result.excluded


def test_recall_returns_the_topic_slug(engine: MemoryEngine) -> None:
    result = contextual_recall(engine, AGENT, "OCI: move the OCI tenancy", max_tokens=100)

    assert "oci" == result.topic_slug


def test_importance_channel_filters_by_threshold(engine: MemoryEngine) -> None:
    ids = seed_memories(engine)
    only_importance: dict[str, Any] = {"recent_count": 0, "semantic_count": 0}

    strict = contextual_recall(engine, AGENT, "anything", max_tokens=500, now=100,
                               importance_threshold=0.9, **only_importance)
    loose = contextual_recall(engine, AGENT, "anything", max_tokens=500, now=100,
                              importance_threshold=0.7, **only_importance)

    assert [ids["important"]] == [m.id for m in strict.memories]
    assert {ids["important"], ids["medium"]} == {m.id for m in loose.memories}
    assert all(m.importance >= 0.7 for m in loose.memories)


# --- packing, ordering, determinism --------------------------------------------------


def test_packing_prefers_value_density_and_skips_what_does_not_fit(
    engine: MemoryEngine,
) -> None:
    big = engine.ingest(AGENT, "Deployment notes " + "detail " * 60, importance=0.9, now=1).id
    small = engine.ingest(AGENT, "Deployment uses Kaniko", importance=0.9, now=2).id

    result = contextual_recall(engine, AGENT, "deployment", max_tokens=30, now=3)

    assert [small] == [m.id for m in result.memories]
    assert {big: False, small: True} == {c.id: c.included for c in result.candidates}


def test_memories_come_in_composite_score_order(engine: MemoryEngine) -> None:
    seed_memories(engine)

    result = contextual_recall(engine, AGENT, "deployment pipeline", max_tokens=2000, now=100)

    score = {c.id: c.score for c in result.candidates}
    scores = [score[m.id] for m in result.memories]
    assert sorted(scores, reverse=True) == scores


def test_recall_with_no_memories_is_empty(engine: MemoryEngine) -> None:
    result = contextual_recall(engine, "nobody", "deployment", max_tokens=100)

    assert (0, 0, ()) == (result.total_tokens, result.excluded, result.memories)


def test_recall_reads_only_and_is_deterministic(make_engine: Any) -> None:
    a, b = make_engine(), make_engine()
    seed_memories(a)
    seed_memories(b)
    before = a.state_hash()

    ra = contextual_recall(a, AGENT, "deployment pipeline", max_tokens=60, now=100)
    rb = contextual_recall(b, AGENT, "deployment pipeline", max_tokens=60, now=100)

    assert ra == rb
    assert before == a.state_hash()


def test_synonyms_expand_the_importance_query(engine: MemoryEngine) -> None:
    oci = engine.ingest(AGENT, "Tenancy quotas were raised last week", importance=0.85, now=1).id
    for i in range(12):
        engine.ingest(AGENT, f"Important unrelated item {i}", importance=0.85, now=2 + i)
    only_importance: dict[str, Any] = {"recent_count": 0, "semantic_count": 0,
                                       "important_count": 1, "max_tokens": 2000, "now": 50}

    plain = contextual_recall(engine, AGENT, "OCI OCI status", **only_importance)
    expanded = contextual_recall(engine, AGENT, "OCI OCI status", **only_importance,
                                 synonyms={"oci": ["tenancy"]})

    assert [oci] != [m.id for m in plain.memories]
    assert [oci] == [m.id for m in expanded.memories]


# --- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize("max_tokens", [0, -5, None, True, 1.5, "100"])
def test_bad_max_tokens_raise_token_budget_undefined(
    engine: MemoryEngine, max_tokens: Any
) -> None:
    with pytest.raises(MemoryEngineError) as info:
        contextual_recall(engine, AGENT, "deployment", max_tokens=max_tokens)

    assert ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED == info.value.code


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("", "deployment"), {}),
        ((AGENT, None), {}),
        ((AGENT, "deployment"), {"recent_count": -1}),
        ((AGENT, "deployment"), {"semantic_count": 1.0}),
        ((AGENT, "deployment"), {"important_count": False}),
        ((AGENT, "deployment"), {"importance_threshold": 1.5}),
        ((AGENT, "deployment"), {"importance_threshold": float("nan")}),
        ((AGENT, "deployment"), {"synonyms": {"oci": "oracle"}}),
        ((AGENT, "deployment"), {"now": -3}),
    ],
)
def test_bad_arguments_raise_input_invalid(
    engine: MemoryEngine, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(MemoryEngineError) as info:
        contextual_recall(engine, *args, max_tokens=100, **kwargs)

    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
