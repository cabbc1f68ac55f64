from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.decay import importance_decayed
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.retention import (
    REMOVAL_COST_UNITS,
    AgentCompaction,
    CompactionCursor,
    Compactor,
    compact_store,
)
from f09_memory.schema import MemoryLayer
from f09_memory.store import AgentMemory, MemoryStore

SEM, PROC, SOC = MemoryLayer.SEMANTIC.code, MemoryLayer.PROCEDURAL.code, MemoryLayer.SOCIAL.code


def make_engine(semantic: int | None = 400, social: int | None = 300,
                procedural: int | None = 250, *, protected_min: int = 10,
                half_life: int = 1_000, episodic_max: int = 1200) -> MemoryEngine:
    config = MemoryConfig(
        episodic_max=episodic_max, decay_half_life_ms=half_life, hard_cap_slack=None,
        retention_policy={"semantic_max": semantic, "social_max": social,
                          "procedural_max": procedural, "protected_min": protected_min},
    )
    return MemoryEngine(config, embedder=None)


def agent(engine: MemoryEngine, agent_id: str = "a") -> AgentMemory:
    am = engine._state.store.get(agent_id)
    assert am is not None
    return am


def store(engine: MemoryEngine) -> MemoryStore:
    return engine._state.store


def live_keys(am: AgentMemory, layer: MemoryLayer | None = None) -> set[int]:
    return set(am.keys_in_time_order(layer))


def fill(engine: MemoryEngine, agent_id: str, n: int, seed: int, *, now: int = 0,
         layers: tuple[str, ...] = ("semantic", "social", "procedural", "episodic")) -> None:
    rng = np.random.default_rng(seed)
    items: list[dict[str, Any]] = [
        {"content": f"memory {i}", "layer": layers[int(rng.integers(len(layers)))],
         "importance": round(float(rng.random()), 2), "flagged": bool(rng.random() < 0.1)}
        for i in range(n)
    ]
    engine.ingest_many(agent_id, items, now=now)


# ---------------------------------------------------------------- caps and order


def test_over_cap_reports_the_excess_of_each_capped_layer() -> None:
    engine = make_engine(12, 11, None, protected_min=5)
    engine.ingest_many("a", [{"content": f"s{i}", "layer": "semantic"} for i in range(15)], now=0)
    engine.ingest_many("a", [{"content": f"o{i}", "layer": "social"} for i in range(11)], now=0)
    engine.ingest_many("a", [{"content": f"p{i}", "layer": "procedural"} for i in range(99)],
                       now=0)
    compactor = Compactor(engine.config)
    assert (SEM, SOC) == compactor.capped_codes
    assert {SEM: 3} == compactor.over_cap(agent(engine))
    assert compactor.needs_compaction(agent(engine))


def test_caps_hold_after_an_unbounded_slice() -> None:
    engine = make_engine(20, 15, 10)
    fill(engine, "a", 400, seed=3)
    am = agent(engine)
    compactor = Compactor(engine.config)
    before = am.layer_counts.copy()
    result = compactor.compact_slice(am, 50, None, CompactionCursor())
    am._check()
    assert result.done
    assert {} == compactor.over_cap(am)
    assert (20, 10, 15) == (am.layer_counts[SEM], am.layer_counts[PROC], am.layer_counts[SOC])
    assert int((before - am.layer_counts).sum()) == len(result.removed_records)
    assert before[MemoryLayer.EPISODIC.code] == am.layer_counts[MemoryLayer.EPISODIC.code]
    # each layer scan is charged by the live records when the slice started (not slots)
    assert (len(result.removed_records) * REMOVAL_COST_UNITS + 3 * int(before.sum())
            == result.scanned_units)


def test_lowest_decayed_score_is_pruned_first_hand_checked() -> None:
    engine = make_engine(3, None, None, protected_min=1, half_life=1_000)
    # key: (importance, anchor) -> score at now=1000: importance * exp(-(1000 - anchor)/1000)
    spec = [(0.9, 0), (0.5, 1000), (0.2, 1000), (0.8, 500), (0.3, 900)]
    for i, (imp, at) in enumerate(spec):
        engine.ingest("a", f"fact {i}", layer="semantic", importance=imp, now=at)
    scores = [imp * math.exp(-(1000 - at) / 1000) for imp, at in spec]
    assert [0.331, 0.5, 0.2, 0.485, 0.271] == [round(s, 3) for s in scores]
    am = agent(engine)
    compactor = Compactor(engine.config)
    # ascending score; key 1 (0.5, the highest) is the one protected record
    assert [2, 4, 0, 3] == compactor.select(am, SEM, 1000, 5).tolist()
    result = compactor.compact_slice(am, 1000, None, CompactionCursor())
    am._check()
    assert ["a:0000000002", "a:0000000004"] == [r.id for r in result.removed_records]
    assert {0, 1, 3} == live_keys(am, MemoryLayer.SEMANTIC)


def test_the_score_is_the_decay_modules_importance_decayed() -> None:
    engine = make_engine(10, None, None, protected_min=0, half_life=700)
    fill(engine, "a", 60, seed=1, layers=("semantic",))
    am = agent(engine)
    slots = am.live_slots()
    score = importance_decayed(am.importance[slots], am.anchor[slots], 900, 700)
    ranked = np.rint(score * engine.config.score_quantum).astype(np.int64)
    flagged = am.flagged[slots]
    expected = sorted(zip(flagged.tolist(), ranked.tolist(), am.key[slots].tolist(),
                          strict=True))
    got = Compactor(engine.config).select(am, SEM, 900, 50).tolist()
    assert [k for _, _, k in expected[:50]] == got


def test_equal_scores_are_pruned_lowest_key_first() -> None:
    engine = make_engine(10, None, None, protected_min=2)
    engine.ingest_many("a", [{"content": f"same {i}", "layer": "semantic", "importance": 0.5}
                             for i in range(16)], now=100)
    am = agent(engine)
    result = Compactor(engine.config).compact_slice(am, 100, None, CompactionCursor())
    am._check()
    assert [f"a:{k:010d}" for k in range(6)] == [r.id for r in result.removed_records]
    assert set(range(6, 16)) == live_keys(am, MemoryLayer.SEMANTIC)


def test_flagged_records_are_kept_while_unflagged_ones_are_left() -> None:
    engine = make_engine(4, None, None, protected_min=1)
    for i, (imp, flagged) in enumerate([(0.1, True), (0.2, True), (0.6, False), (0.7, False),
                                        (0.8, False), (0.9, False)]):
        engine.ingest("a", f"f{i}", layer="semantic", importance=imp, flagged=flagged, now=0)
    am = agent(engine)
    result = Compactor(engine.config).compact_slice(am, 0, None, CompactionCursor())
    am._check()
    assert [2, 3] == [int(r.id[-10:]) for r in result.removed_records]
    assert {0, 1, 4, 5} == live_keys(am, MemoryLayer.SEMANTIC)


def test_flagged_records_go_only_when_no_unprotected_unflagged_one_is_left() -> None:
    engine = make_engine(2, None, None, protected_min=1)
    for i, (imp, flagged) in enumerate([(0.1, True), (0.2, True), (0.3, True), (0.5, False),
                                        (0.9, False)]):
        engine.ingest("a", f"f{i}", layer="semantic", importance=imp, flagged=flagged, now=0)
    am = agent(engine)
    result = Compactor(engine.config).compact_slice(am, 0, None, CompactionCursor())
    am._check()
    # key 4 (0.9) is protected; key 3 (unflagged) goes first, then the lowest flagged ones
    assert [3, 0, 1] == [int(r.id[-10:]) for r in result.removed_records]
    assert {2, 4} == live_keys(am, MemoryLayer.SEMANTIC)


def test_the_protected_minimum_keeps_the_highest_scores_even_against_flags() -> None:
    engine = make_engine(3, None, None, protected_min=3)
    for i, (imp, flagged) in enumerate([(0.9, False), (0.1, True), (0.8, False), (0.2, True),
                                        (0.7, False)]):
        engine.ingest("a", f"p{i}", layer="semantic", importance=imp, flagged=flagged, now=0)
    am = agent(engine)
    compactor = Compactor(engine.config)
    assert [1, 3] == compactor.select(am, SEM, 0, 99).tolist()  # never more than n - K
    compactor.compact_slice(am, 0, None, CompactionCursor())
    am._check()
    assert {0, 2, 4} == live_keys(am, MemoryLayer.SEMANTIC)
    assert [] == compactor.select(am, SEM, 0, 99).tolist()


def test_recent_records_outrank_old_ones_of_equal_importance() -> None:
    engine = make_engine(10, None, None, protected_min=10, half_life=1_000)
    for t in range(0, 15_000, 1_000):
        engine.ingest("a", f"at {t}", layer="semantic", importance=0.5, now=t)
    am = agent(engine)
    Compactor(engine.config).compact_slice(am, 15_000, None, CompactionCursor())
    am._check()
    assert set(range(5, 15)) == live_keys(am, MemoryLayer.SEMANTIC)


# ---------------------------------------------------------------- budget and cursor


def test_budgeted_slices_end_like_one_unbounded_call() -> None:
    engines = [make_engine(40, 30, 20), make_engine(40, 30, 20)]
    for e in engines:
        fill(e, "a", 900, seed=11)
    whole, sliced = agent(engines[0]), agent(engines[1])
    compactor = Compactor(engines[0].config)
    one = compactor.compact_slice(whole, 777, None, CompactionCursor())
    whole._check()
    cursor = CompactionCursor()
    removed: list[str] = []
    budget = 12 * REMOVAL_COST_UNITS + 300
    calls = 0
    while True:
        result = compactor.compact_slice(sliced, 777, budget, cursor)
        sliced._check()
        calls += 1
        assert len(result.removed_records) <= budget // REMOVAL_COST_UNITS
        assert len(result.removed_records) >= 1 or result.done
        removed.extend(r.id for r in result.removed_records)
        if result.done:
            break
    assert calls > 10
    assert [r.id for r in one.removed_records] == removed
    assert live_keys(whole) == live_keys(sliced)
    assert CompactionCursor("a", 0) == cursor


def test_cursor_resumes_inside_the_layer_it_stopped_in() -> None:
    engine = make_engine(10, 10, 10)
    fill(engine, "a", 120, seed=2, layers=("semantic", "social", "procedural"))
    am = agent(engine)
    compactor = Compactor(engine.config)
    cursor = CompactionCursor()
    excess = compactor.over_cap(am)
    first = compactor.compact_slice(am, 0, excess[SEM] * REMOVAL_COST_UNITS + am.live
                                    + REMOVAL_COST_UNITS, cursor)
    am._check()
    assert not first.done
    assert {"agentId": "a", "layerPos": 1} == cursor.get_state()  # procedural, partly done
    assert SEM not in compactor.over_cap(am)


def test_a_positive_budget_below_one_removal_still_removes_exactly_one() -> None:
    engine = make_engine(10, None, None)
    fill(engine, "a", 30, seed=0, layers=("semantic",))
    am = agent(engine)
    compactor = Compactor(engine.config)
    expected = compactor.select(am, SEM, 0, 1).tolist()
    for budget in (1, REMOVAL_COST_UNITS - 1):
        cursor = CompactionCursor()
        before = live_keys(am)
        result = compactor.compact_slice(am, 0, budget, cursor)
        am._check()
        assert [f"a:{k:010d}" for k in expected] == [r.id for r in result.removed_records]
        assert before - set(expected) == live_keys(am)
        # the overshoot is one scan plus one removal, and the cursor stays in the layer
        assert (len(before) + REMOVAL_COST_UNITS, False) == (result.scanned_units,
                                                             result.done)
        assert {"agentId": "a", "layerPos": 0} == cursor.get_state()
        expected = compactor.select(am, SEM, 0, 1).tolist()


def test_a_zero_budget_removes_nothing() -> None:
    engine = make_engine(10, None, None)
    fill(engine, "a", 30, seed=0, layers=("semantic",))
    am = agent(engine)
    result = Compactor(engine.config).compact_slice(am, 0, 0, CompactionCursor())
    assert ([], 0, False) == (result.removed_records, result.scanned_units, result.done)
    assert 30 == am.live


def test_one_removal_fits_even_when_the_scan_exceeds_the_budget() -> None:
    engine = make_engine(10, None, None)
    fill(engine, "a", 3_000, seed=0, layers=("semantic",))
    am = agent(engine)
    result = Compactor(engine.config).compact_slice(am, 0, REMOVAL_COST_UNITS,
                                                    CompactionCursor())
    am._check()
    assert 1 == len(result.removed_records)


def test_custom_removal_cost_sets_the_removals_per_call() -> None:
    engine = make_engine(10, None, None)
    fill(engine, "a", 200, seed=4, layers=("semantic",))
    am = agent(engine)
    compactor = Compactor(engine.config, removal_cost_units=7)
    live = am.live
    result = compactor.compact_slice(am, 0, live + 70, CompactionCursor())
    assert 10 == len(result.removed_records)
    assert live + 70 == result.scanned_units


def test_the_cursor_state_round_trips_and_rejects_garbage() -> None:
    cursor = CompactionCursor("npc-7", 2)
    other = CompactionCursor()
    other.set_state(cursor.get_state())
    assert cursor == other
    for bad in [{"agentId": 3, "layerPos": 0}, {"agentId": "x", "layerPos": -1},
                {"agentId": "x"}, {"agentId": None, "layerPos": True}, ["x", 0]]:
        with pytest.raises(MemoryEngineError) as info:
            other.set_state(bad)  # type: ignore[arg-type]
        assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
        assert cursor == other


@pytest.mark.parametrize("budget", [-1, 1.5, True])
def test_bad_budgets_raise_input_invalid(budget: Any) -> None:
    engine = make_engine()
    engine.ingest("a", "x", layer="semantic")
    with pytest.raises(MemoryEngineError) as info:
        Compactor(engine.config).compact_slice(agent(engine), 0, budget, CompactionCursor())
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    with pytest.raises(MemoryEngineError):
        compact_store(store(engine), 0, budget, CompactionCursor(), Compactor(engine.config))
    with pytest.raises(MemoryEngineError):
        Compactor(engine.config, removal_cost_units=0)


# ---------------------------------------------------------------- store level


def build_store(seed: int) -> MemoryEngine:
    engine = make_engine(30, 20, 15)
    for i, name in enumerate(["delta", "alpha", "charlie", "bravo", "echo"]):
        fill(engine, name, 150 + 40 * i, seed=seed + i)
    return engine


def test_store_cursor_resumes_across_agents_in_id_order() -> None:
    whole, sliced = build_store(5), build_store(5)
    compactor = Compactor(whole.config)
    full = compact_store(store(whole), 500, None, CompactionCursor(), compactor)
    store(whole)._check()
    assert full.cycle_complete
    assert ["alpha", "bravo", "charlie", "delta", "echo"] == [a.agent_id for a in full]

    cursor = CompactionCursor()
    visited: list[tuple[str, int]] = []
    removed: list[str] = []
    budget = 40 * REMOVAL_COST_UNITS  # about 40 removals per call: a dozen calls in all
    for _ in range(200):
        out = compact_store(store(sliced), 500, budget, cursor, compactor)
        store(sliced)._check()
        # a slice may overshoot by one scan plus one removal
        assert out.used_units <= budget + max(am.hi for am in store(sliced)) + REMOVAL_COST_UNITS
        for entry in out:
            assert isinstance(entry, AgentCompaction)
            agent_id, recs, remaining = entry
            assert agent(sliced, agent_id).live == remaining
            visited.append((agent_id, len(recs)))
            removed.extend(r.id for r in recs)
        state = cursor.get_state()  # a save/load between calls resumes the same way
        cursor = CompactionCursor()
        cursor.set_state(state)
        if out.cycle_complete:
            break
    assert out.cycle_complete
    assert CompactionCursor() == cursor
    names = [a for a, _ in visited]
    assert names == sorted(names) and len(set(names)) == 5 and len(names) > 5
    assert [r.id for a in full for r in a.removed] == removed
    for am in store(whole):
        assert live_keys(am) == live_keys(agent(sliced, am.agent_id))


def test_an_agent_created_mid_pass_is_visited_by_the_same_pass() -> None:
    engine = make_engine(10, None, None)
    for name in ["b", "d"]:
        fill(engine, name, 60, seed=1, layers=("semantic",))
    compactor = Compactor(engine.config)
    cursor = CompactionCursor()
    out = compact_store(store(engine), 0, 1 + 20 * REMOVAL_COST_UNITS + 200, cursor,
                        compactor)
    assert ["b"] == [a.agent_id for a in out] and not out.cycle_complete
    fill(engine, "a", 60, seed=2, layers=("semantic",))  # sorts before the cursor
    fill(engine, "c", 60, seed=3, layers=("semantic",))  # sorts after it
    out = compact_store(store(engine), 0, None, cursor, compactor)
    store(engine)._check()
    assert ["b", "c", "d"] == [a.agent_id for a in out] and out.cycle_complete
    out = compact_store(store(engine), 0, None, cursor, compactor)
    assert ["a"] == [a.agent_id for a in out]


def test_store_pass_with_nothing_over_cap_is_one_unit_per_agent() -> None:
    engine = make_engine()
    for name in "xyz":
        engine.ingest(name, "hello", layer="semantic")
    out = compact_store(store(engine), 0, 100, CompactionCursor(), Compactor(engine.config))
    assert ([], 3, True) == (list(out), out.used_units, out.cycle_complete)
    out = compact_store(MemoryStore(10), 0, 100, CompactionCursor(), Compactor(engine.config))
    assert out.cycle_complete and 0 == out.used_units


def test_same_state_and_calls_give_the_same_removals() -> None:
    runs = []
    for _ in range(2):
        engine = build_store(9)
        cursor = CompactionCursor()
        ids: list[str] = []
        for step in range(40):
            out = compact_store(store(engine), 100 * step, 1_500, cursor,
                                Compactor(engine.config))
            ids.extend(r.id for a in out for r in a.removed)
        runs.append((ids, engine.state_hash()))
    assert runs[0] == runs[1]


# ---------------------------------------------------------------- stress and plateau


def reference_victims(am: AgentMemory, code: int, now: int, count: int, protected: int,
                      half_life: int, quantum: int) -> list[int]:
    slots = [s for s in am.slot_of.values() if int(am.layer[s]) == code]
    if not slots:
        return []
    arr = np.array(slots)
    score = importance_decayed(am.importance[arr], am.anchor[arr], now, half_life)
    ranked = [int(q) for q in np.rint(score * quantum).astype(np.int64)]
    rows = sorted(zip(ranked, [int(am.key[s]) for s in slots], [bool(am.flagged[s])
                                                                for s in slots], strict=True))
    keep = min(protected, len(rows))
    cands = rows[: len(rows) - keep]
    cands.sort(key=lambda r: (r[2], r[0], r[1]))
    return [k for _, k, _ in cands[:count]]


def reference_budget(excesses: list[int], budget: int, scan: int, cost: int) -> tuple[int, int]:
    """Return (removals, units) of one budgeted slice over layers with these excesses.

    Each over-cap layer step, while any budget is left, costs one scan and removes
    ``max(1, (left - scan) // cost)`` records (at most the layer's excess), so a positive
    budget always removes at least one; a layer left partly pruned ends the slice.
    """
    removals = used = 0
    for excess in excesses:
        if excess <= 0:
            continue
        left = budget - used
        if left <= 0:
            break
        take = min(excess, max(1, (left - scan) // cost))
        removals += take
        used += scan + take * cost
        if take < excess:
            break
    return removals, used


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_stress_random_ingest_and_slices_match_a_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    protected = int(rng.integers(0, 8))
    engine = make_engine(8 + int(rng.integers(0, 10)), 8 + int(rng.integers(0, 10)),
                         8 + int(rng.integers(0, 10)), protected_min=protected,
                         half_life=int(rng.integers(100, 5_000)), episodic_max=15)
    compactor = Compactor(engine.config, removal_cost_units=int(rng.integers(1, 60)))
    cursor = CompactionCursor()
    layers = ["episodic", "semantic", "social", "procedural", "spatial"]
    now = 0
    for _ in range(150):
        now += int(rng.integers(0, 400))
        name = f"agent-{int(rng.integers(4))}"
        op = rng.random()
        if op < 0.55:
            items = [{"content": f"m {now} {j}", "layer": layers[int(rng.integers(5))],
                      "importance": round(float(rng.random()), 3),
                      "flagged": bool(rng.random() < 0.2)}
                     for j in range(int(rng.integers(1, 12)))]
            engine.ingest_many(name, items, now=now)
        elif op < 0.8:
            am = store(engine).get(name)
            if am is None:
                continue
            excess = compactor.over_cap(am)
            codes = compactor.capped_codes
            start = cursor.layer_pos % len(codes) if cursor.agent_id == name else 0
            order = codes[start:] + codes[:start]
            expected = []  # the unbounded order, visiting layers cyclically from the cursor
            for code in order:
                expected.extend(reference_victims(
                    am, code, now, excess.get(code, 0), protected,
                    engine.config.decay_half_life_ms, engine.config.score_quantum))
            budget = int(rng.integers(0, 2_000))
            cost, scan = compactor.removal_cost_units, am.live
            allowed, units = reference_budget([excess.get(code, 0) for code in order], budget,
                                              scan, cost)
            result = compactor.compact_slice(am, now, budget, cursor)
            am._check()
            got = [int(r.id[-10:]) for r in result.removed_records]
            assert (allowed, units) == (len(got), result.scanned_units)
            if excess and budget > 0:  # progress, overshooting by one scan and one removal
                assert 1 <= len(got) and units <= budget + scan + cost
            assert expected[: len(got)] == got  # a budgeted slice is a prefix of it
            assert result.done == (got == expected)
        else:
            out = compact_store(store(engine), now, int(rng.integers(0, 3_000)), cursor,
                                compactor)
            engine._check()
            for entry in out:
                assert agent(engine, entry.agent_id).live == entry.remaining
    compact_store(store(engine), now, None, CompactionCursor(), compactor)
    engine._check()
    for am in store(engine):
        assert {} == compactor.over_cap(am)
        assert am.ring.live <= 15


def test_qg6_memory_plateaus_under_retention_and_compaction() -> None:
    caps = {MemoryLayer.SEMANTIC: 400, MemoryLayer.SOCIAL: 300, MemoryLayer.PROCEDURAL: 250}
    episodic_max = 600
    engine = make_engine(400, 300, 250, half_life=3_600_000, episodic_max=episodic_max)
    compactor = Compactor(engine.config)
    cursor = CompactionCursor()
    rng = np.random.default_rng(2024)
    agents = ["guard", "merchant", "smith"]
    layers = np.array(["semantic", "social", "procedural", "episodic"])
    tick_ms = 10 * 60_000  # a simulated tick every 10 minutes, 5 simulated days
    ticks = 5 * 24 * 6
    per_tick = 94
    # ~300 removals a tick for the ~226 capped records the three agents ingest, plus the
    # scans (three capped layers of ~1.6k slots per agent)
    budget = 300 * REMOVAL_COST_UNITS + len(agents) * 3 * 2_000
    total = 0
    peaks: list[int] = []
    worst_excess = 0
    for t in range(1, ticks + 1):
        now = t * tick_ms
        for name in agents:
            picks = rng.choice(4, size=per_tick, p=[0.35, 0.25, 0.2, 0.2])
            imps = np.round(rng.random(per_tick), 3)
            flags = rng.random(per_tick) < 0.03
            engine.ingest_many(name, [
                {"content": f"{name} saw thing {t}-{j}", "layer": str(layers[picks[j]]),
                 "importance": float(imps[j]), "flagged": bool(flags[j])}
                for j in range(per_tick)
            ], now=now)
            total += per_tick
        out = compact_store(store(engine), now, budget, cursor, compactor)
        assert out.used_units <= budget + max(am.hi for am in store(engine)) + REMOVAL_COST_UNITS
        live = sum(am.live for am in store(engine))
        peaks.append(live)
        for am in store(engine):
            assert am.ring.live <= episodic_max
            for layer, cap in caps.items():
                worst_excess = max(worst_excess, int(am.layer_counts[layer.code]) - cap)
    assert total >= 200_000
    engine._check()
    ceiling = len(agents) * (sum(caps.values()) + episodic_max)
    assert worst_excess <= per_tick  # never more than one tick's ingest behind
    assert max(peaks) <= ceiling
    assert {ceiling} == set(peaks[len(peaks) // 2:])  # flat for the last days
    for am in store(engine):
        for layer, cap in caps.items():
            assert int(am.layer_counts[layer.code]) <= cap
