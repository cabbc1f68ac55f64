"""The tick's cost model and item rule: fixed cost, survey, fit-before-start, minimum progress,
and charges that do not depend on slot layout (so save/load does not change a run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine, TickCosts
from f09_memory.determinism.gridworld import GridWorld, grid_engine, host_loop
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.maintenance import WorkBudget
from f09_memory.retention import CompactionCursor, Compactor
from f09_memory.store.agent import STAT_DEADLINE, STAT_REMOVED
from f09_memory.testing import capture_events


def _largest_item(costs: TickCosts, config: MemoryConfig) -> int:
    """The largest item of the grid world's ticks: a summary check scheduling a full batch."""
    return costs.summary_check + costs.summary_task + (
        config.summarization_batch_size * costs.summary_select)


def test_an_idle_tick_costs_its_fixed_cost_and_the_survey() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    engine.ingest_batch([{"agent_id": f"a{i:03d}", "content": "x"} for i in range(50)], now=0)
    costs = engine.config.tick_costs
    assert costs.tick + 50 * costs.agent == engine.tick(1, budget_ms=1.0).used_units
    with capture_events(engine.bus, "memory:decay:applied") as log:
        report = engine.tick(2, budget_ms=1.0)
    assert 50 == len(log.events)  # built only when someone listens, and then charged
    assert costs.tick + 50 * (costs.agent + costs.event) == report.used_units


def test_no_item_starts_unless_it_fits_but_the_ticks_first() -> None:
    engine = grid_engine(retention_policy={"semantic_max": 12, "social_max": 10,
                                           "procedural_max": 5, "protected_min": 3})
    costs, config = engine.config.tick_costs, engine.config
    world = GridWorld(agents=40, seed=9)
    fixed = costs.tick + 40 * costs.agent
    largest = _largest_item(costs, config)
    for k, budget_ms in enumerate((0.05, 0.5, 2.0)):
        units = int(budget_ms * config.work_units_per_ms)
        with capture_events(engine.bus, "memory:tick") as log:
            for _ in host_loop(engine, world, 30, budget_ms=budget_ms, start=30 * k):
                pass
        used = [e.used_units for e in log.events]
        assert 30 == len(used) and max(used) > fixed  # work was done
        # within the budget, or over it by the tick's first (and then only) item
        assert all(u <= max(units, fixed + largest) for u in used)
        engine._check()


def test_a_budget_below_the_fixed_cost_still_does_one_item_a_tick() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    for i in range(5):
        engine.ingest_many(f"npc-{i}", [{"content": f"spark {j}", "ttl": 1} for j in range(10)],
                           now=0)
    reports = [engine.tick(t, budget_ms=0.001) for t in range(1, 60)]
    assert all(r.expired == 1 for r in reports[:50])  # one removal per tick, no more
    assert 0 == engine.count() and 0 == reports[-1].backlog.agents_due
    engine._check()


def test_the_survey_matrix_follows_the_agents() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    for i in (3, 1, 2, 0):  # created out of id order
        engine.ingest(f"npc-{i}", "hello", ttl=10 + i, now=0)
    store = engine._state.store
    agents, ids, stats = store.survey()
    assert ["npc-0", "npc-1", "npc-2", "npc-3"] == ids
    assert [10, 11, 12, 13] == stats[:, STAT_DEADLINE].tolist()
    engine.forget(record_ids=[agents[0].id_of(0)])
    assert 1 == store.survey()[2][0, STAT_REMOVED] == agents[0].removed_count
    with pytest.raises(ValueError):  # the by-row view is read only
        store.stat_column(STAT_REMOVED)[0] = 5
    for i in range(4, 200):  # the matrix grows: every agent's row moves with it
        engine.ingest(f"npc-{i:03d}", "hello", now=1)
    store._check()
    assert 200 == store.survey()[2].shape[0]


def test_strict_compaction_never_overshoots_and_the_loose_one_always_removes() -> None:
    def loaded() -> MemoryEngine:
        engine = MemoryEngine(MemoryConfig(hard_cap_slack=None, retention_policy={
            "semantic_max": 10, "protected_min": 2}), embedder=None)
        engine.ingest_many("a", [{"content": f"fact {i}", "layer": "semantic"}
                                 for i in range(30)], now=0)
        return engine

    for strict, expected in ((True, 0), (False, 1)):
        engine = loaded()
        am = engine._state.store.get("a")
        assert am is not None
        result = Compactor(engine.config).compact_slice(am, 0, 10, CompactionCursor(),
                                                        strict=strict)
        assert expected == len(result.removed_records)
        assert result.scanned_units <= 10 or not strict


def _churn_run(tmp_path: Path | None, split_at: int | None) -> tuple[str, list[int]]:
    """A run with TTL expiry, summaries and compaction (freed slots everywhere); saved and
    loaded at ``split_at`` (a loaded engine's slots are compacted)."""
    engine = grid_engine(retention_policy={"semantic_max": 3, "social_max": 4,
                                           "procedural_max": 5, "protected_min": 1},
                         hard_cap_slack=1.0)
    world = GridWorld(agents=24, seed=21)
    used: list[int] = []
    step = 0
    while step < 40:
        now = (step + 1) * 1_000
        engine.ingest_batch(world.step() + [
            {"agent_id": f"agent-{k:04d}", "content": f"spark {step}", "ttl": 1_500}
            for k in range(24)], now=now)
        if step % 10 == 9:
            engine.set_pressure("throttle" if step % 20 == 9 else "normal")
        used.append(engine.tick(now, budget_ms=1.0 if step % 3 else 0.3).used_units)
        step += 1
        if step == split_at and tmp_path is not None:
            store = engine._state.store
            assert any(am.hi > am.live for am in store)  # slots were freed: layouts differ
            engine.save(tmp_path / "mid.f09")
            engine = MemoryEngine.load(tmp_path / "mid.f09")
            assert all(am.hi == am.live for am in engine._state.store)
    return engine.state_hash(), used


def test_save_and_load_mid_run_then_continue_ticks_exactly_like_the_uninterrupted_run(
        tmp_path: Path) -> None:
    whole = _churn_run(None, None)
    for split_at in (13, 27):
        assert whole == _churn_run(tmp_path, split_at)  # same hash, same charge every tick


def test_tick_rejects_bad_budgets_and_leaves_the_state_unchanged() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    engine.ingest("npc", "hello", ttl=5, now=0)
    before = engine.state_hash()
    for bad in (0, -1.0, float("nan"), "fast", True):
        with pytest.raises(MemoryEngineError) as info:
            engine.tick(10, budget_ms=bad)
        assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert before == engine.state_hash() and 1 == engine.count()
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig(tick_costs={"summary_task": 0})
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    with pytest.raises(MemoryEngineError):
        MemoryConfig(tick_costs={"mine_slice": -5})


def test_work_budget_admits_the_first_item_and_then_only_what_fits() -> None:
    budget = WorkBudget(100)
    budget.spend(150)  # fixed costs past the budget
    assert budget.spent and budget.admits(10_000)  # the tick's first item: always
    budget.take(10_000)
    assert not budget.admits(1) and 1 == budget.items
    loose = WorkBudget(None)
    loose.take(5)
    assert loose.admits(10**9) and loose.left is None
    fits = WorkBudget(100)
    fits.take(40)
    assert fits.admits(60) and not fits.admits(61)


@pytest.mark.parametrize("seed", [0, 1])
def test_stress_ticks_keep_the_survey_and_the_store_in_step(seed: int) -> None:
    rng = np.random.default_rng(seed)
    engine = MemoryEngine(MemoryConfig(episodic_max=30, hard_cap_slack=0.5, retention_policy={
        "semantic_max": 8, "protected_min": 2}), embedder=None)
    now = 0
    for _ in range(120):
        now += int(rng.integers(1, 2_000))
        op = rng.random()
        agent = f"npc-{int(rng.integers(0, 12)):02d}"
        if op < 0.6:
            items: list[dict[str, Any]] = [
                {"content": f"{agent} saw {int(rng.integers(0, 50))}",
                 "layer": str(rng.choice(["episodic", "semantic"])),
                 "ttl": int(rng.integers(1, 5_000)) if rng.random() < 0.3 else None}
                for _ in range(int(rng.integers(1, 6)))]
            engine.ingest_many(agent, [{k: v for k, v in it.items() if v is not None}
                                       for it in items], now=now)
        elif op < 0.7 and engine.count(agent):
            engine.forget(agent_id=agent)
        else:
            engine.tick(now, budget_ms=float(rng.choice([0.01, 0.3, 3.0])))
        engine._check()


def test_a_loaded_engine_is_charged_like_the_one_it_was_saved_from(tmp_path: Path) -> None:
    # freed slots persist in the original (hi > live), a loaded engine's are compacted
    engine = MemoryEngine(MemoryConfig(hard_cap_slack=None, retention_policy={
        "semantic_max": 10, "protected_min": 2}), embedder=None)
    for agent in ("a", "b"):
        engine.ingest_many(agent, [{"content": f"fact {i}", "layer": "semantic",
                                    "importance": (i % 7) / 7} for i in range(40)]
                           + [{"content": f"saw {i}", "ttl": 50} for i in range(60)], now=0)
    engine.tick(100)  # the sparks expire, compaction prunes to the cap: 90 free slots each
    for agent in ("a", "b"):  # over the cap again (20 of the free slots reused)
        engine.ingest_many(agent, [{"content": f"news {i}", "layer": "semantic"}
                                   for i in range(20)], now=100)
    assert all(am.hi - am.live == 70 for am in engine._state.store)
    engine.save(tmp_path / "a.f09")
    loaded = MemoryEngine.load(tmp_path / "a.f09", embedder=None)
    runs = [[e.tick(t, budget_ms=0.3).used_units for t in range(101, 106)]
            for e in (engine, loaded)]
    assert runs[0] == runs[1] and engine.state_hash() == loaded.state_hash()
