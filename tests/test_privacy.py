"""Nothing private leaves unredacted: a marker secret through every input channel, grepped
in every output (records, bundles, events, DEBUG logs, exception messages, LLM prompts,
tool results, embedder inputs, snapshot bytes, durable database bytes)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest
from f09_memory.errors import MemoryEngineError
from f09_memory.ingestion import Claim
from f09_memory.persistence import snapshot
from f09_memory.redaction.checks import luhn_valid
from f09_memory.testing import FakeEmbedder, ScriptedLLM, capture_events
from f09_memory.tools import ToolContext, execute_tool

KEY = "privacy-test-key-R7t2Qw9Zx4Lp"
MIN = 60_000


def card(i: int) -> str:
    """A Luhn-valid 16-digit card number, spaced in groups of four."""
    body = f"453914{i:09d}"
    check = next(d for d in "0123456789" if luhn_valid(body + d))
    digits = body + check
    return " ".join(digits[k:k + 4] for k in range(0, 16, 4))


class Marker:
    """The distinct secrets of one input channel: an e-mail, a card number, an API key."""

    def __init__(self, i: int, channel: str) -> None:
        self.channel = channel
        self.email = f"{channel.replace('_', '.')}.k{i}@leak.example.org"
        self.card = card(i)
        self.api_key = f"sk-proj-Leak{i:03d}Zq8vN3xL0pW7rT5yU2"

    @property
    def text(self) -> str:
        return f"{self.email} {self.card} {self.api_key}"

    def needles(self) -> list[str]:
        return [self.email, self.card, self.card.replace(" ", ""), self.api_key]


CHANNELS = [
    "content", "tags", "attr_key", "attr_value", "meta_tags", "source_event", "meta_source",
    "other_agent", "pattern_id", "source_ref", "many_content", "many_tags", "batch_content",
    "batch_slow", "claim_subject", "claim_value", "claim_session", "typed_answer",
    "tool_write", "tool_keyword", "tool_search", "query", "query_many", "filter_tag",
    "filter_attr_key", "filter_attr_value", "update_content", "update_tags", "llm_summary",
    "fail_reason", "agent_id", "bad_arguments",
]
MARKERS = {name: Marker(i, name) for i, name in enumerate(CHANNELS)}


class RecordingEmbedder(FakeEmbedder):
    """Keeps every text it was asked to embed (what a remote embedder would receive)."""

    def __init__(self) -> None:
        super().__init__(dim=16)
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.seen.extend(texts)
        return super().embed(texts)


def _texts_of(value: Any) -> Iterator[str]:
    """Every string inside a snapshot's manifest and arrays (nested arrays decoded)."""
    if isinstance(value, dict):
        if "__ndarray__" in value:
            yield from _texts_of(snapshot.decode(value))
            return
        for k, v in value.items():
            yield str(k)
            yield from _texts_of(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _texts_of(v)
    elif isinstance(value, np.ndarray):
        if value.dtype.kind in "USO":
            yield "\n".join(str(v) for v in value.ravel())
        elif value.dtype.kind == "u" and value.dtype.itemsize == 1:
            yield value.tobytes().decode("utf-8", "replace")
    else:
        yield str(value)


def snapshot_text(path: Path) -> str:
    """What a snapshot file holds, as text: its raw bytes in the usual encodings and every
    string the snapshot reader finds in it."""
    raw = path.read_bytes()
    snap = snapshot.read_snapshot(path)
    parts = [raw.decode(enc, "replace") for enc in ("utf-8", "utf-16-le", "utf-32-le")]
    parts += list(_texts_of(snap.manifest)) + list(_texts_of(dict(snap.arrays)))
    return "\n".join(parts)


def errors_of(calls: list[Callable[[], object]]) -> str:
    """Each call must raise a MemoryEngineError: its message, details and causes."""
    out = []
    for call in calls:
        with pytest.raises(MemoryEngineError) as info:
            call()
        exc: BaseException | None = info.value
        while exc is not None:
            out += [str(exc), repr(exc), str(getattr(exc, "details", ""))]
            exc = exc.__cause__ or exc.__context__
    return "\n".join(out)


def feed(engine: MemoryEngine, llm: ScriptedLLM) -> dict[str, str]:
    """Send each channel's marker through its channel; return every output as text."""
    m = MARKERS
    out: dict[str, str] = {}
    engine.ingest("npc", f"Mara wrote {m['content'].text}", tags=[m["tags"].text],
                  source_event=m["source_event"].text, now=0)
    engine.ingest("npc", "a note with metadata", metadata={
        "attributes": {m["attr_key"].text: 1, "v": m["attr_value"].text},
        "tags": [m["meta_tags"].text], "sourceEvent": m["meta_source"].text,
        "social": {"otherAgentId": m["other_agent"].text, "sentiment": 0.2},
        "procedural": {"patternId": m["pattern_id"].text, "successRate": 0.5},
        "sourceRefIds": [m["source_ref"].text]}, now=1)
    engine.ingest_many("npc", [{"content": m["many_content"].text,
                                "tags": [m["many_tags"].text]}], now=2)
    engine.ingest_batch([{"agent_id": "npc", "content": m["batch_content"].text},
                         {"agent_id": "smith", "content": m["batch_slow"].text,
                          "metadata": {"flagged": True}}], now=3)
    engine.ingest_claim("npc", "a claim", Claim(m["claim_subject"].text, "prefers",
                                               m["claim_value"].text), now=4)
    engine.ingest_claim("npc", "a session claim", Claim(
        "user", "prefers", "tea", scope="session", session_id=m["claim_session"].text), now=4)
    records, _ = engine.ingest_typed(
        "npc", "```typed_memory\n---\nname: contact\ndescription: how to reach Bob\n"
               f"type: user\n---\nWrite to {m['typed_answer'].text}\n```\n", now=5)
    updated = engine.ingest("npc", "to be updated", now=5)
    engine.update(updated.id, content=f"now {m['update_content'].text}",
                  tags=[m["update_tags"].text])
    ctx = ToolContext("npc", session_id="s1", now=6)
    tools = [
        execute_tool(engine, "memory_write", {"content": f"remember {m['tool_write'].text}",
                                              "keywords": [m["tool_keyword"].text]}, ctx),
        execute_tool(engine, "memory_search", {"query": m["tool_search"].text}, ctx),
        execute_tool(engine, "memory_search", {"query": "remember"}, ctx),
        execute_tool(engine, "memory_search", {"query": 5, m["bad_arguments"].email: 1}, ctx),
        execute_tool(engine, "memory_search", {"query": "x", "limit": m["bad_arguments"].text},
                     ctx),
        execute_tool(engine, m["bad_arguments"].email, {}, ctx),
        execute_tool(engine, "memory_write", '{"content": "' + m["bad_arguments"].card, ctx),
    ]
    request = RetrievalRequest(
        agent_id="npc", purpose="dialog", max_tokens=800, strategy="semantic",
        query=m["query"].text, tags_any=[m["filter_tag"].text],
        attributes={m["filter_attr_key"].text: m["filter_attr_value"].text})
    bundles = [engine.retrieve(request, now=7),
               engine.retrieve(RetrievalRequest(agent_id="npc", purpose="dialog",
                                                max_tokens=800), now=7),
               *engine.retrieve_many([request.model_copy(update={"query": m["query_many"].text}),
                                      RetrievalRequest(agent_id="smith", purpose="reasoning",
                                                       max_tokens=800)], now=7)]
    # a batch of old episodic records becomes a summary through the LLM
    engine.ingest_many("bard", [{"content": f"Sang at the inn, night {i}.", "importance": 0.2,
                                 "tags": ["inn"]} for i in range(12)], now=8)
    engine.tick(30 * MIN)
    engine.summarize_pending(llm)
    engine.ingest_many("bard", [{"content": f"Played the lute, night {i}.", "importance": 0.2,
                                 "tags": ["lute"]} for i in range(12)], now=40 * MIN)
    engine.tick(70 * MIN)
    tasks = engine.summarization.poll()
    prompts = [t.prompt or "" for t in tasks]
    for t in tasks:
        engine.summarization.fail(t.id, f"provider said: {m['fail_reason'].text}")
    extraction = engine.typed_extraction_prompt("npc", [r.id for r in records],
                                                today_date="2024-05-01")
    errors = errors_of([
        lambda: engine.ingest(m["agent_id"].email, "hello"),
        lambda: engine.retrieve(RetrievalRequest(agent_id=m["agent_id"].api_key,
                                                 purpose="dialog", max_tokens=10)),
        lambda: engine.ingest_batch([{"agent_id": m["agent_id"].card, "content": "x"}]),
        lambda: RetrievalRequest(agent_id="npc", purpose=m["bad_arguments"].text,
                                 max_tokens=5),
        lambda: Claim("user", "prefers", "tea", scope=m["bad_arguments"].text),  # type: ignore[arg-type]
        lambda: MemoryConfig(redaction_key=m["bad_arguments"].email[:12]),
        lambda: MemoryConfig(redact_patterns=("EMAIL", f"({m['bad_arguments'].email}")),
        lambda: MemoryConfig(redact_patterns=("EMAIL", f"({m['bad_arguments'].email})*")),
    ])
    out["records"] = json.dumps([r.to_json_dict() for a in engine.agents()
                                 for r in engine.records(a)], ensure_ascii=False)
    out["bundles"] = json.dumps([b.to_json_dict() for b in bundles], ensure_ascii=False)
    out["tools"] = json.dumps(tools, ensure_ascii=False)
    out["prompts"] = json.dumps([llm.calls, prompts, extraction.system, extraction.user],
                                ensure_ascii=False, default=str)
    out["errors"] = errors
    return out


def _lifecycle_config() -> MemoryConfig:
    return MemoryConfig(redaction_key=KEY, episodic_window=10 * MIN,
                        summarization_min_interval_ms=0, summarization_batch_size=10,
                        summarization_keep_recent=2, summarization_max_importance=0.9)


def test_no_marker_reaches_any_output(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    embedder = RecordingEmbedder()
    engine = MemoryEngine(_lifecycle_config(), embedder=embedder)
    llm = ScriptedLLM([f"The bard sang at the inn; write to {MARKERS['llm_summary'].text}."])
    with caplog.at_level(logging.DEBUG), capture_events(engine.bus) as log:
        outputs = feed(engine, llm)
    outputs["events"] = json.dumps([e.to_dict() for e in log.events], ensure_ascii=False,
                                   default=str)
    outputs["logs"] = caplog.text
    outputs["embedder"] = "\n".join(embedder.seen)
    outputs["snapshot"] = snapshot_text(engine.save(tmp_path / "snap.f09"))
    outputs["state"] = json.dumps(engine.config.to_json_dict())
    assert len(llm.calls) >= 1 and len(embedder.seen) > 10
    assert log.of("memory:summarization:failed") and outputs["errors"]
    placeholder = engine._ingestor.redactor.placeholder
    for name in ("llm_summary", "typed_answer", "tool_write", "update_content",
                 "claim_subject", "batch_slow"):  # these channels were stored
        assert placeholder(MARKERS[name].email) in outputs["records"], name
    for marker in MARKERS.values():
        for needle in marker.needles():
            for where, text in outputs.items():
                assert needle not in text, f"{marker.channel} leaked {needle!r} into {where}"
    for where, text in outputs.items():
        assert KEY not in text, f"the redaction key leaked into {where}"


def test_every_channel_reaches_the_store_as_a_placeholder() -> None:
    """The test above is not vacuous: each stored channel holds its marker's placeholder."""
    engine = MemoryEngine(MemoryConfig(redaction_key=KEY), embedder=None)
    m = MARKERS
    rec = engine.ingest("npc", m["content"].text, tags=[m["tags"].text], metadata={
        "attributes": {m["attr_key"].email: m["attr_value"].email},
        "social": {"otherAgentId": m["other_agent"].email},
        "procedural": {"patternId": m["pattern_id"].email},
        "sourceRefIds": [m["source_ref"].email]}, now=0)
    placeholder = engine._ingestor.redactor.placeholder
    stored = json.dumps(rec.to_json_dict())
    for name in ("attr_key", "attr_value", "other_agent", "pattern_id", "source_ref"):
        assert placeholder(m[name].email) in stored, name
    for name in ("content", "tags"):
        for value in (m[name].email, m[name].card, m[name].api_key):
            assert placeholder(value) in stored, (name, value)


def test_redaction_mode_off_stores_raw_text_but_prompts_stay_redacted() -> None:
    engine = MemoryEngine(MemoryConfig(redaction_mode=False, redaction_key=KEY),
                          embedder=None)
    secret = MARKERS["content"]
    rec = engine.ingest("npc", f"mail {secret.text}", now=0)
    assert secret.email in rec.content and not rec.redacted
    prompt = engine.typed_extraction_prompt("npc", [rec.id], today_date="2024-05-01")
    assert all(n not in prompt.user for n in secret.needles())


def test_custom_pattern_from_config_is_applied() -> None:
    engine = MemoryEngine(MemoryConfig(redact_patterns=("EMAIL", r"guild-pass-\d+")))
    rec = engine.ingest("npc", "the word is guild-pass-4471", now=0)
    assert "guild-pass-4471" not in rec.content


@pytest.mark.parametrize("many", [False, True])
def test_query_texts_are_redacted_before_they_reach_the_embedder(many: bool) -> None:
    embedder = RecordingEmbedder()
    engine = MemoryEngine(MemoryConfig(redaction_key=KEY), embedder=embedder)
    secret = MARKERS["query"]
    rec = engine.ingest("npc", f"Mara wrote from {secret.email}", now=0)
    request = RetrievalRequest(agent_id="npc", purpose="dialog", max_tokens=500,
                               strategy="semantic", query=f"who is {secret.text}?")
    bundle = (engine.retrieve_many([request], now=1)[0] if many
              else engine.retrieve(request, now=1))
    assert all(n not in t for n in secret.needles() for t in embedder.seen)
    assert 2 == len(embedder.seen) and "<REDACT:sha256-" in embedder.seen[1]
    assert [rec.id] == [r.id for r in bundle.records]


def test_the_memory_search_tool_query_is_redacted_before_the_embedder() -> None:
    embedder = RecordingEmbedder()
    engine = MemoryEngine(MemoryConfig(redaction_key=KEY), embedder=embedder)
    secret = MARKERS["tool_search"]
    execute_tool(engine, "memory_write", {"content": f"Bob is {secret.email}"})
    result = execute_tool(engine, "memory_search", {"query": f"where is {secret.email}"})
    assert result["ok"] and 1 == result["total"]
    assert len(embedder.seen) >= 2
    assert all(n not in t for n in secret.needles() for t in embedder.seen)


def test_query_texts_reach_the_embedder_as_given_when_redaction_is_off() -> None:
    embedder = RecordingEmbedder()
    engine = MemoryEngine(MemoryConfig(redaction_mode=False), embedder=embedder)
    engine.ingest("npc", "a letter", now=0)
    engine.retrieve(RetrievalRequest(agent_id="npc", purpose="dialog", max_tokens=500,
                                     query=f"from {MARKERS['query'].email}"), now=1)
    assert f"from {MARKERS['query'].email}" == embedder.seen[-1]


def _durable_bytes(db: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace")
                     for p in sorted(db.parent.glob(db.name + "*")))


def test_no_marker_reaches_the_durable_database(tmp_path: Path) -> None:
    """Every channel again on a durable engine: the journal holds redacted effects only."""
    db = tmp_path / "memory.db"
    engine = MemoryEngine.open(db, _lifecycle_config(), embedder=RecordingEmbedder())
    feed(engine, ScriptedLLM([f"The bard sang; write to {MARKERS['llm_summary'].text}."]))
    while_open = _durable_bytes(db)
    placeholder = engine._ingestor.redactor.placeholder(MARKERS["tool_write"].email)
    engine.close()
    assert placeholder in while_open  # the journal was read: it holds the redacted write
    for text in (while_open, _durable_bytes(db)):
        assert KEY not in text
        for marker in MARKERS.values():
            for needle in marker.needles():
                assert needle not in text, f"{marker.channel} leaked into the database"
