"""Observability (index 20): the spec section 20 metrics, log tags and Prometheus exposition.

- ``reservoir.py``: :class:`LatencyReservoir`, a fixed-size seeded uniform sample
  (Algorithm R) giving p50/p95 latencies with an exact mean;
- ``models.py``: :class:`AgentMetrics`, :class:`MetricsSnapshot`, :class:`TickPoint`
  (camelCase JSON, the spec's metric names);
- ``collector.py``: :class:`MetricsCollector`, subscribed to ``engine.bus``: every metric
  per agent and in aggregate (:meth:`~MetricsCollector.snapshot`) and a bounded per-tick
  series (:meth:`~MetricsCollector.series`);
- ``logtags.py``: :func:`attach_log_tags`, one ``[MEM][CREATE|RETRIEVE|SUMMARY|COMPACT|
  REDACT|ERROR]`` log line per event, ids and counts only (never content);
- ``prometheus.py``: :func:`render_prometheus`, the text exposition through
  ``prometheus_client`` (the optional extra ``f09-memory[metrics]``).

Nothing here changes the engine's state or any hash: the collector only listens, and the
timings it reports are wall-clock measurements that no hash includes.
"""

from f09_memory.observability.collector import MAX_HISTORY, MetricsCollector, task_agent
from f09_memory.observability.logtags import LOG_TAGS, attach_log_tags
from f09_memory.observability.models import AgentMetrics, MetricsSnapshot, TickPoint
from f09_memory.observability.prometheus import PROMETHEUS_EXTRA, render_prometheus
from f09_memory.observability.reservoir import LatencyReservoir, check_reservoir_size

__all__ = [
    "LOG_TAGS",
    "MAX_HISTORY",
    "PROMETHEUS_EXTRA",
    "AgentMetrics",
    "LatencyReservoir",
    "MetricsCollector",
    "MetricsSnapshot",
    "TickPoint",
    "attach_log_tags",
    "check_reservoir_size",
    "render_prometheus",
    "task_agent",
]
