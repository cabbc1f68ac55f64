"""End to end: seed 000 prompt 5's session lifecycle and the PRD section 11 criteria.

Only criteria that need no persistence across processes are covered here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from f09_memory import MemoryEngine, RetrievalRequest
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.runtime import (
    MomentCategory,
    contextual_recall,
    heartbeat_store,
    pre_compaction_dump,
)

AGENT = "test-agent"


def turn(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "content": content}


def search(engine: MemoryEngine, query: str, now: int) -> list[str]:
    request = RetrievalRequest(agent_id=AGENT, purpose="reasoning", max_tokens=1000,
                               strategy="semantic", query=query)
    return [r.content for r in engine.retrieve(request, now=now).records]


def test_full_session_lifecycle(engine: MemoryEngine) -> None:
    # a. seed 5 memories with importance 0.3 to 0.9 and various categories
    for now, (content, importance, layer, category) in enumerate([
        ("Lunch chat about hiking trails", 0.3, "episodic", "session_snapshot"),
        ("Staging deploys run nightly", 0.5, "episodic", "fact"),
        ("The user prefers concise answers", 0.7, "semantic", "preference"),
        ("The deployment pipeline builds images with Kaniko", 0.8, "semantic", "fact"),
        ("Decision: the deployment pipeline targets OCI", 0.9, "semantic", "decision"),
    ], start=1):
        engine.ingest(AGENT, content, importance=importance, layer=layer,
                      metadata={"attributes": {"category": category}}, now=now)

    # b. startup recall within 500 tokens
    recall = contextual_recall(engine, AGENT, "deployment pipeline", max_tokens=500, now=10)
    assert recall.memories
    assert recall.topic_slug is not None
    assert recall.total_tokens <= 500

    # c. six turns: user and assistant, with decisions
    turns = [
        turn("user", "Let's look at the deployment pipeline."),
        turn("assistant", "Decision: use blue-green deploys."),
        turn("user", "I prefer small pull requests."),
        turn("assistant", "Noted, small pull requests it is."),
        turn("user", "I will write the runbook."),
        turn("assistant", "Great, thanks."),
    ]

    # d. heartbeat stores the key moments
    beat = heartbeat_store(engine, AGENT, turns, session_id="sess-1", min_new_turns=3, now=20)
    assert beat.stored > 0
    assert 5 == beat.last_index

    # e. again from the returned index: no new turns, skipped; again from the start: nothing new
    again = heartbeat_store(engine, AGENT, turns, session_id="sess-1", min_new_turns=3,
                            last_stored_index=beat.last_index, now=21)
    assert "insufficient_turns" == again.skipped
    repeat = heartbeat_store(engine, AGENT, turns, session_id="sess-1", min_new_turns=3, now=22)
    assert (0, beat.ids) == (repeat.stored, repeat.ids)

    # f. four more turns including a blocker
    all_turns = [
        *turns,
        turn("user", "Can we ship today?"),
        turn("assistant", "Blocked by missing IAM permissions on the registry."),
        turn("user", "OK, ping me when it is fixed."),
        turn("assistant", "Will do."),
    ]

    # g. pre-compaction dump
    dump = pre_compaction_dump(engine, AGENT, all_turns, session_id="sess-1", now=30)
    assert dump.takeaways >= 1
    blockers = [m for m in dump.moments if m.category is MomentCategory.BLOCKER]
    assert ["Blocked by missing IAM permissions on the registry."] == [m.text for m in blockers]
    assert "session_snapshot" == engine.get(dump.snapshot_id).metadata.attributes["category"]

    # h. the blocker is searchable
    found = search(engine, "blocker", now=40)
    assert "Blocked by missing IAM permissions on the registry." == found[0]


# --- PRD section 11 ------------------------------------------------------------------------


def test_mentioning_a_known_topic_term_surfaces_its_memories(engine: MemoryEngine) -> None:
    oci = engine.ingest(AGENT, "The OCI tenancy uses the compartment prod-eu",
                        importance=0.85, layer="semantic", now=1).id
    for i in range(30):
        engine.ingest(AGENT, f"Casual remark number {i} about the lunch menu", importance=0.85,
                      layer="semantic", now=2 + i)
    synonyms = {"oci": ["oracle", "tenancy"]}

    def recalled(seed_text: str) -> dict[str, tuple[str, ...]]:
        result = contextual_recall(engine, AGENT, seed_text, max_tokens=120,
                                   synonyms=synonyms, now=100)
        assert result.total_tokens <= 120
        return {c.id: c.channels for c in result.candidates if c.included}

    assert oci not in recalled("Good morning, what is on the lunch menu?")
    assert oci in recalled("OCI: what is the state of OCI?")
    # an alias of the topic: the importance channel's query is expanded to "oci oracle tenancy"
    assert "importance" in recalled("Oracle: please check the oracle quota")[oci]


@pytest.mark.parametrize("budget", [1, 5, 17, 40, 100, 333])
def test_startup_context_fits_max_tokens(engine: MemoryEngine, budget: int) -> None:
    for i in range(25):
        engine.ingest(AGENT, "Memory " + "about deployments " * (i % 7 + 1), now=i + 1,
                      importance=(i % 10) / 10)

    result = contextual_recall(engine, AGENT, "deployments", max_tokens=budget, now=100)

    assert result.total_tokens <= budget
    assert result.total_tokens == sum(m.tokens_estimate or 0 for m in result.memories)


def test_after_a_dump_what_did_we_decide_is_answerable(engine: MemoryEngine) -> None:
    turns = [
        turn("user", "Which database and queue?"),
        turn("assistant", "We decided to keep Postgres. Going with SQS for the queue."),
        turn("user", "Fine. I prefer managed services anyway."),
    ]
    for i in range(20):
        engine.ingest(AGENT, f"Unrelated chatter {i}", importance=0.2, now=1 + i)
    pre_compaction_dump(engine, AGENT, turns, session_id="s1", now=50)

    context = contextual_recall(engine, AGENT, "What did we decide?", max_tokens=60, now=60)
    decided = {m.content for m in context.memories}

    assert {"We decided to keep Postgres.", "Going with SQS for the queue."} <= decided
    assert "We decided to keep Postgres." == search(engine, "what did we decide?", now=60)[0]


def test_idle_heartbeat_writes_at_most_one_snapshot_per_idle_period(
    engine: MemoryEngine,
) -> None:
    turns = [turn("user", "Just thinking out loud."), turn("assistant", "Sure."),
             turn("user", "Nothing decided yet.")]

    results = [heartbeat_store(engine, AGENT, turns, session_id="s1", now=t)
               for t in (100, 200, 300)]

    assert [1, 0, 0] == [r.stored for r in results]
    assert 1 == engine.count(AGENT)


# --- privacy: redaction -------------------------------------------------------------------


def test_an_email_in_a_turn_never_appears_in_any_stored_record(engine: MemoryEngine) -> None:
    email = "jane.doe@example.com"
    turns = [
        turn("user", f"Mail {email} about it. I prefer email at {email} for updates."),
        turn("assistant", f"Decision: send the report to {email}."),
        turn("user", f"My backup is {email} too"),
    ]
    chatter = [turn("user", f"ping {email} " + "filler " * 120), turn("assistant", "ok"),
               turn("user", "ok")]

    heartbeat_store(engine, AGENT, turns, session_id="s1", now=1)
    heartbeat_store(engine, AGENT, chatter, session_id="s1", now=2)  # truncated snapshot
    pre_compaction_dump(engine, AGENT, [*turns, *chatter], session_id="s1", now=3)

    records = engine.records(AGENT)
    assert len(records) >= 4
    for record in records:
        dumped = json.dumps(record.model_dump(mode="json"))
        assert email not in dumped
        assert "jane.doe@" not in dumped


# --- negative paths ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda e: heartbeat_store(e, AGENT, [turn("user", "x")] * 3, min_new_turns=-1),
         ErrorCode.MEMORY_INPUT_INVALID),
        (lambda e: heartbeat_store(e, 42, [turn("user", "x")] * 3),  # type: ignore[arg-type]
         ErrorCode.MEMORY_INPUT_INVALID),
        (lambda e: pre_compaction_dump(e, AGENT, [turn("user", "x")], session_id=" "),
         ErrorCode.MEMORY_INPUT_INVALID),
        (lambda e: pre_compaction_dump(e, AGENT, "turns", session_id="s"),  # type: ignore[arg-type]
         ErrorCode.MEMORY_INPUT_INVALID),
        (lambda e: contextual_recall(e, AGENT, "x", max_tokens=0),
         ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED),
        (lambda e: contextual_recall(e, AGENT, "x", max_tokens=10, recent_count=-2),
         ErrorCode.MEMORY_INPUT_INVALID),
    ],
)
def test_bad_arguments_raise_the_right_code_and_change_nothing(
    engine: MemoryEngine, call: Any, code: ErrorCode
) -> None:
    engine.ingest(AGENT, "Existing memory", now=1)
    before = engine.state_hash()

    with pytest.raises(MemoryEngineError) as info:
        call(engine)

    assert code == info.value.code
    assert before == engine.state_hash()
