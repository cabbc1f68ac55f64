"""The action-record convention: attributes, source events, outcomes, canonical patterns."""

from __future__ import annotations

from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.procedural.actions import (
    ActionStep,
    action_at,
    canonical_pattern,
    parse_pattern,
    pattern_id,
)


def step_of(engine: MemoryEngine, **kwargs: Any) -> ActionStep | None:
    rec = engine.ingest("npc", "something happened", now=7, **kwargs)
    am = engine._state.store.get("npc")
    assert am is not None
    key = int(rec.id.split(":")[1])
    return action_at(am, key, am.slot_of[key])


@pytest.fixture
def engine() -> MemoryEngine:
    return MemoryEngine(MemoryConfig(), embedder=None)


@pytest.mark.parametrize(("outcome", "score"), [
    ("success", 1.0), ("failure", 0.0), (" SUCCESS ", 1.0), (True, 1.0), (False, 0.0),
    (0.25, 0.25), (1, 1.0), ("maybe", 0.0), (1.5, 0.0), (-0.1, 0.0)])
def test_the_outcome_attribute_gives_the_success_score(engine: MemoryEngine, outcome: object,
                                                       score: float) -> None:
    step = step_of(engine, metadata={"attributes": {"action": "eat", "outcome": outcome,
                                                    "context": "hungry"}})
    assert ActionStep("eat", "hungry", 7, score) == step


def test_an_action_without_outcome_or_context_counts_zero_and_no_context(
        engine: MemoryEngine) -> None:
    assert ActionStep("eat", "", 7, 0.0) == step_of(
        engine, metadata={"attributes": {"action": " eat "}})


@pytest.mark.parametrize("attrs", [{"action": 3}, {"action": "  "}, {"action": True},
                                   {"mood": "calm"}])
def test_malformed_action_attributes_make_a_plain_record(engine: MemoryEngine,
                                                         attrs: dict[str, Any]) -> None:
    assert step_of(engine, metadata={"attributes": attrs}) is None


def test_a_plain_record_is_no_action(engine: MemoryEngine) -> None:
    assert step_of(engine) is None


def test_a_source_event_action_takes_its_outcome_from_tags(engine: MemoryEngine) -> None:
    assert ActionStep("flee", "", 7, 1.0) == step_of(engine, source_event="action:flee",
                                                     tags=["success"])
    assert ActionStep("flee", "", 7, 0.0) == step_of(engine, source_event="action:flee",
                                                     tags=["failure"])
    assert step_of(engine, source_event="action:") is None
    assert step_of(engine, source_event="combat:flee") is None


def test_procedural_records_are_never_actions(engine: MemoryEngine) -> None:
    assert step_of(engine, layer="procedural",
                   metadata={"attributes": {"action": "eat"}}) is None


def test_the_canonical_text_round_trips_and_names_the_pattern() -> None:
    text = canonical_pattern(("eat", "a>b|c"), "hungry")
    assert '[["eat","a>b|c"],"hungry"]' == text
    assert (("eat", "a>b|c"), "hungry") == parse_pattern(text)
    assert 16 == len(pattern_id(text))
    assert pattern_id(text) != pattern_id(canonical_pattern(("eat", "a>b|c"), ""))


@pytest.mark.parametrize("bad", ["nope", "[]", '[["eat"],""]', '[["eat",""],""]',
                                 '[["a","b"],3]'])
def test_a_malformed_pattern_text_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_pattern(bad)
