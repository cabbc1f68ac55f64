"""Retrieval (index 8): 2,000 candidates, no embeddings, 1,800-token budget, bundle built.

Spec section 15: < 5 ms average, QG4 p95 < 10 ms. Goal: p50 <= 0.3 ms, p95 <= 0.5 ms.
"""

from __future__ import annotations

import numpy as np
import pytest
from targets import record, rounds, timings_ms

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest

WORDS = [
    "smith",
    "well",
    "gold",
    "debt",
    "market",
    "guard",
    "fire",
    "bread",
    "river",
    "king",
    "queen",
    "sword",
    "horse",
    "tavern",
    "mill",
    "chapel",
    "rain",
    "storm",
    "harvest",
    "festival",
    "stranger",
    "rumour",
]


def engine_with(n: int, seed: int = 0) -> MemoryEngine:
    rng = np.random.default_rng(seed)
    uncapped = {"semantic_max": None, "social_max": None, "procedural_max": None}
    engine = MemoryEngine(MemoryConfig(episodic_max=n, retention_policy=uncapped), seed=seed)
    layers = ["episodic"] * 6 + ["semantic", "social", "procedural", "spatial"]
    items = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS, int(rng.integers(8, 20)))).capitalize() + "."
        layer = layers[i % len(layers)]
        meta = {"spatial": {"x": 1.0, "y": 2.0}} if layer == "spatial" else None
        items.append(
            {
                "content": text,
                "importance": float(rng.random()),
                "layer": layer,
                "tags": [str(rng.choice(WORDS))],
                "metadata": meta,
                "flagged": bool(rng.random() < 0.01),
            }
        )
    for i in range(0, n, 500):
        engine.ingest_many("npc", items[i : i + 500], now=i * 10)
    return engine


@pytest.mark.parametrize("size", [200, 500, 2_000, 10_000])  # regress.py charts them
def test_retrieve_no_embeddings(benchmark, size: int) -> None:
    benchmark.group = "retrieval"
    engine = engine_with(size)
    request = RetrievalRequest(agent_id="npc", purpose="reasoning", max_tokens=1800)
    now = size * 10 + 1_000
    bundle = benchmark.pedantic(
        engine.retrieve,
        args=(request,),
        kwargs={"now": now},
        rounds=rounds(3_000, 600),
        iterations=1,
        warmup_rounds=50,
    )
    assert size == bundle.diagnostics.candidate_count
    assert bundle.records and bundle.total_tokens <= 1800
    if size == 2_000:
        ms = timings_ms(benchmark)
        record("retrieve 2k cand, p50", np.percentile(ms, 50), "ms", spec=5.0, goal=0.3)
        record("retrieve 2k cand, p95", np.percentile(ms, 95), "ms", spec=10.0, goal=0.5)
        record("retrieve 2k cand, mean", ms.mean(), "ms", spec=5.0, goal=None)


def test_retrieve_throttled(benchmark) -> None:
    benchmark.group = "retrieval"
    engine = engine_with(2_000)
    engine.set_pressure("throttle")
    request = RetrievalRequest(agent_id="npc", purpose="reasoning", max_tokens=1800)
    bundle = benchmark.pedantic(
        engine.retrieve,
        args=(request,),
        kwargs={"now": 30_000},
        rounds=rounds(1_000, 200),
        iterations=1,
        warmup_rounds=20,
    )
    assert bundle.diagnostics.compression_applied
    ms = timings_ms(benchmark)
    record("retrieve 2k cand throttled, p95", np.percentile(ms, 95), "ms", spec=10.0, goal=None)
