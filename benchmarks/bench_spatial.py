"""Spatial (index 16): ``nearby`` over agents of 500 spatial records, navigation, physics.

Issue target: ``nearby`` p95 <= 0.1 ms over an agent with 500 spatial records, measured on
a store of 1,000 agents x 500 records (100 agents in short mode), random agents and
positions. The spec bound below is 2.5x that (a shared, noisy machine); the target is the
goal printed beside it. Each agent's position columns are derived once (its first query,
reported separately), as a game pays it once per change of the agent's records.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from targets import SHORT, record, rounds, timings_ms

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest

AGENTS = 100 if SHORT else 1_000
RECORDS = 500
WORLD = 200.0


@pytest.fixture(scope="module")
def village() -> MemoryEngine:
    rng = np.random.default_rng(16)
    engine = MemoryEngine(MemoryConfig(episodic_max=RECORDS), seed=16, embedder=None)
    for a in range(AGENTS):
        xy = rng.uniform(0.0, WORLD, size=(RECORDS, 2)).round(2).tolist()
        engine.ingest_many(f"npc-{a:04d}", [
            {"content": f"Spot {i} of the map.", "layer": "spatial",
             "metadata": {"spatial": {"x": x, "y": y}}} for i, (x, y) in enumerate(xy)], now=0)
    t0 = time.perf_counter()
    for agent in engine.agents():  # derive every agent's columns once
        engine.nearby(agent, (0.0, 0.0), radius=1.0, k=1)
    per_agent = (time.perf_counter() - t0) * 1000.0 / AGENTS
    record("nearby first query per agent (derive 500 positions)", per_agent, "ms",
           spec=None, goal=None)
    return engine


def queries(seed: int) -> Any:
    rng = np.random.default_rng(seed)
    names = [f"npc-{a:04d}" for a in range(AGENTS)]

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        agent = names[int(rng.integers(AGENTS))]
        at = (float(rng.uniform(0, WORLD)), float(rng.uniform(0, WORLD)))
        return (agent, at), {"radius": 10.0, "k": 8}

    return setup


def test_nearby_500_records(benchmark: Any, village: MemoryEngine) -> None:
    benchmark.group = "spatial"
    found = benchmark.pedantic(village.nearby, setup=queries(1), rounds=rounds(5_000, 1_000),
                               warmup_rounds=50)
    assert len(found) <= 8
    ms = timings_ms(benchmark)
    record("nearby 500 spatial records, p50", np.percentile(ms, 50), "ms", spec=0.25,
           goal=0.05)
    record("nearby 500 spatial records, p95", np.percentile(ms, 95), "ms", spec=0.25,
           goal=0.1)


def test_nearby_with_records_read(benchmark: Any, village: MemoryEngine) -> None:
    benchmark.group = "spatial"

    def read(agent: str, at: tuple[float, float], **kw: Any) -> int:
        return len([hit.record.id for hit in village.nearby(agent, at, **kw)])

    benchmark.pedantic(read, setup=queries(2), rounds=rounds(2_000, 500), warmup_rounds=20)
    ms = timings_ms(benchmark)
    record("nearby + its records built, p95", np.percentile(ms, 95), "ms", spec=1.0, goal=None)


def test_navigation_retrieve_with_position(benchmark: Any, village: MemoryEngine) -> None:
    benchmark.group = "spatial"
    rng = np.random.default_rng(3)

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        agent = f"npc-{int(rng.integers(AGENTS)):04d}"
        at = [float(rng.uniform(0, WORLD)), float(rng.uniform(0, WORLD))]
        return (RetrievalRequest(agent_id=agent, purpose="navigation", limit=8,
                                 position=at),), {"now": 10}

    bundle = benchmark.pedantic(village.retrieve, setup=setup, rounds=rounds(1_000, 200),
                                warmup_rounds=10)
    assert [c.key for c in bundle.diagnostics.scoring_breakdown][-1] == "proximity"
    ms = timings_ms(benchmark)
    record("navigation retrieve 500 cand + position, p95", np.percentile(ms, 95), "ms",
           spec=10.0, goal=0.5)


def test_ingest_physics_batch(benchmark: Any) -> None:
    benchmark.group = "spatial"
    rng = np.random.default_rng(5)
    classes = ["wall", "water", "fire", "crate", "npc", "tree"]
    batches = iter(range(10_000))

    def events() -> tuple[tuple[Any, ...], dict[str, Any]]:
        step = next(batches)
        return ([{"kind": "collision", "agent_id": f"npc-{int(rng.integers(200)):03d}",
                  "position": [float(rng.uniform(0, WORLD)), float(rng.uniform(0, WORLD))],
                  "contact_class": classes[int(rng.integers(len(classes)))]}
                 for _ in range(1_000)],), {"now": step}

    engine = MemoryEngine(MemoryConfig(), seed=5, embedder=None)
    benchmark.pedantic(engine.ingest_physics, setup=events, rounds=rounds(30, 10))
    ms = timings_ms(benchmark)
    record("ingest_physics, events/s (1,000 a batch)", 1_000 / (np.median(ms) / 1000.0),
           "events/s", spec=None, goal=None, higher_is_better=True)
