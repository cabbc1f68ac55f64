"""Prometheus text exposition of the metrics (``GET /metrics``), through ``prometheus_client``.

``prometheus_client`` is the optional extra ``f09-memory[metrics]``; without it
:func:`render_prometheus` raises ``MEMORY_CONFIG_INVALID`` saying what to install. Families
(every sample labelled ``agent``; the aggregate of all agents has ``agent=""``, which
Prometheus reads as no label, so ``{agent!=""}`` selects the agents):

==========================================  ======  =======================================
family                                      type    from (spec section 20)
==========================================  ======  =======================================
f09_memory_records                          gauge   memoryRecordsTotal
f09_memory_layer_records{layer}             gauge   episodicCount ... spatialCount
f09_memory_retrievals_total                 counter retrievals
f09_memory_retrieval_seconds{quantile}      summary p50/p95RetrievalMs (quantiles 0.5 and
                                                    0.95), ``_sum`` / ``_count`` give
                                                    averageRetrievalMs
f09_memory_summarization_tasks_queued_total counter summarizationTasksQueued (likewise
                                                    ``_completed_total``, ``_failed_total``)
f09_memory_compression_usage_ratio          gauge   compressionUsageRate
f09_memory_redacted_records_total           counter redactedRecords
f09_memory_retention_pruned_records_total   counter retentionPrunedCount
==========================================  ======  =======================================

Latencies are exposed in seconds, Prometheus' base unit (the JSON keeps the spec's ms).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from f09_memory.errors import ConfigInvalidError, InputInvalidError
from f09_memory.observability.collector import MetricsCollector
from f09_memory.observability.models import AgentMetrics, MetricsSnapshot

__all__ = ["PROMETHEUS_EXTRA", "render_prometheus"]

PROMETHEUS_EXTRA = "pip install 'f09-memory[metrics]'"
"""How to install what :func:`render_prometheus` needs."""

_LAYERS = ("episodic", "semantic", "procedural", "social", "spatial")
_COUNTERS = (
    ("f09_memory_retrievals", "Bundles built (memory:retrieval).", "retrievals"),
    ("f09_memory_summarization_tasks_queued", "Summarization tasks queued.",
     "summarization_tasks_queued"),
    ("f09_memory_summarization_tasks_completed",
     "Summarization tasks whose summary replaced its sources.",
     "summarization_tasks_completed"),
    ("f09_memory_summarization_tasks_failed", "Summarization tasks failed (sources kept).",
     "summarization_tasks_failed"),
    ("f09_memory_redacted_records", "Records stored or updated with private data replaced.",
     "redacted_records"),
    ("f09_memory_retention_pruned_records",
     "Records removed by the retention policy (layer caps).", "retention_pruned_count"),
)


def _rows(snapshot: MetricsSnapshot) -> list[tuple[str, AgentMetrics]]:
    return [("", snapshot.aggregate), *snapshot.agents.items()]


class _SnapshotCollector:
    """A ``prometheus_client`` custom collector over one :class:`MetricsSnapshot`."""

    def __init__(self, snapshot: MetricsSnapshot) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            SummaryMetricFamily,
        )

        rows = _rows(self.snapshot)
        records = GaugeMetricFamily("f09_memory_records", "Live records, every layer.",
                                    labels=["agent"])
        layers = GaugeMetricFamily("f09_memory_layer_records", "Live records of one layer.",
                                   labels=["agent", "layer"])
        latency = SummaryMetricFamily(
            "f09_memory_retrieval_seconds",
            "Retrieval wall time (quantiles from a fixed-size seeded reservoir).",
            labels=["agent"])
        compression = GaugeMetricFamily(
            "f09_memory_compression_usage_ratio",
            "Share of retrievals whose bundle was compressed (0..1).", labels=["agent"])
        counters = [(CounterMetricFamily(name, text, labels=["agent"]), field)
                    for name, text, field in _COUNTERS]
        for agent, m in rows:
            records.add_metric([agent], m.memory_records_total)
            for layer in _LAYERS:
                layers.add_metric([agent, layer], getattr(m, f"{layer}_count"))
            for quantile, ms in (("0.5", m.p50_retrieval_ms), ("0.95", m.p95_retrieval_ms)):
                latency.add_sample("f09_memory_retrieval_seconds",
                                   {"agent": agent, "quantile": quantile}, ms / 1000.0)
            latency.add_metric([agent], m.retrievals,
                               m.average_retrieval_ms * m.retrievals / 1000.0)
            compression.add_metric([agent], m.compression_usage_rate)
            for family, field in counters:
                family.add_metric([agent], getattr(m, field))
        yield records
        yield layers
        yield latency
        yield compression
        for family, _ in counters:
            yield family


def render_prometheus(source: MetricsCollector | MetricsSnapshot) -> tuple[bytes, str]:
    """The Prometheus text exposition of a collector's metrics: ``(body, content type)``.

    Rendering costs about 17 samples per agent through ``prometheus_client`` (tens of
    milliseconds for a few hundred agents), so a server takes the snapshot on the engine's
    owner thread and renders it on its own.

    Args:
        source: A collector (its :meth:`~MetricsCollector.snapshot` is taken: owner thread
            only) or a snapshot already taken (render it on any thread).

    Returns:
        The exposition body and its ``Content-Type`` (``prometheus_client``'s latest text
        format).

    Raises:
        ConfigInvalidError: ``prometheus_client`` is not installed (the message says
            ``pip install 'f09-memory[metrics]'``).
        InputInvalidError: ``source`` is neither a collector nor a snapshot.
    """
    try:
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
    except ImportError as exc:
        raise ConfigInvalidError(
            f"Prometheus exposition needs prometheus_client: {PROMETHEUS_EXTRA}",
            details={"extra": "metrics"}) from exc
    if isinstance(source, MetricsCollector):
        snapshot = source.snapshot()
    elif isinstance(source, MetricsSnapshot):
        snapshot = source
    else:
        raise InputInvalidError("render_prometheus needs a MetricsCollector or a "
                                "MetricsSnapshot", details={"field": "source"})
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_SnapshotCollector(snapshot))
    return generate_latest(registry), CONTENT_TYPE_LATEST
