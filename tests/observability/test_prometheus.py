from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from f09_memory import (
    MemoryConfig,
    MemoryEngine,
    MetricsCollector,
    MetricsSnapshot,
    RetrievalRequest,
    render_prometheus,
)
from f09_memory.errors import ConfigInvalidError, ErrorCode, InputInvalidError

LAYERS = ("episodic", "semantic", "procedural", "social", "spatial")


def samples(body: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, parsed by prometheus_client's own parser."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(body.decode("utf-8")):
        for s in family.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in out, key
            out[key] = s.value
    return out


def test_exposition_carries_every_metric_per_agent_and_in_aggregate(
        mixed_engine: MemoryEngine, scenario: Callable[[MemoryEngine], Any]) -> None:
    pytest.importorskip("prometheus_client")
    metrics = MetricsCollector(mixed_engine)
    scenario(mixed_engine)
    body, content_type = render_prometheus(metrics)
    assert content_type.startswith("text/plain; version=") and "charset=utf-8" in content_type
    got = samples(body)
    snap = metrics.snapshot()
    rows = [("", snap.aggregate), *snap.agents.items()]
    assert len(rows) == 6
    for agent, m in rows:
        a = (("agent", agent),)
        assert m.memory_records_total == got[("f09_memory_records", a)]
        for layer in LAYERS:
            assert getattr(m, f"{layer}_count") == got[
                ("f09_memory_layer_records", (("agent", agent), ("layer", layer)))]
        assert m.retrievals == got[("f09_memory_retrievals_total", a)]
        assert m.retrievals == got[("f09_memory_retrieval_seconds_count", a)]
        assert pytest.approx(m.average_retrieval_ms * m.retrievals / 1000) == got[
            ("f09_memory_retrieval_seconds_sum", a)]
        for q, ms in (("0.5", m.p50_retrieval_ms), ("0.95", m.p95_retrieval_ms)):
            assert pytest.approx(ms / 1000) == got[
                ("f09_memory_retrieval_seconds", (("agent", agent), ("quantile", q)))]
        assert pytest.approx(m.compression_usage_rate) == got[
            ("f09_memory_compression_usage_ratio", a)]
        for name, value in [
            ("summarization_tasks_queued", m.summarization_tasks_queued),
            ("summarization_tasks_completed", m.summarization_tasks_completed),
            ("summarization_tasks_failed", m.summarization_tasks_failed),
            ("redacted_records", m.redacted_records),
            ("retention_pruned_records", m.retention_pruned_count),
        ]:
            assert value == got[(f"f09_memory_{name}_total", a)], name
    assert 3 == got[("f09_memory_summarization_tasks_completed_total", (("agent", ""),))]
    assert len(got) == 6 * (1 + 5 + 1 + 4 + 1 + 5)


def test_a_snapshot_renders_the_same_on_any_thread_and_odd_ids_are_escaped() -> None:
    pytest.importorskip("prometheus_client")
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    metrics = MetricsCollector(engine)
    odd = 'npc "quoted" \\ back\nslash'
    engine.ingest(odd, "hello", now=1)
    engine.retrieve(RetrievalRequest(agent_id=odd, purpose="dialog", max_tokens=50), now=1)
    snap = metrics.snapshot()
    body, _ = render_prometheus(snap)
    assert 1 == samples(body)[("f09_memory_retrievals_total", (("agent", odd),))]
    assert isinstance(snap, MetricsSnapshot)


def test_without_prometheus_client_the_error_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # import fails
    metrics = MetricsCollector(MemoryEngine(MemoryConfig(), embedder=None))
    with pytest.raises(ConfigInvalidError) as info:
        render_prometheus(metrics)
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    assert "pip install 'f09-memory[metrics]'" in str(info.value)


def test_a_wrong_source_is_refused() -> None:
    pytest.importorskip("prometheus_client")
    with pytest.raises(InputInvalidError) as info:
        render_prometheus({"aggregate": {}})  # type: ignore[arg-type]
    assert "source" == info.value.details["field"]
