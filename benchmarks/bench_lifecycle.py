"""Lifecycle (index 10, 13): summarization overhead, compaction slices, growth plateau (QG6).

Spec section 15: summarization orchestration for a batch of 25 <= 2 ms (LLM excluded);
compaction cycle < 15 ms. Goals: batch of 25 <= 0.2 ms; each compaction slice <= 1 ms.
"""

from __future__ import annotations

import itertools

import numpy as np
from targets import SHORT, record, rounds, timings_ms

from f09_memory import MemoryConfig, MemoryEngine

MIN = 60_000
TEXT = "Mara traded iron nails with Borin at the market while the rain fell on the well."


def lifecycle_engine() -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(
        episodic_window=10 * MIN, summarization_min_interval_ms=0, summarization_batch_size=25,
        summarization_keep_recent=5, summarization_max_importance=0.9), embedder=None)
    engine.ingest_many("mara", [{"content": f"Traded iron nails with Borin at the market, "
                                            f"day {i}. It rained.", "importance": 0.2,
                                 "tags": ["market"]} for i in range(40)], now=0)
    engine.tick(30 * MIN)  # decay pass, so records qualify; schedules the first task
    engine.summarization.poll()
    for task in engine.summarization.pending():
        engine.summarization.fail(task.id, "setup")
    return engine


def test_summarization_batch_of_25_overhead(benchmark) -> None:
    benchmark.group = "lifecycle"

    def setup():
        return (lifecycle_engine(),), {}

    def run(engine: MemoryEngine) -> None:
        task = engine.summarization.request("mara", now=30 * MIN)
        assert task is not None and 25 == len(task.source_ids)
        engine.summarization.poll()
        outcome = engine.summarization.complete(task.id, TEXT)
        assert outcome.replaces_sources

    benchmark.pedantic(run, setup=setup, rounds=rounds(200, 40), iterations=1)
    ms = timings_ms(benchmark)
    # spec 15: <= 2 ms. Short mode (CI on a shared 2-core VM, whose timings move by up to 2x
    # between identical runs) enforces it with a 1.5x margin; the full mode as written.
    record("summarization batch of 25 (no LLM), p50", np.percentile(ms, 50), "ms",
           spec=3.0 if SHORT else 2.0, goal=0.2)
    record("summarization batch of 25 (no LLM), p95", np.percentile(ms, 95), "ms", spec=None,
           goal=None)


def test_compaction_slices_for_an_agent_with_10k_records(benchmark) -> None:
    benchmark.group = "lifecycle"
    clock = itertools.count(1)

    def setup():
        # a bulk load past the cap (no hard cap at ingest): ticks compact it in slices
        engine = MemoryEngine(MemoryConfig(retention_policy={"semantic_max": 400},
                                           hard_cap_slack=None), embedder=None)
        engine.ingest_many("npc", [{"content": f"fact {i}", "layer": "semantic",
                                    "importance": (i % 100) / 100} for i in range(10_000)],
                           now=0)
        return (engine,), {}

    slices: list[float] = []

    def run(engine: MemoryEngine) -> None:
        import time

        while engine.count("npc", "semantic") > 400:
            t0 = time.perf_counter()
            engine.tick(next(clock), budget_ms=1.0)
            slices.append((time.perf_counter() - t0) * 1000.0)

    benchmark.pedantic(run, setup=setup, rounds=rounds(5, 2), iterations=1)
    per_slice = np.array(slices)
    record("compaction slice (10k records, budget 1 ms), p95", np.percentile(per_slice, 95),
           "ms", spec=15.0, goal=1.0)
    record("compaction slices per 10k->400 cycle", len(slices) / rounds(5, 2), "", spec=None,
           goal=None)


def test_live_records_plateau_over_a_long_run(benchmark) -> None:
    benchmark.group = "lifecycle"
    total = 50_000 if SHORT else 200_000
    layers = ["episodic", "semantic", "social", "procedural"]

    def run() -> list[int]:
        engine = MemoryEngine(MemoryConfig(episodic_max=500), embedder=None)
        sizes = []
        per_tick = 400  # 300 of them in capped layers: compaction must prune as many
        for tick in range(total // per_tick):
            now = tick * 10 * MIN  # 10 simulated minutes per tick
            for a in range(4):
                engine.ingest_many(f"npc-{a}", [
                    {"content": f"event {tick}-{i}", "layer": layers[(i + a) % 4],
                     "importance": ((tick * 7 + i) % 100) / 100}
                    for i in range(per_tick // 4)], now=now)
            engine.tick(now, budget_ms=5.0)
            sizes.append(engine.count())
        return sizes

    sizes = benchmark.pedantic(run, rounds=1, iterations=1)
    cap = 4 * (500 + 400 + 300 + 250)
    record(f"live records after {total:,} ingested (cap {cap})", sizes[-1], "", spec=cap + 500,
           goal=cap)
    half = sizes[len(sizes) // 2:]
    record("live-record drift over the second half", max(half) - min(half), "", spec=None,
           goal=None)
