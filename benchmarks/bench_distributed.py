"""Crowd throughput on Ray shards vs shard count, and the driver's overhead per frame.

A crowd of 1,000 village agents (``determinism.scenario.village_frame``: 0-3 observations
each per frame, about 1,500 items) is served frame by frame: one ``ingest_batch`` of the
frame's items, one ``retrieve_many`` of every agent's request, one ``tick``. Run on the
single-process engine and on ``ShardedMemoryEngine`` with 1 and 2 shards (a local Ray,
``num_cpus=2``: this machine has 2 cores). Reported per shard count:

- crowd throughput: items ingested per second (``ingest_batch``) and bundles served per
  second (``retrieve_many``), from the frames' wall times;
- per-shard compute: the slowest shard's time in each call (measured inside the actor);
- driver overhead per frame: the frame's wall time minus the slowest shard's time in each
  of its three calls (routing, serialization, Ray's round trips, reassembly): goal
  <= 2 ms for 1,000 agents on 2 shards;
- driver CPU per frame: CPU time of the driver's thread in the frame (what the distribution
  costs the host's own loop; Ray's I/O threads excluded).

Each sharded run is measured twice: as three calls per frame, and as one
``ShardedMemoryEngine.frame`` call (the same work, one remote call per shard); then frames
without data (the tick alone: the fixed cost of a frame on the driver).

Bundles come back pickled and are not decoded (``ShardedBundles`` decodes on access); the
decode cost of a whole frame is reported separately. Skipped without Ray.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from targets import SHORT, record

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.determinism.scenario import agent_names, village_frame
from f09_memory.schema.enums import Purpose, Strategy
from f09_memory.schema.retrieval import RetrievalRequest

ray = pytest.importorskip("ray")

from f09_memory.distributed import ShardedMemoryEngine  # noqa: E402

AGENTS = 1_000
WARM = 4 if SHORT else 10
FRAMES = 8 if SHORT else 30
PURPOSES = list(Purpose)
STRATEGIES = [Strategy.BALANCED, Strategy.BALANCED, Strategy.RECENCY, Strategy.IMPORTANCE]


def frames(n: int) -> list[tuple[int, list[dict[str, Any]], list[RetrievalRequest]]]:
    """``n`` village frames of the crowd: (now, ingest items, requests), made up front."""
    rng = np.random.default_rng(11)
    names = agent_names(AGENTS)
    out = []
    for tick in range(n):
        items = village_frame(rng, names)
        requests = [RetrievalRequest(agent_id=name, purpose=PURPOSES[(tick + i) % len(PURPOSES)],
                                     max_tokens=int(rng.integers(100, 800)),
                                     strategy=STRATEGIES[int(rng.integers(0, 4))])
                    for i, name in enumerate(names)]
        out.append(((tick + 1) * 1_000, items, requests))
    return out


@pytest.fixture(scope="module")
def local_ray() -> Any:
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    yield ray
    ray.shutdown()


def _single(plan: list[Any]) -> dict[str, float]:
    engine = MemoryEngine(MemoryConfig(), seed=1)
    walls = []
    for k, (now, items, requests) in enumerate(plan):
        t0 = time.perf_counter()
        engine.ingest_batch(items, now=now)
        engine.retrieve_many(requests, now=now)
        engine.tick(now, budget_ms=2.0)
        if k >= WARM:
            walls.append((time.perf_counter() - t0) * 1000.0)
    return {"frame": float(np.median(walls))}


def _fused(plan: list[Any], shards: int) -> dict[str, float]:
    """The frame as one ``ShardedMemoryEngine.frame`` call (one remote call per shard)."""
    engine = ShardedMemoryEngine(MemoryConfig(), shards=shards, seed=1,
                                 actor_options={"num_cpus": 0})
    rows: list[dict[str, float]] = []
    try:
        for k, (now, items, requests) in enumerate(plan):
            cpu0, t0 = time.thread_time(), time.perf_counter()
            engine.frame(items, requests, now=now, budget_ms=2.0)
            wall = (time.perf_counter() - t0) * 1000.0
            if k >= WARM:
                rows.append({"frame": wall, "cpu": (time.thread_time() - cpu0) * 1000.0,
                             "overhead": wall - engine.last_busy_s * 1000.0,
                             "busy": engine.last_busy_s * 1000.0})
        bare: list[tuple[float, float]] = []  # a frame without data: the fixed cost
        for k in range(FRAMES):
            cpu0, t0 = time.thread_time(), time.perf_counter()
            engine.frame(now=plan[-1][0] + 1_000 * (k + 1), budget_ms=2.0)
            wall = (time.perf_counter() - t0) * 1000.0
            bare.append(((time.thread_time() - cpu0) * 1000.0, wall - engine.last_busy_s * 1e3))
    finally:
        engine.close()
    out = {key: float(np.median([r[key] for r in rows])) for key in rows[0]}
    out["bare_cpu"] = float(np.median([b[0] for b in bare]))
    out["bare_overhead"] = float(np.median([b[1] for b in bare]))
    return out


def _sharded(plan: list[Any], shards: int) -> dict[str, float]:
    """The frame as three calls: ``ingest_batch``, ``retrieve_many``, ``tick``."""
    engine = ShardedMemoryEngine(MemoryConfig(), shards=shards, seed=1,
                                 actor_options={"num_cpus": 0})
    rows: list[dict[str, float]] = []
    try:
        for k, (now, items, requests) in enumerate(plan):
            row: dict[str, float] = {}
            cpu0, t0 = time.thread_time(), time.perf_counter()
            busy = 0.0
            t = time.perf_counter()
            engine.ingest_batch(items, now=now)
            row["ingest"] = (time.perf_counter() - t) * 1000.0
            row["ingest_busy"] = engine.last_busy_s * 1000.0
            busy += engine.last_busy_s
            t = time.perf_counter()
            bundles = engine.retrieve_many(requests, now=now)
            row["retrieve"] = (time.perf_counter() - t) * 1000.0
            row["retrieve_busy"] = engine.last_busy_s * 1000.0
            busy += engine.last_busy_s
            engine.tick(now, budget_ms=2.0)
            busy += engine.last_busy_s
            row["frame"] = (time.perf_counter() - t0) * 1000.0
            row["cpu"] = (time.thread_time() - cpu0) * 1000.0
            row["overhead"] = row["frame"] - busy * 1000.0
            if k == len(plan) - 1:
                t = time.perf_counter()
                list(bundles)
                row["decode"] = (time.perf_counter() - t) * 1000.0
            if k >= WARM:
                rows.append(row)
    finally:
        engine.close()
    out = {key: float(np.median([r[key] for r in rows])) for key in rows[0]}
    out["decode"] = rows[-1]["decode"]
    out["items"] = float(np.mean([len(items) for _, items, _ in plan[WARM:]]))
    return out


def test_crowd_throughput_and_driver_overhead_by_shard_count(benchmark: Any,
                                                             local_ray: Any) -> None:
    plan = frames(WARM + FRAMES)
    results: dict[str, dict[str, float]] = {}

    def run_all() -> None:
        results["single"] = _single(plan)
        for shards in (1, 2):
            results[str(shards)] = _sharded(plan, shards)
            results[f"fused{shards}"] = _fused(plan, shards)

    benchmark.pedantic(run_all, rounds=1, iterations=1)
    record(f"single process, {AGENTS} agents: frame wall p50", results["single"]["frame"],
           "ms", spec=None, goal=None)
    for shards in ("1", "2"):
        r = results[shards]
        name = f"ray {shards} shard(s), {AGENTS} agents"
        record(f"{name}: frame wall p50", r["frame"], "ms", spec=None, goal=None)
        record(f"{name}: ingest_batch items/s", r["items"] / r["ingest"] * 1000.0, "/s",
               spec=None, goal=None, higher_is_better=True)
        record(f"{name}: retrieve_many bundles/s", AGENTS / r["retrieve"] * 1000.0, "/s",
               spec=None, goal=None, higher_is_better=True)
        record(f"{name}: slowest shard retrieve_many", r["retrieve_busy"], "ms", spec=None,
               goal=None)
        record(f"{name}: slowest shard ingest_batch", r["ingest_busy"], "ms", spec=None,
               goal=None)
        record(f"{name}: driver overhead per frame", r["overhead"], "ms", spec=None,
               goal=2.0 if shards == "2" else None)
        record(f"{name}: driver thread CPU per frame", r["cpu"], "ms", spec=None,
               goal=2.0 if shards == "2" else None)
        record(f"{name}: decode all bundles of a frame", r["decode"], "ms", spec=None,
               goal=None)
        f = results[f"fused{shards}"]
        name = f"ray {shards} shard(s), {AGENTS} agents, frame() in one call"
        record(f"{name}: frame wall p50", f["frame"], "ms", spec=None, goal=None)
        record(f"{name}: slowest shard", f["busy"], "ms", spec=None, goal=None)
        record(f"{name}: driver overhead per frame", f["overhead"], "ms", spec=None,
               goal=2.0 if shards == "2" else None)
        record(f"{name}: driver thread CPU per frame", f["cpu"], "ms", spec=None,
               goal=2.0 if shards == "2" else None)
        record(f"ray {shards} shard(s), frame() without data: driver overhead",
               f["bare_overhead"], "ms", spec=None, goal=None)
        record(f"ray {shards} shard(s), frame() without data: driver thread CPU",
               f["bare_cpu"], "ms", spec=None, goal=None)
