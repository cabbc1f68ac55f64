"""Decay (index 5): the vectorized importance-decay pass over one agent's 10,000 records.

No spec figure of its own: CI bounds it by the compaction-cycle budget (15 ms); goal 1 ms.
"""

from __future__ import annotations

import numpy as np
from targets import record, rounds, timings_ms

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.decay import decay_pass


def test_decay_pass_10k(benchmark) -> None:
    benchmark.group = "decay"
    engine = MemoryEngine(MemoryConfig(episodic_max=10_000))
    engine.ingest_many("npc", [{"content": f"event {i}", "importance": 0.5}
                               for i in range(10_000)], now=0)
    am = engine._state.store.get("npc")
    assert am is not None
    now = iter(range(1, 10**9))
    decayed = benchmark.pedantic(lambda: decay_pass(am, next(now), 3_600_000),
                                 rounds=rounds(2_000, 400), iterations=1, warmup_rounds=20)
    assert (10_000,) == decayed.shape
    ms = timings_ms(benchmark)
    record("decay pass 10k records, p95", np.percentile(ms, 95), "ms", spec=15.0, goal=1.0)


def test_tick_10_agents_x_1000(benchmark) -> None:
    benchmark.group = "decay"
    engine = MemoryEngine(MemoryConfig(episodic_max=1_000))
    for a in range(10):
        engine.ingest_many(f"npc-{a}", [f"event {i}" for i in range(1_000)], now=0)
    now = iter(range(1, 10**9))
    benchmark.pedantic(lambda: engine.tick(next(now)), rounds=rounds(500, 100), iterations=1)
    ms = timings_ms(benchmark)
    record("tick (decay+expiry) 10 agents x 1k, p95", np.percentile(ms, 95), "ms", spec=15.0,
           goal=2.0)
