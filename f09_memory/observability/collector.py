"""MetricsCollector: every spec section 20 metric, per agent and in aggregate, from the bus.

The collector subscribes to the engine's bus (``engine.bus``) and counts what the events
report; record counts are read from the engine when a snapshot is taken, so they are exact
whatever happened before the collector was attached. Where each metric comes from:

==============================  ===========================================================
metric                          source
==============================  ===========================================================
memoryRecordsTotal, *Count      ``engine.layer_counts()`` at :meth:`MetricsCollector.snapshot`
retrievals, averageRetrievalMs  ``memory:retrieval`` (``timeMs``: the bundle's
                                ``diagnostics.time_ms``; exact count and mean)
p50/p95RetrievalMs              a :class:`LatencyReservoir` per agent and one for all
compressionUsageRate            ``memory:retrieval`` ``compressionApplied`` / retrievals
summarizationTasks*             ``memory:summarization:queued|completed|failed`` (the agent
                                from the task id ``sum:<agent>:<n>``)
redactedRecords                 ``memory:record:redacted``
retentionPrunedCount            ``memory:compaction`` ``removed`` (a tick's compaction, or
                                an ingest that passed a cap plus the slack)
series()                        ``memory:tick`` (one :class:`TickPoint` per tick)
==============================  ===========================================================

Cost: the events above are built only because the collector listens (the bus skips them
otherwise); a retrieval costs the collector three reservoir offers and a few counter
increments (``benchmarks/bench_observability.py``: under 5% of a 2k-candidate
retrieval). It listens to no per-record event of the common paths (``created``,
``expired``), so ingests and evictions cost it nothing. Memory: at most
``reservoir_size`` floats per agent that retrieved, plus ``history`` tick points.

A ``retrieve_many`` frame reports, for each bundle, the time from the frame's start to that
bundle (what its ``diagnostics.time_ms`` says), so per-agent latencies in a crowd frame grow
with the agent's place in the frame.

Threads: handlers run on the engine's owner thread (inside the engine calls that emit);
:meth:`MetricsCollector.snapshot` reads the engine, so it is owner-thread only like the
engine; :meth:`MetricsCollector.series` may be called from any thread.
"""

from __future__ import annotations

import hashlib
import threading
from collections import deque
from types import TracebackType
from typing import Any

from f09_memory.bus import (
    MemoryCompaction,
    RecordRedacted,
    RetrievalPerformed,
    SummarizationCompleted,
    SummarizationFailed,
    SummarizationQueued,
    TickCompleted,
)
from f09_memory.engine import MemoryEngine
from f09_memory.errors import InputInvalidError
from f09_memory.observability.models import AgentMetrics, MetricsSnapshot, TickPoint
from f09_memory.observability.reservoir import LatencyReservoir, check_reservoir_size
from f09_memory.schema.base import trusted
from f09_memory.store.store import split_record_id

__all__ = ["MAX_HISTORY", "MetricsCollector", "task_agent"]

MAX_HISTORY = 100_000
"""The most tick points :meth:`MetricsCollector.series` may keep."""

_LAYERS = ("episodic", "semantic", "procedural", "social", "spatial")
_COUNT_FIELDS = tuple(f"{layer}_count" for layer in _LAYERS)
_AGGREGATE, _WINDOW, _AGENT = 0, 1, 2
"""Seed streams: the aggregate reservoir, the per-tick window, each agent's."""


def task_agent(task_id: str) -> str | None:
    """The agent of a summarization task id ``sum:<agent>:<n>`` (``None`` if not one)."""
    head, sep, tail = task_id.rpartition(":")
    if not sep or not tail.isdigit() or not head.startswith("sum:") or len(head) == 4:
        return None
    return head[4:]


def _agent_key(agent_id: str) -> list[int]:
    """Two 32-bit words of the sha256 of ``agent_id`` (a seed part; never ``hash()``)."""
    digest = hashlib.sha256(agent_id.encode("utf-8", "surrogatepass")).digest()
    return [int.from_bytes(digest[:4], "big"), int.from_bytes(digest[4:8], "big")]


class _Counters:
    """The event counters of one agent (or of all): a latency reservoir and counts.

    :meth:`metrics` keeps its last result and gives it again while nothing changed (no new
    event, the same record counts), so a snapshot of a quiet crowd costs a tuple compare
    per agent and a percentile only where latencies came in.
    """

    __slots__ = ("cached", "cached_key", "completed", "compressed", "failed", "latency",
                 "pruned", "queued", "redacted")

    def __init__(self, latency: LatencyReservoir) -> None:
        self.latency = latency
        self.compressed = self.queued = self.completed = self.failed = 0
        self.redacted = self.pruned = 0
        self.cached: AgentMetrics | None = None
        self.cached_key: tuple[Any, ...] = ()

    def metrics(self, counts: dict[str, int] | None) -> AgentMetrics:
        """The agent's metrics with the record ``counts`` read from the engine."""
        latency = self.latency
        retrievals = latency.count
        key = (retrievals, self.queued, self.completed, self.failed, self.redacted,
               self.pruned, tuple(counts.values()) if counts else ())
        if key == self.cached_key and self.cached is not None:
            return self.cached
        p50, p95 = latency.quantiles(50, 95)
        values: dict[str, Any] = _record_counts(counts)
        values.update(
            retrievals=retrievals,
            average_retrieval_ms=latency.mean,
            p50_retrieval_ms=p50,
            p95_retrieval_ms=p95,
            summarization_tasks_queued=self.queued,
            summarization_tasks_completed=self.completed,
            summarization_tasks_failed=self.failed,
            compression_usage_rate=self.compressed / retrievals if retrievals else 0.0,
            redacted_records=self.redacted,
            retention_pruned_count=self.pruned,
        )
        self.cached = metrics = trusted(AgentMetrics, values)
        self.cached_key = key
        return metrics


def _record_counts(counts: dict[str, int] | None) -> dict[str, Any]:
    if not counts:
        return dict.fromkeys(("memory_records_total", *_COUNT_FIELDS), 0)
    values: dict[str, Any] = {"memory_records_total": sum(counts.values())}
    for layer, name in zip(_LAYERS, _COUNT_FIELDS, strict=True):
        values[name] = counts.get(layer, 0)
    return values


_NO_EVENTS: dict[str, Any] = {name: AgentMetrics.model_fields[name].default
                              for name in AgentMetrics.model_fields}


def _counts_only(counts: dict[str, int]) -> AgentMetrics:
    """The metrics of an agent no event has named yet: its record counts, zeros else."""
    return trusted(AgentMetrics, {**_NO_EVENTS, **_record_counts(counts)})


class MetricsCollector:
    """Collects the spec section 20 metrics of one engine from its bus.

    Args:
        engine: The engine to observe (its ``bus`` is subscribed at once).
        reservoir_size: Latencies kept per agent and for the aggregate (1..2**20).
        seed: Seeds the reservoirs' draws (the same events give the same quantiles).
        history: Tick points kept by :meth:`series` (1..``MAX_HISTORY``), oldest dropped.

    Raises:
        InputInvalidError: ``engine`` is not a ``MemoryEngine``, or an argument is out of
            range (details name the field).

    Example:
        >>> from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest
        >>> engine = MemoryEngine(MemoryConfig(), embedder=None)
        >>> metrics = MetricsCollector(engine)
        >>> _ = engine.ingest("npc", "Saw the smith at the well.", now=1)
        >>> _ = engine.retrieve(RetrievalRequest(agent_id="npc", purpose="dialog",
        ...                                      max_tokens=100), now=2)
        >>> _ = engine.tick(3)
        >>> snap = metrics.snapshot()
        >>> snap.agents["npc"].memory_records_total, snap.aggregate.retrievals
        (1, 1)
        >>> [(p.now, p.records, p.retrievals) for p in metrics.series()]
        [(3, 1, 1)]
        >>> metrics.close()
    """

    def __init__(self, engine: MemoryEngine, *, reservoir_size: int = 1024, seed: int = 0,
                 history: int = 600) -> None:
        if not isinstance(engine, MemoryEngine):
            raise InputInvalidError("engine must be a MemoryEngine",
                                    details={"field": "engine"})
        self.reservoir_size = check_reservoir_size(reservoir_size, "reservoir_size")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
            raise InputInvalidError("seed must be an int in 0..2**63-1",
                                    details={"field": "seed"})
        if isinstance(history, bool) or not isinstance(history, int) or not (
                1 <= history <= MAX_HISTORY):
            raise InputInvalidError(f"history must be an int in 1..{MAX_HISTORY} (tick points)",
                                    details={"field": "history"})
        self.seed = seed
        self.history = history
        self._engine = engine
        self._agents: dict[str, _Counters] = {}
        self._quiet: dict[str, tuple[tuple[int, ...], AgentMetrics]] = {}
        """Agents no event named yet: their last record counts and metrics."""
        self._all = _Counters(LatencyReservoir(reservoir_size, seed=[seed, _AGGREGATE]))
        self._window = LatencyReservoir(reservoir_size, seed=[seed, _WINDOW])
        self._add_all = self._all.latency.add
        self._add_window = self._window.add
        self._series: deque[TickPoint] = deque(maxlen=history)
        self._lock = threading.Lock()
        bus = engine.bus
        self._unsubscribe = [
            bus.subscribe(RetrievalPerformed.name, self._on_retrieval),
            bus.subscribe(SummarizationQueued.name, self._on_queued),
            bus.subscribe(SummarizationCompleted.name, self._on_completed),
            bus.subscribe(SummarizationFailed.name, self._on_failed),
            bus.subscribe(RecordRedacted.name, self._on_redacted),
            bus.subscribe(MemoryCompaction.name, self._on_compaction),
            bus.subscribe(TickCompleted.name, self._on_tick),
        ]

    # ------------------------------------------------------------------ handlers
    def _agent(self, agent_id: str) -> _Counters:
        found = self._agents.get(agent_id)
        if found is None:
            seed = [self.seed, _AGENT, *_agent_key(agent_id)]
            found = self._agents[agent_id] = _Counters(
                LatencyReservoir(self.reservoir_size, seed=seed))
        return found

    def _on_retrieval(self, ev: RetrievalPerformed) -> None:
        ms = ev.time_ms
        counters = self._agents.get(ev.agent_id) or self._agent(ev.agent_id)
        counters.latency.add(ms)
        self._add_all(ms)
        self._add_window(ms)
        if ev.compression_applied:
            counters.compressed += 1
            self._all.compressed += 1

    def _on_queued(self, ev: SummarizationQueued) -> None:
        self._all.queued += 1
        self._agent(ev.agent_id).queued += 1

    def _on_completed(self, ev: SummarizationCompleted) -> None:
        self._all.completed += 1
        agent_id = task_agent(ev.task_id)
        if agent_id is not None:
            self._agent(agent_id).completed += 1

    def _on_failed(self, ev: SummarizationFailed) -> None:
        self._all.failed += 1
        agent_id = task_agent(ev.task_id)
        if agent_id is not None:
            self._agent(agent_id).failed += 1

    def _on_redacted(self, ev: RecordRedacted) -> None:
        self._all.redacted += 1
        parts = split_record_id(ev.id)
        if parts is not None:
            self._agent(parts[0]).redacted += 1

    def _on_compaction(self, ev: MemoryCompaction) -> None:
        if ev.removed:
            self._all.pruned += ev.removed
            self._agent(ev.agent_id).pruned += ev.removed

    def _on_tick(self, ev: TickCompleted) -> None:
        window = self._window
        p50, p95 = window.quantiles(50, 95)
        point = TickPoint(now=ev.now, records=ev.records, retrievals=window.count,
                          p50_retrieval_ms=p50, p95_retrieval_ms=p95, tick_ms=ev.tick_ms)
        window.reset()
        with self._lock:
            self._series.append(point)

    # ------------------------------------------------------------------ reading
    def snapshot(self) -> MetricsSnapshot:
        """Every agent's metrics and the aggregate, now.

        Owner thread only (it reads the engine's record counts). O(agents); an agent's
        metrics are rebuilt (with a percentile of its reservoir) only when an event named
        it or its record counts changed since the previous snapshot.

        Raises:
            InputInvalidError: Called from a thread other than the engine's owner.
        """
        engine = self._engine
        counts = engine.layer_counts()
        now = engine.now
        agents: dict[str, AgentMetrics] = {}
        known = self._agents
        quiet = self._quiet
        for agent_id in sorted(counts.keys() | known.keys()):
            counters = known.get(agent_id)
            if counters is not None:
                agents[agent_id] = counters.metrics(counts.get(agent_id))
                continue
            by_layer = counts[agent_id]
            key = tuple(by_layer.values())
            seen = quiet.get(agent_id)
            if seen is None or seen[0] != key:
                quiet[agent_id] = seen = (key, _counts_only(by_layer))
            agents[agent_id] = seen[1]
        totals: dict[str, int] = {}
        for by_layer in counts.values():
            for layer, n in by_layer.items():
                totals[layer] = totals.get(layer, 0) + n
        return trusted(MetricsSnapshot, {"now": now, "aggregate": self._all.metrics(totals),
                                         "agents": agents})

    def series(self) -> list[TickPoint]:
        """The last ``history`` tick points, oldest first (a copy; any thread). O(history)."""
        with self._lock:
            return list(self._series)

    def close(self) -> None:
        """Stop listening (idempotent); the figures collected so far stay readable."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()

    def __enter__(self) -> MetricsCollector:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
