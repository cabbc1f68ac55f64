"""Pre-compaction dump: seed 000 prompt 4 tests, plus idempotency and bad input."""

from __future__ import annotations

from typing import Any

import pytest

from f09_memory import MemoryEngine, MemoryLayer
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.runtime import (
    PRE_COMPACTION_TAG,
    build_session_snapshot,
    heartbeat_store,
    pre_compaction_dump,
)

AGENT = "agent-1"


def turn(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "content": content}


DECISIONS_AND_BLOCKER = [
    turn("user", "What should we use?"),
    turn("assistant", "Decision: use Supabase. Going with Vercel for hosting."),
    turn("assistant", "Let's do weekly releases. Blocked by RLS permissions."),
]


# --- seed 000, prompt 4, tests 1-7 -------------------------------------------------------


def test_three_decisions_and_a_blocker_store_four_takeaways_and_a_snapshot(
    engine: MemoryEngine,
) -> None:
    result = pre_compaction_dump(engine, AGENT, DECISIONS_AND_BLOCKER, session_id="s1")

    assert 4 == result.takeaways
    assert 5 == result.stored == engine.count(AGENT)


def test_duplicate_moments_are_stored_once(engine: MemoryEngine) -> None:
    turns = [turn("assistant", "Decision: use Supabase."),
             turn("assistant", "  DECISION: use Supabase. "), turn("user", "I prefer Go.")]

    result = pre_compaction_dump(engine, AGENT, turns, session_id="s1")

    assert ["Decision: use Supabase.", "I prefer Go."] == [m.text for m in result.moments]
    assert 3 == engine.count(AGENT)


def test_more_than_max_takeaways_keeps_the_highest_importance(engine: MemoryEngine) -> None:
    turns = [turn("user", "I prefer tabs. I will review the PR."),
             turn("assistant", "Blocked by CI. Decision: merge on green.")]

    result = pre_compaction_dump(engine, AGENT, turns, session_id="s1", max_takeaways=2)

    assert ["Decision: merge on green.", "Blocked by CI."] == [m.text for m in result.moments]
    assert [0.9, 0.85] == [engine.get(i).importance for i in result.ids]
    assert 3 == engine.count(AGENT)


def test_no_moments_still_store_a_snapshot_of_nones(engine: MemoryEngine) -> None:
    result = pre_compaction_dump(engine, AGENT, [turn("user", "hello")], session_id="s1")

    assert (0, (), 1) == (result.takeaways, result.ids, result.stored)
    snapshot = engine.get(result.snapshot_id).content
    assert snapshot.startswith("## Session Snapshot\n")
    assert "**Decisions:** none" in snapshot
    assert "**Open threads:** none" in snapshot
    assert "**Commitments:** none" in snapshot
    assert "**Preferences:** none" in snapshot


def test_snapshot_text_lists_the_decision_and_blocker_texts(engine: MemoryEngine) -> None:
    result = pre_compaction_dump(engine, AGENT, DECISIONS_AND_BLOCKER, session_id="s1")

    record = engine.get(result.snapshot_id)
    lines = record.content.splitlines()
    assert ("**Decisions:** Decision: use Supabase.; Going with Vercel for hosting.; "
            "Let's do weekly releases.") == lines[1]
    assert "**Open threads:** Blocked by RLS permissions." == lines[2]
    assert (0.7, MemoryLayer.EPISODIC) == (record.importance, record.layer)
    assert "session_snapshot" == record.metadata.attributes["category"]


def test_every_stored_memory_is_tagged_pre_compaction(engine: MemoryEngine) -> None:
    pre_compaction_dump(engine, AGENT, DECISIONS_AND_BLOCKER, session_id="s1",
                        topic_slug="db", project_slug="web")

    for record in engine.records(AGENT):
        assert {PRE_COMPACTION_TAG, "session:s1", "topic:db", "project:web"} <= set(
            record.metadata.tags)
        assert "pre_compaction" == record.metadata.attributes["trigger"]


def test_returns_the_ids_and_takeaway_count(engine: MemoryEngine) -> None:
    result = pre_compaction_dump(engine, AGENT, DECISIONS_AND_BLOCKER, session_id="s1")

    stored = [r.id for r in engine.records(AGENT)]
    assert result.takeaways == len(result.ids)
    assert sorted([*result.ids, result.snapshot_id]) == sorted(stored)
    assert result.snapshot_id not in result.ids
    assert [m.text for m in result.moments] == [engine.get(i).content for i in result.ids]


# --- idempotency (PRD 10, phase 3: don't dump twice) -------------------------------------


def test_dumping_the_same_turns_twice_stores_nothing_new(engine: MemoryEngine) -> None:
    first = pre_compaction_dump(engine, AGENT, DECISIONS_AND_BLOCKER, session_id="s1", now=5)
    state = engine.state_hash()
    second = pre_compaction_dump(engine, AGENT, DECISIONS_AND_BLOCKER, session_id="s1", now=9)

    assert 0 == second.stored
    assert (first.ids, first.snapshot_id) == (second.ids, second.snapshot_id)
    assert state == engine.state_hash()


def test_takeaways_the_heartbeat_stored_are_not_stored_again(engine: MemoryEngine) -> None:
    beat = heartbeat_store(engine, AGENT, DECISIONS_AND_BLOCKER, session_id="s1")
    more = [*DECISIONS_AND_BLOCKER, turn("user", "I prefer small PRs.")]

    dump = pre_compaction_dump(engine, AGENT, more, session_id="s1")

    assert 5 == dump.takeaways
    assert 2 == dump.stored  # the new preference and the snapshot
    assert set(beat.ids) <= set(dump.ids)


def test_a_later_dump_with_new_takeaways_writes_a_new_snapshot(engine: MemoryEngine) -> None:
    first = pre_compaction_dump(engine, AGENT, DECISIONS_AND_BLOCKER, session_id="s1")
    later = pre_compaction_dump(
        engine, AGENT, [*DECISIONS_AND_BLOCKER, turn("user", "TODO: write docs.")],
        session_id="s1")

    assert first.snapshot_id != later.snapshot_id
    assert 2 == later.stored


def test_build_session_snapshot_puts_blockers_under_open_threads() -> None:
    from f09_memory.runtime import detect_key_moments

    text = build_session_snapshot(detect_key_moments("Waiting on legal.", role="assistant"))

    assert "**Open threads:** Waiting on legal." in text.splitlines()


# --- bad input: MEMORY_INPUT_INVALID, nothing stored ------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("", DECISIONS_AND_BLOCKER), {"session_id": "s1"}),
        ((AGENT, DECISIONS_AND_BLOCKER), {"session_id": ""}),
        ((AGENT, DECISIONS_AND_BLOCKER), {"session_id": None}),
        ((AGENT, DECISIONS_AND_BLOCKER), {"session_id": "s1", "max_takeaways": -1}),
        ((AGENT, DECISIONS_AND_BLOCKER), {"session_id": "s1", "project_slug": ""}),
        ((AGENT, DECISIONS_AND_BLOCKER), {"session_id": "s1", "now": "later"}),
        ((AGENT, [*DECISIONS_AND_BLOCKER, turn("bot", "x")]), {"session_id": "s1"}),
        ((AGENT, {"role": "user", "content": "x"}), {"session_id": "s1"}),
    ],
)
def test_bad_arguments_raise_input_invalid_and_store_nothing(
    engine: MemoryEngine, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    before = engine.state_hash()

    with pytest.raises(MemoryEngineError) as info:
        pre_compaction_dump(engine, *args, **kwargs)

    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert before == engine.state_hash()
