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
