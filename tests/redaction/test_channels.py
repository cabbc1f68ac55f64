"""Every input channel is redacted at ingest; ids holding private data are refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.ingestion import Claim
from f09_memory.redaction import Redactor
from f09_memory.tools import ToolContext, execute_tool

KEY = "channels-key-7Hq2Lx9Vb4Nm"
EMAIL = "bob.bryce@mill.example.com"
CARD = "4539 1488 0343 6467"
API_KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1w"


def engine(**kw: Any) -> MemoryEngine:
    return MemoryEngine(MemoryConfig(redaction_key=KEY, **kw), embedder=None)


def ph(value: str) -> str:
    return Redactor(["EMAIL"], key=KEY).placeholder(value)


def test_metadata_keys_ids_and_source_refs_are_redacted() -> None:
    e = engine()
    rec = e.ingest("npc", "a note", metadata={
        "attributes": {EMAIL: "x", "card": CARD, "clean": 1},
        "social": {"otherAgentId": EMAIL, "sentiment": 0.5},
        "procedural": {"patternId": API_KEY, "successRate": 0.5},
        "sourceRefIds": ["npc:0000000001", EMAIL],
    }, now=0)
    meta = rec.metadata
    assert {ph(EMAIL): "x", "card": ph(CARD), "clean": 1} == meta.attributes
    assert meta.social is not None and ph(EMAIL) == meta.social.other_agent_id
    assert 0.5 == meta.social.sentiment
    assert meta.procedural is not None and ph(API_KEY) == meta.procedural.pattern_id
    assert ("npc:0000000001", ph(EMAIL)) == meta.source_ref_ids
    assert rec.redacted


def test_clean_metadata_is_kept_as_given() -> None:
    rec = engine().ingest("npc", "a note", metadata={
        "attributes": {"mood": "calm"}, "social": {"otherAgentId": "npc-2"},
        "procedural": {"patternId": "open-door"}, "sourceRefIds": ["npc:0000000001"]}, now=0)
    assert {"mood": "calm"} == rec.metadata.attributes and not rec.redacted
    assert rec.metadata.social is not None and "npc-2" == rec.metadata.social.other_agent_id
    assert rec.metadata.procedural is not None
    assert "open-door" == rec.metadata.procedural.pattern_id


def test_redaction_off_keeps_metadata_raw() -> None:
    rec = engine(redaction_mode=False).ingest("npc", "a note", metadata={
        "attributes": {EMAIL: EMAIL}, "social": {"otherAgentId": EMAIL}}, now=0)
    assert {EMAIL: EMAIL} == rec.metadata.attributes
    assert rec.metadata.social is not None and EMAIL == rec.metadata.social.other_agent_id


def test_attribute_filters_match_redacted_keys_and_values() -> None:
    e = engine()
    rec = e.ingest("npc", "a note", metadata={"attributes": {EMAIL: CARD}}, now=0)
    e.ingest("npc", "another note", now=0)
    request = RetrievalRequest(agent_id="npc", purpose="dialog", max_tokens=500,
                               attributes={EMAIL: CARD})
    assert [rec.id] == [r.id for r in e.retrieve(request).records]
    assert [rec.id] == [r.id for r in e.retrieve_many([request])[0].records]


def test_claims_about_a_private_subject_reinforce_and_supersede() -> None:
    e = engine()
    first = e.ingest_claim("npc", "Bob likes tea.", Claim(EMAIL, "prefers", "tea"), now=0)
    again = e.ingest_claim("npc", "Bob likes tea!", Claim(EMAIL.upper(), "prefers", " Tea"),
                           now=1)
    other = e.ingest_claim("npc", "Bob likes ale.", Claim(EMAIL, "prefers", "ale"), now=2)
    assert ("created", "reinforced", "superseded") == (first.action, again.action, other.action)
    assert first.record.id == again.previous_id == other.previous_id
    attrs = other.record.metadata.attributes
    assert EMAIL not in str(attrs) and ph(EMAIL) in str(attrs["claimKey"])
    assert ["Bob likes ale."] == [r.content for r in e.retrieve(RetrievalRequest(
        agent_id="npc", purpose="dialog", max_tokens=500)).records]


def test_claims_with_a_private_value_reinforce() -> None:
    e = engine()
    first = e.ingest_claim("npc", "Reach Bob by mail.", Claim("bob", "contact", EMAIL), now=0)
    again = e.ingest_claim("npc", "Bob's mail again.", Claim("bob", "contact", EMAIL), now=1)
    assert ("created", "reinforced") == (first.action, again.action)
    assert ph(EMAIL) == first.record.metadata.attributes["claimValue"]


def test_session_scoped_claims_with_a_private_session_id_supersede() -> None:
    e = engine()
    a = e.ingest_claim("npc", "tea now", Claim("user", "prefers", "tea", scope="session",
                                               session_id=EMAIL), now=0)
    b = e.ingest_claim("npc", "ale now", Claim("user", "prefers", "ale", scope="session",
                                               session_id=EMAIL), now=1)
    assert ("created", "superseded", a.record.id) == (a.action, b.action, b.previous_id)


TYPED = "```typed_memory\n---\nname: n\ndescription: d\ntype: user\n---\nbody\n```\n"
ENTRY_POINTS: list[tuple[str, Callable[[MemoryEngine, str], object]]] = [
    ("ingest", lambda e, a: e.ingest(a, "hello", now=0)),
    ("ingest_many", lambda e, a: e.ingest_many(a, ["hello"], now=0)),
    ("ingest_batch", lambda e, a: e.ingest_batch([{"agent_id": a, "content": "hi"}], now=0)),
    ("ingest_batch slow path", lambda e, a: e.ingest_batch(
        [{"agent_id": a, "content": "hi", "metadata": {"flagged": True}}], now=0)),
    ("ingest with metadata", lambda e, a: e.ingest(a, "hello", metadata={"flagged": True},
                                                  now=0)),
    ("ingest_claim", lambda e, a: e.ingest_claim(a, "x", Claim("user", "prefers", "tea"),
                                                 now=0)),
    ("ingest_typed", lambda e, a: e.ingest_typed(a, TYPED, now=0)),
    ("retrieve", lambda e, a: e.retrieve(RetrievalRequest(agent_id=a, purpose="dialog",
                                                          max_tokens=100))),
    ("retrieve_many", lambda e, a: e.retrieve_many([RetrievalRequest(
        agent_id=a, purpose="dialog", max_tokens=100)])),
]


@pytest.mark.parametrize(("name", "call"), ENTRY_POINTS, ids=[n for n, _ in ENTRY_POINTS])
@pytest.mark.parametrize("agent_id", [EMAIL, f"player-{CARD.replace(' ', '')}", API_KEY])
def test_an_agent_id_holding_private_data_is_refused_everywhere(
        name: str, call: Callable[[MemoryEngine, str], object], agent_id: str) -> None:
    e = engine()
    e.ingest("npc", "someone else's memory", now=0)
    before = e.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        call(e, agent_id)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert "agent_id" == info.value.details["field"]
    assert agent_id not in str(info.value) and agent_id not in str(info.value.details)
    assert before == e.state_hash() and ["npc"] == e.agents()


@pytest.mark.parametrize(("name", "call"), ENTRY_POINTS, ids=[n for n, _ in ENTRY_POINTS])
def test_any_agent_id_is_accepted_with_redaction_off(
        name: str, call: Callable[[MemoryEngine, str], object]) -> None:
    call(engine(redaction_mode=False), EMAIL)


def test_the_memory_write_tool_refuses_a_private_agent_id_without_echoing_it() -> None:
    e = engine()
    payload = execute_tool(e, "memory_write", {"content": "likes tea"}, ToolContext(EMAIL))
    assert not payload["ok"] and "MEMORY_INPUT_INVALID" == payload["error"]["code"]
    assert EMAIL not in str(payload) and [] == e.agents()


def test_ordinary_agent_ids_pass() -> None:
    e = engine()
    for agent in ["npc-1", "player:42", "guard_7", "villager 12", "2024-01-15-smith"]:
        e.ingest(agent, "hello", now=0)
    assert 5 == len(e.agents())
