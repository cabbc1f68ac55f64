from __future__ import annotations

import random
from typing import Any

import pytest

from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.summarization import (
    SourceEvent,
    coverage,
    first_sentence,
    garbage_reason,
    heuristic_summary,
    is_garbage,
    key_terms,
)


def ev(key: int, content: str, t: int, tags: tuple[str, ...] = (),
       importance: float = 0.2) -> SourceEvent:
    return SourceEvent(key, f"npc:{key:010d}", t, importance, content, tags)


TOWN = [
    ev(0, "Bought bread from Bram. It was stale.", 1_000, ("trade",), 0.1),
    ev(1, "Wolves attacked near the mill! Lysa drove them off.", 2_000, ("combat",), 0.4),
    ev(2, "Sold Bram a knife at the market.", 3_000, ("trade", "market"), 0.3),
    ev(3, "Paid Bram the debt.", 4_000, ("trade",), 0.2),
]


def test_heuristic_summary_names_span_counts_terms_and_highlights() -> None:
    text = heuristic_summary(TOWN)
    assert text == (
        "4 events from t=1000 to t=4000. Involving Bram (3). "
        "Tags: trade (3), combat (1), market (1). Highlights: Wolves attacked near the mill; "
        "Sold Bram a knife at the market; Paid Bram the debt."
    )
    assert 1.0 == coverage(text, TOWN)


def test_heuristic_summary_does_not_depend_on_input_order() -> None:
    rng = random.Random(7)
    shuffled = list(TOWN)
    rng.shuffle(shuffled)
    assert heuristic_summary(TOWN) == heuristic_summary(shuffled)


def test_heuristic_summary_is_bounded() -> None:
    many = [ev(i, f"Met Person{i} at Place{i}. " + "blah " * 60, i, (f"tag{i}",))
            for i in range(50)]
    text = heuristic_summary(many, max_chars=120, terms=20)
    assert len(text) <= 120 and text.endswith("…")
    assert heuristic_summary([ev(0, "Rain.", 5)]).startswith("1 event at t=5.")


def test_heuristic_summary_of_memory_records(build: Any, town: Any) -> None:
    engine, am = build(town(8))
    records = engine.records(am.agent_id)
    text = heuristic_summary(records)
    assert text.startswith("8 events from t=0 to t=7000. Involving Bram (2), Lysa (2), ")
    assert "Old Tom (2)" in text and "trade (4)" in text


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"sources": []}, "sources"), ({"sources": TOWN, "max_chars": 10}, "max_chars")])
def test_heuristic_summary_rejects_bad_input(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(MemoryEngineError) as info:
        heuristic_summary(**kwargs)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert field == info.value.details["field"]


def test_first_sentence() -> None:
    assert "Wolves came" == first_sentence("  Wolves\ncame!  Then they left.")
    assert "no end" == first_sentence("no end")


def test_key_terms_skip_sentence_initial_verbs_and_keep_multiword_names() -> None:
    # "Met", "Paid", "Then" are not names; "Old Tom" opening a sentence is, because it
    # appears inside one too; "Lysa" would only be seen at sentence starts
    src = [ev(0, "Met Old Tom at the Red Inn. Paid Bram's fee.", 0, ("Inn",)),
           ev(1, "Then Bram left. Old Tom stayed.", 1, ("inn",))]
    terms = key_terms(src, 10)
    assert [("Bram", 2, "entity"), ("Inn", 2, "tag"), ("Old Tom", 2, "entity"),
            ("Red Inn", 1, "entity")] == [tuple(t) for t in terms]
    assert 2 == len(key_terms(src, 2))


def test_coverage_is_the_share_of_key_terms_mentioned() -> None:
    # key terms: Bram (3), trade (3), combat, market ("Lysa" only opens a sentence)
    assert 1.0 == coverage("bram traded; TRADE, combat, market", TOWN)
    assert 0.5 == coverage("Bram went to trade.", TOWN)
    assert 0.0 == coverage("Nothing relevant here at all.", TOWN)
    assert 1.0 == coverage("anything", [ev(0, "it rained all day", 0)])


def test_coverage_matches_multiword_terms_word_by_word() -> None:
    src = [ev(0, "Met Old Tom.", 0), ev(1, "Saw Old Tom.", 1)]
    assert 1.0 == coverage("tom was old", src)
    assert 0.0 == coverage("Tom", src)


@pytest.mark.parametrize(("text", "reason"), [
    (None, "empty"),
    ("", "empty"),
    ("   \n\t", "empty"),
    (42, "not text"),
    ("... !!! 123 ???", "no letters"),
    ("ok", "too short"),
    ("Bram sold bread", "too short"),
    ("Bram.  Lysa.  Mira.", None),
    ("As an AI language model, I cannot summarize these events.", "refusal"),
    ("I'm sorry, but I can't help with that request.", "refusal"),
    ("I cannot do this because the events are private.", "refusal"),
    ("Summary: as an AI model I think Bram is nice.", "refusal"),
    ("bram bram bram bram bram bram bram bram bram", "repetitive"),
    ("Bram traded bread and knives with the market folk all week.", None),
])
def test_garbage_detection(text: object, reason: str | None) -> None:
    assert reason == garbage_reason(text)
    assert (reason is not None) == is_garbage(text)
