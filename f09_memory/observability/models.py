"""The metrics models of spec section 20 (camelCase JSON, frozen): what the collector returns.

``model_dump(by_alias=True, mode="json")`` is the wire form (``GET /api/metrics``).
Counters (retrievals, tasks, redactions, prunes) count events since the collector was
attached; record counts are read from the engine when the snapshot is taken. Latencies are
wall-clock milliseconds (perf counter): they vary between runs and are never hashed.
"""

from __future__ import annotations

from pydantic import Field

from f09_memory.schema.base import BoundaryModel

__all__ = ["AgentMetrics", "MetricsSnapshot", "TickPoint"]


class AgentMetrics(BoundaryModel):
    """The spec section 20 metrics of one agent, or of all of them (the aggregate).

    Attributes:
        memory_records_total: Live records now, every layer (``system`` included).
        episodic_count: Live episodic records now (likewise ``semantic_count``,
            ``procedural_count``, ``social_count``, ``spatial_count``).
        retrievals: Bundles built (``memory:retrieval`` events).
        average_retrieval_ms: Exact mean wall time of those retrievals (0.0 when none).
        p50_retrieval_ms: Median of the latency reservoir's sample (0.0 when none).
        p95_retrieval_ms: 95th percentile of that sample (0.0 when none).
        summarization_tasks_queued: ``memory:summarization:queued`` events.
        summarization_tasks_completed: ``memory:summarization:completed`` events (a summary
            replaced its sources, by the LLM or the heuristic fallback).
        summarization_tasks_failed: ``memory:summarization:failed`` events (sources kept).
        compression_usage_rate: Share of the retrievals whose bundle was compressed
            (pressure), 0..1 (0.0 when none).
        redacted_records: ``memory:record:redacted`` events (a record stored or updated with
            private data replaced).
        retention_pruned_count: Records removed by the retention policy (layer caps, by a
            tick's compaction or at ingest past the slack: ``memory:compaction``
            ``removed``; each also ``memory:record:expired`` reason ``retention``).
    """

    memory_records_total: int = 0
    episodic_count: int = 0
    semantic_count: int = 0
    procedural_count: int = 0
    social_count: int = 0
    spatial_count: int = 0
    retrievals: int = 0
    average_retrieval_ms: float = 0.0
    p50_retrieval_ms: float = 0.0
    p95_retrieval_ms: float = 0.0
    summarization_tasks_queued: int = 0
    summarization_tasks_completed: int = 0
    summarization_tasks_failed: int = 0
    compression_usage_rate: float = 0.0
    redacted_records: int = 0
    retention_pruned_count: int = 0


class MetricsSnapshot(BoundaryModel):
    """Every agent's metrics and the aggregate, at one moment.

    Attributes:
        now: The engine clock when the snapshot was taken.
        aggregate: All agents together (latency quantiles from the collector's own
            reservoir of every retrieval, not an average of the agents').
        agents: Agent id -> its metrics, keys sorted: every agent with records and every
            agent an event named.
    """

    now: int = 0
    aggregate: AgentMetrics = Field(default_factory=AgentMetrics)
    agents: dict[str, AgentMetrics] = Field(default_factory=dict)


class TickPoint(BoundaryModel):
    """One tick of the per-tick series (the viewer's plot).

    Attributes:
        now: The tick's logical time.
        records: Live records of every agent after the tick.
        retrievals: Retrievals since the previous point.
        p50_retrieval_ms: Median latency of those retrievals (0.0 when none).
        p95_retrieval_ms: Their 95th percentile (0.0 when none).
        tick_ms: The tick's own wall time.
    """

    now: int
    records: int
    retrievals: int
    p50_retrieval_ms: float
    p95_retrieval_ms: float
    tick_ms: float
