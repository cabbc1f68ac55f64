"""A mixed engine scenario shared by the observability tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, RetrievedBundle, TickReport
from f09_memory.bus import EventLog

MIN = 60_000
SECRET = "mara.smith@forge.example.com"
KEY = "observability-test-key-0123456789"
SUMMARY_TEXT = "Mara kept trading iron nails with Borin at the market for ten days."
FAIL_REASON = "provider said: nails and Borin"


def mixed_config() -> MemoryConfig:
    return MemoryConfig(
        redaction_key=KEY, episodic_window=10 * MIN, summarization_min_interval_ms=0,
        summarization_batch_size=10, summarization_keep_recent=5,
        summarization_max_importance=0.9, hard_cap_slack=1.0,
        retention_policy={"semantic_max": 20, "social_max": 15, "protected_min": 5})


@dataclass
class Mixed:
    engine: MemoryEngine
    log: EventLog
    bundles: list[RetrievedBundle] = field(default_factory=list)
    reports: list[TickReport] = field(default_factory=list)

    def retrieve_all(self, now: int) -> None:
        agents = ["borin", "cid", "mara", "nobody"]
        for agent in agents:
            self.bundles.append(self.engine.retrieve(RetrievalRequest(
                agent_id=agent, purpose="reasoning", max_tokens=120, query="iron nails"),
                now=now))
        self.bundles += self.engine.retrieve_many(
            [RetrievalRequest(agent_id=a, purpose="dialog", max_tokens=60) for a in agents],
            now=now)


def run_mixed(engine: MemoryEngine, before_events: Callable[[], Any] | None = None) -> Mixed:
    """Ingest (one record with an e-mail), retrievals in normal and throttle pressure,
    ingest-time and tick-time retention pruning, a summary completed and one failed, a
    forgotten record and a forgotten agent, three ticks."""
    log = EventLog(engine.bus)
    run = Mixed(engine, log)
    for agent in ("mara", "borin"):
        engine.ingest_many(agent, [
            {"content": f"Traded iron nails with Borin at the market, day {i}."
                        + (f" Write to {SECRET}." if agent == "mara" and i == 3 else ""),
             "importance": 0.2, "tags": ["market"]} for i in range(20)], now=0)
    engine.ingest_many("cid", [{"content": f"fact {i}", "layer": "semantic",
                                "importance": (i % 10) / 10} for i in range(38)], now=0)
    engine.ingest_many("dana", [{"content": f"rumour {i}", "layer": "social",
                                 "importance": (i % 7) / 7} for i in range(40)], now=0)
    engine.ingest("cid", "The well is north of the mill.", layer="spatial",
                  metadata={"spatial": {"x": 1.0, "y": 2.0}}, now=0)
    run.retrieve_all(now=1_000)
    engine.set_pressure("throttle")
    run.retrieve_all(now=1_000)
    engine.set_pressure("normal")
    run.reports.append(engine.tick(30 * MIN))
    tasks = {t.agent_id: t for t in engine.summarization.poll()}
    engine.summarization.complete(tasks["mara"].id, SUMMARY_TEXT)
    engine.summarization.fail(tasks["borin"].id, FAIL_REASON)
    run.reports.append(engine.tick(31 * MIN))
    engine.forget([engine.records("cid")[0].id])
    engine.forget(agent_id="dana")
    run.retrieve_all(now=32 * MIN)
    run.reports.append(engine.tick(32 * MIN))
    log.close()
    return run


@pytest.fixture
def mixed_engine() -> MemoryEngine:
    return MemoryEngine(mixed_config(), seed=3, embedder=None)


@pytest.fixture
def scenario() -> Callable[[MemoryEngine], Mixed]:
    """:func:`run_mixed` (test modules cannot import this conftest)."""
    return run_mixed


@pytest.fixture
def fresh_engine() -> Callable[[], MemoryEngine]:
    """Builds engines like ``mixed_engine`` (for A/B comparisons)."""
    return lambda: MemoryEngine(mixed_config(), seed=3, embedder=None)


@pytest.fixture
def secrets() -> dict[str, str]:
    """Texts of the scenario that must never reach a log line or a metric."""
    return {"email": SECRET, "key": KEY, "summary": SUMMARY_TEXT, "reason": FAIL_REASON,
            "content": "Traded iron nails", "fact": "north of the mill"}
