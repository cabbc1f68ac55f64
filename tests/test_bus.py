from __future__ import annotations

import logging

import pytest

from f09_memory import EVENT_NAMES, EngineBus, EventLog, MemoryConfig, MemoryEngine
from f09_memory.bus import DecayApplied, RecordCreated, RecordExpired
from f09_memory.errors import ErrorCode, MemoryEngineError


def created(i: int = 0) -> RecordCreated:
    return RecordCreated(id=f"a:{i:010d}", layer="episodic", agent_id="a", importance=0.5)


def test_spec_events_are_all_declared() -> None:
    spec = {
        "memory:record:created", "memory:record:expired", "memory:record:redacted",
        "memory:summarization:queued", "memory:summarization:completed",
        "memory:summarization:failed", "memory:retrieval", "memory:compaction",
        "memory:decay:applied",
    }
    assert spec <= set(EVENT_NAMES)


def test_payload_to_dict_uses_spec_camel_case() -> None:
    assert {"id": "a:0000000000", "layer": "episodic", "agentId": "a",
            "importance": 0.5} == created().to_dict()


def test_exact_prefix_and_star_patterns_dispatch_in_subscription_order() -> None:
    bus = EngineBus()
    seen: list[str] = []
    bus.subscribe("memory:record:*", lambda e: seen.append("prefix:" + e.name))
    bus.subscribe("*", lambda e: seen.append("star:" + e.name))
    bus.subscribe("memory:record:created", lambda e: seen.append("exact:" + e.name))
    bus.emit(created())
    bus.emit(DecayApplied(agent_id="a", affected=1))
    assert [
        "prefix:memory:record:created", "star:memory:record:created",
        "exact:memory:record:created", "star:memory:decay:applied",
    ] == seen


def test_unsubscribe_stops_delivery_and_is_idempotent() -> None:
    bus = EngineBus()
    log = EventLog(bus, "memory:*")
    unsubscribe = bus.subscribe("memory:record:created", lambda e: None)
    assert bus.wants("memory:record:created")
    unsubscribe()
    unsubscribe()
    log.close()
    assert not bus.wants("memory:record:created")
    bus.emit(created())
    assert [] == list(log.events)


@pytest.mark.parametrize("pattern", ["memory:recrd:created", "memory:nothing:*", "", "record"])
def test_unknown_pattern_raises_input_invalid(pattern: str) -> None:
    with pytest.raises(MemoryEngineError) as info:
        EngineBus().subscribe(pattern, lambda e: None)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code


def test_non_callable_handler_raises() -> None:
    with pytest.raises(MemoryEngineError):
        EngineBus().subscribe("*", "not callable")  # type: ignore[arg-type]


def test_isolated_handler_error_is_logged_and_later_handlers_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EngineBus()
    seen: list[str] = []

    def boom(_: object) -> None:
        raise RuntimeError("secret@example.com")

    bus.subscribe("*", boom)
    bus.subscribe("*", lambda e: seen.append(e.name))
    with caplog.at_level(logging.ERROR, logger="f09_memory"):
        bus.emit(created())
    assert ["memory:record:created"] == seen
    assert [("memory:record:created", "RuntimeError")] == bus.handler_errors_seen
    assert "[MEM][ERROR]" in caplog.text
    assert "secret@example.com" not in caplog.text


def test_engine_state_is_complete_when_a_handler_raises() -> None:
    engine = MemoryEngine(MemoryConfig())

    def boom(_: object) -> None:
        raise RuntimeError("handler bug")

    engine.bus.subscribe("memory:record:created", boom)
    rec = engine.ingest("a", "hello there", now=1)
    assert rec == engine.get(rec.id)
    engine._check()


def test_propagate_mode_reraises_after_the_state_change_and_all_handlers() -> None:
    engine = MemoryEngine(MemoryConfig(bus_handler_errors="propagate"))
    seen: list[str] = []

    def boom(_: object) -> None:
        raise RuntimeError("handler bug")

    engine.bus.subscribe("memory:record:created", boom)
    engine.bus.subscribe("memory:record:created", lambda e: seen.append(e.id))
    with pytest.raises(RuntimeError):
        engine.ingest("a", "hello there", now=1)
    assert 1 == engine.count("a")
    assert ["a:0000000000"] == seen
    engine._check()


def test_event_log_filters_and_stops_recording() -> None:
    bus = EngineBus()
    with EventLog(bus, "memory:record:*").recording() as log:
        bus.emit(created())
        bus.emit(RecordExpired(id="a:0000000000", layer="episodic", reason="ttl"))
        bus.emit(DecayApplied(agent_id="a", affected=1))
    bus.emit(created(1))
    assert ["memory:record:created", "memory:record:expired"] == log.names()
    assert 1 == len(log.of("memory:record:expired"))


def test_tick_event_reports_the_tick_after_its_work() -> None:
    engine = MemoryEngine(MemoryConfig(retention_policy={"semantic_max": 5,
                                                         "protected_min": 1},
                                       hard_cap_slack=1.0), embedder=None)
    engine.ingest_many("a", [{"content": f"fact {i}", "layer": "semantic"} for i in range(9)],
                       now=0)
    with EventLog(engine.bus).recording() as log:
        report = engine.tick(10)
    assert "memory:tick" == log.names()[-1]  # after the tick's own events
    (tick,) = log.of("memory:tick")
    payload = tick.to_dict()
    assert payload.pop("tickMs") > 0  # wall time: metrics only, never hashed
    assert {"now": 10, "usedUnits": report.used_units, "records": engine.count()} == payload
    assert 4 == report.pruned and 5 == payload["records"]


def test_tick_and_retrieval_payloads_are_not_built_when_nobody_listens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from f09_memory import RetrievalRequest
    from f09_memory.maintenance import tick as tick_module
    from f09_memory.retrieval import orchestrator

    def refuse(**_: object) -> None:
        raise AssertionError("payload built with no subscriber")

    monkeypatch.setattr(tick_module, "TickCompleted", type(
        "Refused", (), {"name": "memory:tick", "__new__": lambda cls, **kw: refuse(**kw)}))
    monkeypatch.setattr(orchestrator, "RetrievalPerformed", type(
        "Refused", (), {"name": "memory:retrieval", "__new__": lambda cls, **kw: refuse(**kw)}))
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    engine.ingest("a", "hello there", now=1)
    engine.tick(2)
    engine.retrieve(RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=50), now=2)
    engine.retrieve_many([RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=50)],
                         now=2)
    with EventLog(engine.bus, "memory:tick").recording(), pytest.raises(AssertionError):
        engine.tick(3)  # the check above is not vacuous
