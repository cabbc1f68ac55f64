"""Derived position columns and the uniform grid: in step with the records, exact answers."""

from __future__ import annotations

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.spatial.positions import (
    AgentPositions,
    RegionTable,
    distances,
    proximity_of,
)


def positions(engine: MemoryEngine, agent: str) -> AgentPositions:
    am = engine._state.store.get(agent)
    assert am is not None
    return engine._spatial.positions(am)


def test_region_ids_are_interned_in_first_seen_order() -> None:
    table = RegionTable()
    assert table.id_of(None) == -1
    assert [table.id_of("forest"), table.id_of("market"), table.id_of("forest")] == [0, 1, 0]
    assert table.find("market") == 1 and table.find("cave") is None and len(table) == 2


def test_proximity_is_one_at_the_spot_half_at_the_scale_and_falls_off() -> None:
    d = np.array([0.0, 10.0, 30.0, np.inf])
    assert proximity_of(d, 10.0).tolist() == [1.0, 0.5, 0.1, 0.0]
    far = np.array([1e300])
    assert distances(far, far, far, (-1e300, 0.0, 0.0)).tolist() == [np.inf]


def test_columns_follow_adds_removals_updates_and_slot_reuse() -> None:
    engine = MemoryEngine(MemoryConfig(episodic_max=3), embedder=None)
    for i in range(3):
        engine.ingest("a", f"step {i}", metadata={"spatial": {"x": i, "y": 0, "region": "r"}},
                      now=i)
    engine.ingest("a", "no place", layer="semantic", now=3)
    cols = positions(engine, "a")
    cols._check()
    assert cols.positioned == 3
    engine.ingest("a", "step 3", metadata={"spatial": {"x": 9, "y": 9}}, now=4)  # evicts 0
    cols = positions(engine, "a")
    cols._check()
    assert cols.positioned == 3
    engine.forget(["a:0000000001"])
    engine.update("a:0000000002", importance=0.9)
    cols = positions(engine, "a")
    cols._check()
    assert cols.positioned == 2
    rev = cols.next_rev
    assert positions(engine, "a").next_rev == rev  # unchanged: no re-derivation


def test_grid_candidates_hold_every_point_within_the_radius() -> None:
    rng = np.random.default_rng(7)
    engine = MemoryEngine(MemoryConfig(spatial={"cell_size": 4.0, "grid_min_records": 0}),
                          embedder=None)
    pts = rng.uniform(-50, 50, size=(300, 3))
    pts[:10] *= 1e9  # far away: clipped to the edge cells, still found by a wide box
    engine.ingest_many("a", [{"content": f"p{i}", "layer": "spatial",
                              "metadata": {"spatial": {"x": x, "y": y, "z": z}}}
                             for i, (x, y, z) in enumerate(pts.tolist())], now=0)
    cols = positions(engine, "a")
    for trial in range(40):
        at = tuple(rng.uniform(-60, 60, size=3).tolist())
        radius = float(rng.choice([0.0, 1.0, 7.5, 30.0, 1e10]))
        found = cols.candidates(at, radius)  # type: ignore[arg-type]
        assert (np.diff(found) > 0).all(), trial
        slots = np.flatnonzero(cols.has[: cols.am.hi])
        d = distances(cols.x[slots], cols.y[slots], cols.z[slots], at)  # type: ignore[arg-type]
        assert set(slots[d <= radius].tolist()) <= set(found.tolist()), trial


@pytest.mark.parametrize("cell", [0.5, 8.0, 1000.0])
def test_the_grid_answers_as_the_scan_whatever_the_cell_size(cell: float) -> None:
    def answer(size: float, grid_min: int = 0) -> list[tuple[str, float]]:
        settings = {"cell_size": size, "grid_min_records": grid_min}
        engine = MemoryEngine(MemoryConfig(spatial=settings), embedder=None)
        rng = np.random.default_rng(3)
        engine.ingest_many("a", [{"content": f"p{i}", "layer": "spatial", "metadata": {
            "spatial": {"x": float(rng.integers(0, 20)), "y": float(rng.integers(0, 20))}}}
            for i in range(200)], now=0)
        return [(n.record.id, n.distance) for n in engine.nearby("a", (10, 10), radius=6, k=25)]

    assert answer(cell) == answer(3.0, grid_min=10_000)


@pytest.mark.parametrize("seed", [1, 2])
def test_stress_nearby_matches_a_reference_through_random_changes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    engine = MemoryEngine(MemoryConfig(episodic_max=40, spatial={
        "cell_size": 3.0, "grid_min_records": 8}), embedder=None)
    now = 0
    for step in range(60):
        now += int(rng.integers(1, 20))
        roll = rng.random()
        if roll < 0.6:
            spatial = ({"x": float(rng.integers(-20, 20)), "y": float(rng.integers(-20, 20)),
                        "z": float(rng.integers(0, 2))} if rng.random() < 0.8 else None)
            engine.ingest("a", f"event {step}", layer=str(rng.choice(["episodic", "spatial"])),
                          ttl=int(rng.integers(5, 200)) if rng.random() < 0.3 else None,
                          metadata={"spatial": spatial} if spatial else None, now=now)
        elif roll < 0.8 and engine.count("a"):
            victims = engine.records("a")
            engine.forget([victims[int(rng.integers(len(victims)))].id])
        else:
            engine.tick(now)
        at = (float(rng.integers(-20, 20)), float(rng.integers(-20, 20)), 0.0)
        radius = float(rng.choice([0.0, 2.0, 6.0, 50.0]))
        got = [(n.record.id, n.distance) for n in engine.nearby("a", at, radius=radius, k=5,
                                                                 now=now)]
        ref = []
        for r in engine.records("a"):
            sp = r.metadata.spatial
            if sp is None or (r.ttl is not None and r.created_at + r.ttl <= now):
                continue
            d = float(np.sqrt((sp.x - at[0]) ** 2 + (sp.y - at[1]) ** 2 + (sp.z - at[2]) ** 2))
            if d <= radius:
                ref.append((round(d * 1e9), r.id, d))
        assert got == [(rid, d) for _, rid, d in sorted(ref)[:5]], step
        engine._check()
