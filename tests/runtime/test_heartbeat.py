"""Heartbeat auto-store: seed 000 prompt 2 tests, plus idempotency, layers and bad input."""

from __future__ import annotations

from typing import Any

import pytest

from f09_memory import MemoryEngine, MemoryLayer
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.runtime import (
    CATEGORY_LAYERS,
    HEARTBEAT_SOURCE_TAG,
    MomentCategory,
    Turn,
    heartbeat_store,
)
from f09_memory.runtime.heartbeat import SNAPSHOT_MAX_CHARS

AGENT = "agent-1"


def turn(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "content": content}


def chatter(n: int) -> list[dict[str, Any]]:
    return [turn("user" if i % 2 == 0 else "assistant", f"Small talk number {i}.")
            for i in range(n)]


# --- seed 000, prompt 2, tests 1-8 -------------------------------------------------------


def test_three_turns_with_a_decision_store_the_decision(engine: MemoryEngine) -> None:
    turns = [
        turn("user", "Which database should we use?"),
        turn("assistant", "Decision: use Supabase for auth."),
        turn("user", "Sounds good."),
    ]

    result = heartbeat_store(engine, AGENT, turns, now=100)

    assert 1 == result.stored
    assert 1 == engine.count(AGENT)
    record = engine.get(result.ids[0])
    assert "Decision: use Supabase for auth." == record.content
    assert "decision" == record.metadata.attributes["category"]
    assert None is result.skipped


def test_fewer_than_min_new_turns_is_skipped(engine: MemoryEngine) -> None:
    turns = [turn("assistant", "Decision: use Supabase."), turn("user", "ok")]

    result = heartbeat_store(engine, AGENT, turns, min_new_turns=3)

    assert "insufficient_turns" == result.skipped
    assert 0 == result.stored
    assert () == result.ids
    assert -1 == result.last_index
    assert 0 == engine.count(AGENT)


def test_no_key_moments_store_a_session_snapshot_fallback(engine: MemoryEngine) -> None:
    result = heartbeat_store(engine, AGENT, chatter(4), session_id="s1", now=7)

    assert 1 == result.stored
    assert () == result.moments
    record = engine.get(result.ids[0])
    assert "session_snapshot" == record.metadata.attributes["category"]
    assert 0.5 == record.importance
    assert MemoryLayer.EPISODIC == record.layer
    assert "Small talk number 0." in record.content
    assert "Small talk number 3." in record.content
    assert len(record.content) <= SNAPSHOT_MAX_CHARS
    assert 7 == record.created_at


def test_multiple_moments_across_turns_are_all_stored(engine: MemoryEngine) -> None:
    turns = [
        turn("assistant", "Decision: use Supabase. Blocked by RLS permissions."),
        turn("user", "I prefer dark mode."),
        turn("user", "TODO: fix the login bug."),
    ]

    result = heartbeat_store(engine, AGENT, turns)

    contents = [engine.get(i).content for i in result.ids]
    assert ["Decision: use Supabase.", "Blocked by RLS permissions.", "I prefer dark mode.",
            "TODO: fix the login bug."] == contents
    assert 4 == result.stored == engine.count(AGENT)


def test_tags_include_session_topic_and_project_when_given(engine: MemoryEngine) -> None:
    turns = [turn("assistant", "Going with Terraform."), *chatter(2)]

    result = heartbeat_store(engine, AGENT, turns, session_id="sess-9", topic_slug="oci",
                             project_slug="infra")

    tags = engine.get(result.ids[0]).metadata.tags
    assert {"session:sess-9", "topic:oci", "project:infra", HEARTBEAT_SOURCE_TAG,
            "source:assistant"} <= set(tags)


def test_tags_omit_labels_that_were_not_given(engine: MemoryEngine) -> None:
    result = heartbeat_store(engine, AGENT, [turn("assistant", "Ship it."), *chatter(2)])

    tags = engine.get(result.ids[0]).metadata.tags
    assert not any(t.startswith(("session:", "topic:", "project:")) for t in tags)


def test_last_stored_index_five_of_ten_processes_only_turns_six_to_nine(
    engine: MemoryEngine,
) -> None:
    turns = [turn("assistant", f"Decision: option {i}.") for i in range(10)]

    result = heartbeat_store(engine, AGENT, turns, last_stored_index=5)

    assert [6, 7, 8, 9] == [engine.get(i).metadata.attributes["turnIndex"] for i in result.ids]
    assert ["Decision: option 6.", "Decision: option 7.", "Decision: option 8.",
            "Decision: option 9."] == [m.text for m in result.moments]


def test_provenance_source_reflects_the_turn_role(engine: MemoryEngine) -> None:
    turns = [turn("user", "I prefer tabs."), turn("assistant", "Decision: use tabs."),
             turn("tool", "exit 0")]

    result = heartbeat_store(engine, AGENT, turns)

    attrs = [engine.get(i).metadata.attributes for i in result.ids]
    assert [("user_explicit", "user"), ("system", "assistant")] == [
        (a["provenance"], a["sourceRole"]) for a in attrs]


def test_returns_the_index_of_the_last_processed_turn(engine: MemoryEngine) -> None:
    turns = chatter(8)

    first = heartbeat_store(engine, AGENT, turns[:5])
    second = heartbeat_store(engine, AGENT, turns, last_stored_index=first.last_index)
    third = heartbeat_store(engine, AGENT, turns, last_stored_index=second.last_index)

    assert (4, 7, 7) == (first.last_index, second.last_index, third.last_index)
    assert (None, None, "insufficient_turns") == (first.skipped, second.skipped, third.skipped)


# --- categories, layers and importance ---------------------------------------------------


def test_categories_map_to_layers_importance_and_status(engine: MemoryEngine) -> None:
    turns = [
        turn("assistant", "Decision: use Postgres."),
        turn("assistant", "Blocked by the VPN outage."),
        turn("user", "I like short answers. I will send the logs."),
    ]

    result = heartbeat_store(engine, AGENT, turns)

    got = [(r.metadata.attributes["category"], r.layer, r.importance)
           for r in map(engine.get, result.ids)]
    assert [("decision", MemoryLayer.SEMANTIC, 0.9), ("open_thread", MemoryLayer.SEMANTIC, 0.85),
            ("preference", MemoryLayer.SEMANTIC, 0.7),
            ("commitment", MemoryLayer.SEMANTIC, 0.8)] == got
    assert "status:open" in engine.get(result.ids[1]).metadata.tags
    assert MemoryLayer.EPISODIC == CATEGORY_LAYERS[MomentCategory.SESSION_SNAPSHOT]


def test_turn_objects_are_accepted_like_mappings(engine: MemoryEngine) -> None:
    turns = [Turn("assistant", "Decision: use Redis."), Turn("user", "ok"), Turn("user", "go")]

    assert 1 == heartbeat_store(engine, AGENT, turns).stored


# --- idempotency (PRD 5.2: at most one snapshot per idle period) ------------------------


def test_calling_again_with_the_same_turns_stores_nothing_new(engine: MemoryEngine) -> None:
    turns = [turn("assistant", "Decision: use Supabase."), *chatter(3)]

    first = heartbeat_store(engine, AGENT, turns, session_id="s1", now=10)
    state = engine.state_hash()
    second = heartbeat_store(engine, AGENT, turns, session_id="s1", now=20)

    assert 0 == second.stored
    assert "already_stored" == second.skipped
    assert first.ids == second.ids
    assert state == engine.state_hash()


def test_one_snapshot_per_idle_period(engine: MemoryEngine) -> None:
    turns = chatter(5)

    for now in (10, 20, 30):
        heartbeat_store(engine, AGENT, turns, session_id="s1", now=now)

    assert 1 == engine.count(AGENT)


def test_new_turns_after_the_last_index_get_their_own_snapshot(engine: MemoryEngine) -> None:
    turns = chatter(8)

    first = heartbeat_store(engine, AGENT, turns[:4], session_id="s1")
    second = heartbeat_store(engine, AGENT, turns, session_id="s1",
                             last_stored_index=first.last_index)

    assert 1 == first.stored == second.stored
    assert first.ids != second.ids


def test_a_moment_repeated_across_turns_is_stored_once(engine: MemoryEngine) -> None:
    turns = [turn("assistant", "Decision: use Supabase."),
             turn("assistant", "decision:   use supabase."), turn("user", "ok")]

    result = heartbeat_store(engine, AGENT, turns)

    assert 1 == result.stored == len(result.moments)


def test_snapshot_is_cut_at_a_word_boundary(engine: MemoryEngine) -> None:
    turns = [turn("user", "word " * 200), *chatter(2)]

    record = engine.get(heartbeat_store(engine, AGENT, turns).ids[0])

    assert len(record.content) <= SNAPSHOT_MAX_CHARS
    assert record.content.endswith("word\u2026")


def test_same_inputs_give_the_same_state_in_another_engine(make_engine: Any) -> None:
    turns = [turn("assistant", "Decision: use Supabase."), turn("user", "I prefer Go."),
             *chatter(2)]
    a, b = make_engine(), make_engine()

    heartbeat_store(a, AGENT, turns, session_id="s", topic_slug="db", now=5)
    heartbeat_store(b, AGENT, turns, session_id="s", topic_slug="db", now=5)

    assert a.state_hash() == b.state_hash()


# --- bad input: MEMORY_INPUT_INVALID, nothing stored ------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("", chatter(3)), {}),
        ((AGENT, "not a list"), {}),
        ((AGENT, [turn("robot", "hi")] * 3), {}),
        ((AGENT, [{"role": "user"}] * 3), {}),
        ((AGENT, [{"role": "user", "content": 5}] * 3), {}),
        ((AGENT, [{"role": "user", "content": "x", "extra": 1}] * 3), {}),
        ((AGENT, [42] * 3), {}),
        ((AGENT, chatter(3)), {"min_new_turns": 0}),
        ((AGENT, chatter(3)), {"min_new_turns": True}),
        ((AGENT, chatter(3)), {"last_stored_index": -2}),
        ((AGENT, chatter(3)), {"last_stored_index": 3}),
        ((AGENT, chatter(3)), {"session_id": "  "}),
        ((AGENT, chatter(3)), {"topic_slug": 7}),
        ((AGENT, chatter(3)), {"now": -1}),
    ],
)
def test_bad_arguments_raise_input_invalid_and_store_nothing(
    engine: MemoryEngine, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    before = engine.state_hash()

    with pytest.raises(MemoryEngineError) as info:
        heartbeat_store(engine, *args, **kwargs)

    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert before == engine.state_hash()


def test_category_layers_come_from_the_config() -> None:
    from f09_memory import MemoryConfig, MemoryEngine
    from f09_memory.runtime import heartbeat_store

    engine = MemoryEngine(MemoryConfig(category_layers={"decision": "system"}), embedder=None)
    result = heartbeat_store(engine, "a", [
        {"role": "assistant", "content": "Decision: we ship on Friday."},
        {"role": "user", "content": "ok"}], min_new_turns=1, now=0)
    assert ["system"] == [engine.get(i).layer.value for i in result.ids]
