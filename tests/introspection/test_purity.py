"""Introspection is a pure read: no state change, no event, no effect on later behaviour;
it belongs to the owner thread; redacted output never holds a raw marker secret."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from f09_memory import EventLog, MemoryConfig, MemoryEngine, bundle_hash
from f09_memory.errors import InputInvalidError
from f09_memory.introspection import Introspector
from f09_memory.redaction.checks import luhn_valid

REQUEST = {"agentId": "npc", "purpose": "dialog", "maxTokens": 120, "query": "gold debt",
           "tagsAny": ["debt", "town"], "position": [1.0, 2.0]}


def card() -> str:
    """A Luhn-valid 16-digit card number in groups of four."""
    body = "453914000000077"
    digits = body + next(d for d in "0123456789" if luhn_valid(body + d))
    return " ".join(digits[k:k + 4] for k in range(0, 16, 4))


def calls(engine: MemoryEngine, version: int) -> list[Callable[[], object]]:
    intro = engine.introspection
    first = engine.records("npc")[0].id
    return [
        lambda: intro.snapshot(), lambda: intro.snapshot("npc", layer="episodic", limit=2),
        lambda: intro.diff(version), lambda: intro.diff(version, "npc", redact=False),
        lambda: intro.explain(REQUEST).candidates,
        lambda: intro.explain({**REQUEST, "query": "a brand new query"}, now=5_000),
        lambda: intro.explain({"agentId": "stranger", "purpose": "dialog", "limit": 3}),
        lambda: intro.stats(), lambda: intro.record_view(first),
        lambda: intro.version,
    ]


def load(engine: MemoryEngine, now: int) -> None:
    engine.ingest_many("npc", [{"content": f"the smith owes {i} gold", "tags": ["debt"],
                                "metadata": {"spatial": {"x": i, "y": 0.0}}}
                               for i in range(6)], now=now)
    engine.ingest("bo", "a storm over the river", now=now)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_method_leaves_the_hash_the_events_and_the_future_unchanged(mode: str) -> None:
    config = MemoryConfig(embedding_dim=16, embedding_mode=mode, embedding_latency_ms=50)
    looked, plain = MemoryEngine(config, seed=4), MemoryEngine(config, seed=4)
    for engine in (looked, plain):
        load(engine, 0)
    version = looked.introspection.snapshot().version
    for step in range(3):
        now = 100 * (step + 1)
        for call in calls(looked, version):
            before = looked.state_hash()
            log = EventLog(looked.bus, "*")
            call()
            log.close()
            assert [] == log.names()
            assert before == looked.state_hash()
        for engine in (looked, plain):  # the same future: ticks apply the same work
            engine.tick(now)
            load(engine, now)
            assert engine.retrieve(REQUEST, now=now).records
        assert looked.state_hash() == plain.state_hash()
        assert bundle_hash(looked.retrieve(REQUEST, now=now)) == bundle_hash(
            plain.retrieve(REQUEST, now=now))
    assert looked.redactor_counts == plain.redactor_counts


def test_the_introspector_belongs_to_the_owner_thread() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    load(engine, 0)
    intro = engine.introspection
    errors: list[BaseException] = []
    foreign_calls = [lambda: engine.introspection, *calls(engine, 1)]

    def foreign() -> None:
        for call in foreign_calls:
            try:
                call()
            except InputInvalidError as exc:
                errors.append(exc)

    worker = threading.Thread(target=foreign)
    worker.start()
    worker.join()
    assert len(errors) == 11 and {e.details["field"] for e in errors} == {"thread"}
    assert isinstance(intro, Introspector) and intro.version == 0
    done: list[int] = []
    worker = threading.Thread(target=lambda: (engine.bind_thread(),
                                              done.append(intro.snapshot().version)))
    worker.start()
    worker.join()
    assert done == [1]


def test_redacted_output_never_holds_the_raw_secret() -> None:
    mail, number = "mara.k7@leak.example.org", card()
    engine = MemoryEngine(MemoryConfig(redaction_mode=False, embedding_dim=16), seed=0)
    engine.ingest("npc", "nothing private yet", tags=["debt"], now=0)
    intro = engine.introspection
    version = intro.snapshot("npc").version
    secret = engine.ingest("npc", f"write to {mail}, card {number}", tags=["debt", mail],
                           source_event=f"letter from {mail}", importance=0.9, now=10)
    first = engine.records("npc")[0].id
    engine.update(first, content=f"pay {number} to {mail}")
    needles = [mail, number, number.replace(" ", "")]
    request = {"agentId": "npc", "purpose": "dialog", "maxTokens": 400, "tagsAny": ["debt"]}

    def dumps(redact: bool) -> list[str]:
        return [m.model_dump_json(by_alias=True) for m in (
            intro.snapshot("npc", redact=redact), intro.snapshot(redact=redact),
            intro.diff(version, "npc", redact=redact),
            intro.explain(request, now=20, redact=redact),
            intro.record_view(secret.id, redact=redact))]

    for text in dumps(True):
        assert not any(n in text for n in needles), text
        assert "<REDACT:sha256-" in text
    raw = dumps(False)
    for text in raw:
        assert mail in text
    diff = json.loads(raw[2])
    assert mail in json.dumps(diff["changed"]) and mail in json.dumps(diff["added"])
    assert intro.explain(request, now=20).bundle_ids == [
        r.id for r in engine.retrieve(request, now=20).records]


def test_an_explanation_keeps_the_state_of_its_call_and_builds_on_any_thread() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    load(engine, 0)
    x, y = engine.introspection.explain(REQUEST), engine.introspection.explain(REQUEST)
    engine.forget(agent_id="npc")  # later changes do not reach the built candidates
    assert len(x.candidates) == 6 and x.candidates[0].content.startswith("the smith owes")
    built: list[str] = []  # a server serializes off the owner thread: no engine access
    worker = threading.Thread(target=lambda: built.append(y.model_dump_json(by_alias=True)))
    worker.start()
    worker.join()
    assert built == [x.model_dump_json(by_alias=True)]


def test_model_dumps_are_json(request: Any) -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    load(engine, 0)
    intro = engine.introspection
    for model in (intro.snapshot(), intro.stats(), intro.explain(REQUEST)):
        data = model.model_dump(by_alias=True, mode="json")
        assert json.loads(json.dumps(data)) == data
