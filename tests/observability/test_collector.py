from __future__ import annotations

import doctest
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from f09_memory import (
    AgentMetrics,
    MemoryConfig,
    MemoryEngine,
    MetricsCollector,
    MetricsSnapshot,
    RetrievalRequest,
    bundle_hash,
)
from f09_memory.bus import RetrievalPerformed, TickCompleted
from f09_memory.errors import ErrorCode, InputInvalidError
from f09_memory.observability import collector as collector_module
from f09_memory.observability import task_agent

MIN = 60_000
LAYERS = ("episodic", "semantic", "procedural", "social", "spatial")
SPEC_NAMES = [  # spec section 20, in the contract's order
    "memoryRecordsTotal", "episodicCount", "semanticCount", "proceduralCount", "socialCount",
    "spatialCount", "retrievals", "averageRetrievalMs", "p50RetrievalMs", "p95RetrievalMs",
    "summarizationTasksQueued", "summarizationTasksCompleted", "summarizationTasksFailed",
    "compressionUsageRate", "redactedRecords", "retentionPrunedCount",
]


def agent_of(record_id: str) -> str:
    return record_id.rpartition(":")[0]


def expected_counters(run: Any, agent: str | None) -> dict[str, Any]:
    """The counters of ``agent`` (None: all) recomputed from the bundles and the event log."""
    log = run.log

    def mine(ids: list[str]) -> int:
        return sum(1 for i in ids if agent is None or agent_of(i) == agent)

    bundles = [b for b, r in zip(run.bundles, requests_of(run), strict=True)
               if agent is None or r == agent]
    times = [b.diagnostics.time_ms for b in bundles]
    compressed = sum(b.diagnostics.compression_applied for b in bundles)
    p50, p95 = np.percentile(times, [50, 95]) if times else (0.0, 0.0)
    return {
        "retrievals": len(bundles),
        "averageRetrievalMs": pytest.approx(float(np.mean(times)) if times else 0.0,
                                            rel=1e-12),
        "p50RetrievalMs": pytest.approx(float(p50), rel=1e-12),
        "p95RetrievalMs": pytest.approx(float(p95), rel=1e-12),
        "compressionUsageRate": compressed / len(bundles) if bundles else 0.0,
        "summarizationTasksQueued": sum(1 for e in log.of("memory:summarization:queued")
                                        if agent is None or e.agent_id == agent),
        "summarizationTasksCompleted": sum(1 for e in log.of("memory:summarization:completed")
                                           if agent in (None, e.task_id.split(":")[1])),
        "summarizationTasksFailed": sum(1 for e in log.of("memory:summarization:failed")
                                        if agent in (None, e.task_id.split(":")[1])),
        "redactedRecords": mine([e.id for e in log.of("memory:record:redacted")]),
        "retentionPrunedCount": mine([e.id for e in log.of("memory:record:expired")
                                      if e.reason == "retention"]),
    }


def requests_of(run: Any) -> list[str]:
    """The agent of each bundle, in order (``retrieve_all`` asks the same four twice)."""
    return ["borin", "cid", "mara", "nobody"] * (len(run.bundles) // 4)


def test_every_metric_is_exact_after_a_mixed_scenario(
        mixed_engine: MemoryEngine, scenario: Callable[[MemoryEngine], Any]) -> None:
    engine = mixed_engine
    with MetricsCollector(engine) as metrics:
        run = scenario(engine)
        snap = metrics.snapshot()
    assert SPEC_NAMES == list(snap.aggregate.model_dump(by_alias=True))
    assert engine.now == snap.now
    assert ["borin", "cid", "dana", "mara", "nobody"] == list(snap.agents)
    for agent, m in [*snap.agents.items(), (None, snap.aggregate)]:
        got = m.model_dump(by_alias=True)
        assert engine.count(agent) == got["memoryRecordsTotal"], agent
        for layer in LAYERS:
            assert engine.count(agent, layer) == got[f"{layer}Count"], (agent, layer)
        expected = expected_counters(run, agent)
        assert expected == {k: got[k] for k in expected}, agent
    agg = snap.aggregate
    # The scenario is not vacuous: every kind of event happened.
    assert (agg.summarization_tasks_queued, agg.summarization_tasks_completed,
            agg.summarization_tasks_failed) == (5, 3, 1)  # 2 timed out: heuristic summaries
    assert 0 < agg.compression_usage_rate < 1 and agg.redacted_records >= 1
    assert 18 + 25 == agg.retention_pruned_count  # 18 by a tick, 25 at ingest
    assert 18 == sum(r.pruned for r in run.reports)
    assert 0 == snap.agents["dana"].memory_records_total  # forgotten
    assert 25 == snap.agents["dana"].retention_pruned_count
    assert 1 == snap.agents["cid"].spatial_count
    assert 2 == snap.agents["mara"].summarization_tasks_completed
    assert 1 == snap.agents["borin"].summarization_tasks_failed


def test_the_collector_changes_no_hash_and_no_result(
        mixed_engine: MemoryEngine, scenario: Callable[[MemoryEngine], Any],
        fresh_engine: Callable[[], MemoryEngine]) -> None:
    plain = fresh_engine()
    a = scenario(plain)
    with MetricsCollector(mixed_engine):
        b = scenario(mixed_engine)
    assert plain.state_hash() == mixed_engine.state_hash()
    assert [bundle_hash(x) for x in a.bundles] == [bundle_hash(x) for x in b.bundles]


def test_series_has_one_point_per_tick_with_the_retrievals_since_the_last(
        mixed_engine: MemoryEngine, scenario: Callable[[MemoryEngine], Any]) -> None:
    metrics = MetricsCollector(mixed_engine)
    run = scenario(mixed_engine)
    points = metrics.series()
    ticks = [e for e in run.log.events if isinstance(e, TickCompleted)]
    assert [t.now for t in ticks] == [p.now for p in points] == [30 * MIN, 31 * MIN, 32 * MIN]
    assert [t.records for t in ticks] == [p.records for p in points]
    assert mixed_engine.count() == points[-1].records
    assert [t.tick_ms for t in ticks] == [p.tick_ms for p in points]
    assert [16, 0, 8] == [p.retrievals for p in points]
    first = [b.diagnostics.time_ms for b in run.bundles[:16]]
    assert pytest.approx(np.percentile(first, [50, 95]).tolist(), rel=1e-12) == [
        points[0].p50_retrieval_ms, points[0].p95_retrieval_ms]
    assert (0.0, 0.0) == (points[1].p50_retrieval_ms, points[1].p95_retrieval_ms)
    assert {"now", "records", "retrievals", "p50RetrievalMs", "p95RetrievalMs", "tickMs"} == set(
        points[0].model_dump(by_alias=True))


def test_series_is_bounded_by_history_and_readable_from_any_thread() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    metrics = MetricsCollector(engine, history=3)
    for now in range(1, 6):
        engine.tick(now)
    seen: list[list[int]] = []
    reader = threading.Thread(target=lambda: seen.append([p.now for p in metrics.series()]))
    reader.start()
    reader.join()
    assert [[3, 4, 5]] == seen


def synthetic(engine: MemoryEngine, seed: int, size: int) -> MetricsSnapshot:
    """A collector fed 500 retrieval events with fixed timings (no wall clock)."""
    metrics = MetricsCollector(engine, reservoir_size=size, seed=seed)
    for i in range(500):
        engine.bus.emit(RetrievalPerformed(
            agent_id=f"npc-{i % 3}", purpose="dialog", candidate_count=10, used=3,
            truncated=False, pressure_state="normal", compression_applied=i % 4 == 0,
            time_ms=float((i * 37) % 101)))
    snap = metrics.snapshot()
    metrics.close()
    return snap


def test_same_events_and_seed_give_the_same_quantiles_whatever_the_engine() -> None:
    a = synthetic(MemoryEngine(MemoryConfig(), embedder=None), seed=5, size=16)
    b = synthetic(MemoryEngine(MemoryConfig(), seed=9, embedder=None), seed=5, size=16)
    c = synthetic(MemoryEngine(MemoryConfig(), embedder=None), seed=6, size=16)
    assert a == b
    assert a.aggregate.retrievals == 500 and a.aggregate.compression_usage_rate == 0.25
    assert a.aggregate.average_retrieval_ms == pytest.approx(
        np.mean([(i * 37) % 101 for i in range(500)]))
    assert [a.agents[f"npc-{k}"].retrievals for k in range(3)] == [167, 167, 166]
    quantiles = [(m.p50_retrieval_ms, m.p95_retrieval_ms)
                 for m in [c.aggregate, *c.agents.values()]]
    assert quantiles != [(m.p50_retrieval_ms, m.p95_retrieval_ms)
                         for m in [a.aggregate, *a.agents.values()]]


def test_records_are_exact_for_an_engine_observed_late_and_counters_start_at_attach() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    engine.ingest_many("a", ["one", "two", f"mail {'x@example.com'}"], now=1)
    engine.retrieve(RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=50), now=1)
    metrics = MetricsCollector(engine)
    m = metrics.snapshot().agents["a"]
    assert (3, 3, 0, 0) == (m.memory_records_total, m.episodic_count, m.retrievals,
                            m.redacted_records)
    assert AgentMetrics(**m.model_dump()) == m  # the fast constructor builds a valid model


def test_close_stops_counting_and_is_idempotent() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    metrics = MetricsCollector(engine)
    request = RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=50)
    engine.retrieve(request, now=1)
    metrics.close()
    metrics.close()
    engine.retrieve(request, now=1)
    engine.tick(2)
    assert 1 == metrics.snapshot().aggregate.retrievals and [] == metrics.series()
    assert not engine.bus.wants("memory:retrieval") and not engine.bus.wants("memory:tick")


def test_snapshot_is_for_the_owner_thread_only() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    metrics = MetricsCollector(engine)
    errors: list[BaseException] = []

    def other() -> None:
        try:
            metrics.snapshot()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    (error,) = errors
    assert isinstance(error, InputInvalidError)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"reservoir_size": 0}, "reservoir_size"), ({"reservoir_size": 2.5}, "reservoir_size"),
    ({"reservoir_size": True}, "reservoir_size"), ({"reservoir_size": 2**21}, "reservoir_size"),
    ({"seed": -1}, "seed"), ({"seed": "0"}, "seed"), ({"seed": 2**63}, "seed"),
    ({"history": 0}, "history"), ({"history": 10**6}, "history"), ({"history": None}, "history"),
])
def test_bad_arguments_raise_naming_the_field(kwargs: dict[str, Any], field: str) -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    with pytest.raises(InputInvalidError) as info:
        MetricsCollector(engine, **kwargs)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert field == info.value.details["field"]
    assert not engine.bus.wants("memory:retrieval")  # nothing subscribed


def test_an_engine_is_required() -> None:
    with pytest.raises(InputInvalidError) as info:
        MetricsCollector("engine")  # type: ignore[arg-type]
    assert "engine" == info.value.details["field"]


@pytest.mark.parametrize(("task_id", "agent"), [
    ("sum:mara:00000001", "mara"), ("sum:a:b:00000012", "a:b"), ("sum::00000001", None),
    ("mara:00000001", None), ("sum:mara:x", None), ("sum:mara", None), ("", None),
])
def test_task_agent_reads_the_task_id_format(task_id: str, agent: str | None) -> None:
    assert agent == task_agent(task_id)


def test_module_examples_run() -> None:
    assert 0 == doctest.testmod(collector_module).failed


def test_snapshots_reuse_unchanged_agents_and_never_go_stale() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    metrics = MetricsCollector(engine)
    engine.ingest_batch([{"agent_id": a, "content": "seen"} for a in ("a", "b", "c")], now=1)
    request = RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=50)
    engine.retrieve(request, now=1)
    first = metrics.snapshot()
    again = metrics.snapshot()
    assert all(first.agents[k] is again.agents[k] for k in "abc")  # nothing changed
    engine.retrieve(request, now=1)
    engine.ingest("b", "more", now=2)
    engine.ingest("c", "a secret@example.com", now=2)
    after = metrics.snapshot()
    assert (1, 2) == (first.agents["a"].retrievals, after.agents["a"].retrievals)
    assert (1, 2) == (first.agents["b"].episodic_count, after.agents["b"].episodic_count)
    assert (0, 1) == (first.agents["c"].redacted_records, after.agents["c"].redacted_records)
    assert 2 == after.agents["c"].memory_records_total
    assert after.aggregate.retrievals == 2 and after.aggregate.memory_records_total == 5
