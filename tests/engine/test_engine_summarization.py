"""Summarization through the engine: two phases, fallbacks, replacement, errors, privacy."""

from __future__ import annotations

from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine, TaskStatus
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.testing import FailingLLM, ScriptedLLM, capture_events

MIN = 60_000
EMAIL = "mara.smith@forge.example.com"


def lifecycle_engine(**kw: Any) -> MemoryEngine:
    cfg: dict[str, Any] = dict(episodic_window=10 * MIN, summarization_min_interval_ms=0,
                               summarization_batch_size=10, summarization_keep_recent=5,
                               summarization_max_importance=0.9)
    cfg.update(kw)
    return MemoryEngine(MemoryConfig(**cfg), embedder=None)


def load(engine: MemoryEngine, n: int = 20, extra: str = "") -> list[str]:
    recs = engine.ingest_many("mara", [
        {"content": f"Traded iron nails with Borin at the market, day {i}.{extra}",
         "importance": 0.2, "tags": ["market"]} for i in range(n)], now=0)
    return [r.id for r in recs]


def test_summary_replaces_its_sources_and_reports_the_reduction() -> None:
    engine = lifecycle_engine()
    ids = load(engine)
    with capture_events(engine.bus, "memory:*") as log:
        report = engine.tick(30 * MIN)
        assert 1 == report.summaries_queued
        (task,) = engine.summarization.poll()
        assert TaskStatus.RUNNING == task.status and "Borin" in (task.prompt or "")
        outcome = engine.summarization.complete(
            task.id, "Mara kept trading iron nails with Borin at the market for ten days.")
    assert "llm" == outcome.path and not outcome.used_fallback
    summary = engine.get(task.summary_record_id or "")
    assert "semantic" == summary.layer.value
    assert tuple(task.source_ids) == summary.metadata.source_ref_ids
    assert set(task.source_ids) <= set(ids)
    for sid in task.source_ids:
        with pytest.raises(MemoryEngineError):
            engine.get(sid)
    assert 20 - len(task.source_ids) + 1 == engine.count("mara")
    (done,) = log.of("memory:summarization:completed")
    assert (task.id, summary.id) == (done.task_id, done.summary_record_id)
    assert 0.0 < done.reduction_ratio < 1.0
    assert 1 == len(log.of("memory:summarization:queued"))
    assert {"summarized"} == {e.reason for e in log.of("memory:record:expired")}
    engine._check()


@pytest.mark.parametrize("llm", [FailingLLM(), FailingLLM(RuntimeError("503")),
                                 ScriptedLLM([""]), ScriptedLLM(["As an AI I cannot."]),
                                 ScriptedLLM(["ok"])])
def test_llm_failures_fall_back_to_the_heuristic_summary_and_lose_nothing(llm: Any) -> None:
    engine = lifecycle_engine()
    load(engine)
    engine.tick(30 * MIN)
    (outcome,) = engine.summarize_pending(llm)
    assert outcome.used_fallback and "heuristic" == outcome.path
    summary = engine.get(outcome.task.summary_record_id or "")
    live = {r.id for r in engine.records("mara")}
    covered = live | set(summary.metadata.source_ref_ids)
    assert 20 == len(covered - {summary.id})  # every original is live or referenced
    engine._check()


def test_failed_task_keeps_the_originals() -> None:
    engine = lifecycle_engine()
    load(engine)
    engine.tick(30 * MIN)
    (task,) = engine.summarization.poll()
    with capture_events(engine.bus, "memory:summarization:failed") as log:
        engine.summarization.fail(task.id, "rate limited")
    assert 20 == engine.count("mara")
    assert [(task.id, "rate limited")] == [(e.task_id, e.reason) for e in log.events]


def test_the_llm_never_sees_private_data_even_with_redaction_off() -> None:
    engine = lifecycle_engine(redaction_mode=False)
    load(engine, extra=f" Write to {EMAIL} or card 4111 1111 1111 1111.")
    assert EMAIL in engine.records("mara")[0].content  # stored raw: mode OFF
    engine.tick(30 * MIN)
    llm = ScriptedLLM(["Mara traded iron nails with Borin at the market."])
    engine.summarize_pending(llm)
    prompt = str(llm.calls[0]["prompt"]) + str(llm.calls[0]["system"])
    assert EMAIL not in prompt and "4111" not in prompt
    assert "<REDACT:sha256-" in prompt


def test_second_request_while_running_is_locked_and_changes_nothing() -> None:
    engine = lifecycle_engine()
    load(engine)
    engine.tick(30 * MIN)
    engine.summarization.poll()
    before = engine.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        engine.summarization.request("mara")
    assert ErrorCode.MEMORY_SUMMARY_LOCKED == info.value.code
    assert before == engine.state_hash()


def test_completing_an_unknown_task_fails_cleanly() -> None:
    engine = lifecycle_engine()
    load(engine)
    before = engine.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        engine.summarization.complete("sum:mara:00000099", "text")
    assert ErrorCode.MEMORY_SUMMARY_FAILED == info.value.code
    assert before == engine.state_hash()
    with pytest.raises(MemoryEngineError):
        engine.summarize_pending(object())  # type: ignore[arg-type]


def test_throttle_summarizes_locally_and_exhausted_skips() -> None:
    throttled = lifecycle_engine()
    load(throttled)
    throttled.set_pressure("throttle")
    with capture_events(throttled.bus, "memory:summarization:completed") as log:
        throttled.tick(30 * MIN)
    assert 1 == len(log.events) and [] == throttled.summarization.poll()
    exhausted = lifecycle_engine()
    load(exhausted)
    exhausted.set_pressure("exhausted")
    with capture_events(exhausted.bus, "memory:summarization:*") as log2:
        exhausted.tick(30 * MIN)
    assert 20 == exhausted.count("mara")
    assert ["memory:summarization:queued", "memory:summarization:failed"] == log2.names()


def test_keeps_the_most_recent_records_untouched() -> None:
    engine = lifecycle_engine(summarization_batch_size=50)
    ids = load(engine)
    engine.tick(30 * MIN)
    (outcome,) = engine.summarize_pending(ScriptedLLM(["Mara traded nails with Borin."]))
    assert not set(ids[-5:]) & set(outcome.source_ids)


def test_a_summary_keeps_its_sources_ids_whatever_the_patterns_while_host_refs_are_redacted(
        ) -> None:
    # A host pattern for ten-digit account numbers matches every record id's key part: a
    # summary's sourceRefIds are the engine's own ids and must stay as they are.
    engine = lifecycle_engine(redact_patterns=("DEFAULT", "PHONE", r"[0-9]{10}"))
    ids = load(engine)
    engine.tick(30 * MIN)
    (task,) = engine.summarization.poll()
    engine.summarization.complete(task.id, "Mara traded iron nails with Borin for days.")
    summary = engine.get(task.summary_record_id or "")
    assert tuple(task.source_ids) == summary.metadata.source_ref_ids
    assert set(summary.metadata.source_ref_ids) <= set(ids)
    host = engine.ingest("mara", "A note about the market.", now=31 * MIN, metadata={
        "sourceRefIds": ["npc:0000000001", EMAIL]})
    refs = engine.get(host.id).metadata.source_ref_ids
    assert 2 == len(refs) and not {"npc:0000000001", EMAIL} & set(refs)  # host text: redacted
