"""The miner through the engine: counts, procedural records, procedures(), tick slices."""

from __future__ import annotations

import random
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.procedural import Procedure
from f09_memory.procedural.actions import canonical_pattern, pattern_id

ROUTINE = (("eat", "success"), ("sleep", "success"), ("work", "failure"))


def act(engine: MemoryEngine, agent: str, action: str, now: int, outcome: object = "success",
        context: str | None = "hungry") -> None:
    attrs: dict[str, Any] = {"action": action, "outcome": outcome}
    if context is not None:
        attrs["context"] = context
    engine.ingest(agent, f"did {action}", metadata={"attributes": attrs}, now=now)


def routine(engine: MemoryEngine, agent: str = "npc", times: int = 6, start: int = 0,
            gap: int = 1_000) -> int:
    t = start
    for _ in range(times):
        for action, outcome in ROUTINE:
            t += gap
            act(engine, agent, action, t, outcome)
    return t


def new_engine(**procedural: Any) -> MemoryEngine:
    return MemoryEngine(MemoryConfig(procedural=procedural), embedder=None)


def pid(*actions: str, context: str = "hungry") -> str:
    return pattern_id(canonical_pattern(actions, context))


def test_a_tick_mines_the_routine_into_counted_patterns_and_records() -> None:
    engine = new_engine()
    t = routine(engine)
    report = engine.tick(t + 1)
    engine._check()
    assert 18 == report.mined and 0 == report.backlog.actions_unmined
    found = {p.actions: p for p in engine.procedures("npc", k=100)}
    eat_sleep = found[("eat", "sleep")]
    assert (pid("eat", "sleep"), 6, 1.0, "hungry") == (
        eat_sleep.pattern_id, eat_sleep.support, eat_sleep.success_rate, eat_sleep.context)
    assert 0.0 == found[("eat", "sleep", "work")].success_rate
    assert 5 == found[("work", "eat")].support  # the first work has nothing before it
    rec = engine.get(eat_sleep.record_id or "")
    assert "Procedure: eat -> sleep (when hungry)" == rec.content
    assert rec.metadata.procedural is not None
    assert (eat_sleep.pattern_id, 1.0) == (rec.metadata.procedural.pattern_id,
                                           rec.metadata.procedural.success_rate)
    assert 6 == engine.count("npc", "procedural")  # one per pattern of support >= 3


def test_procedures_are_ordered_by_score_then_pattern_id_and_cut_to_k() -> None:
    engine = new_engine()
    engine.tick(routine(engine) + 1)
    every = engine.procedures("npc", k=100)
    keys = [(-round(p.success_rate * (1 - 2 ** (-p.support / 10.0)) * 1e9), p.pattern_id)
            for p in every]
    assert sorted(keys) == keys
    assert ("eat", "sleep") == every[0].actions
    assert every[:2] == engine.procedures("npc", k=2)
    assert [] == engine.procedures("npc", k=0)
    assert all(p.success_rate == 0.0 for p in every[-2:])


def test_context_and_min_support_filter_and_unknowns_are_empty() -> None:
    engine = new_engine()
    t = routine(engine)
    for i in range(4):
        act(engine, "npc", "hide", t + 10 + 2 * i, context="danger")
        act(engine, "npc", "run", t + 11 + 2 * i, context="danger")
    engine.tick(t + 100)
    danger = engine.procedures("npc", context="danger", k=10)
    assert {("hide", "run"), ("run", "hide"), ("hide", "run", "hide"),
            ("run", "hide", "run")} == {p.actions for p in danger}
    assert all(p.context == "danger" for p in danger)
    assert [] == engine.procedures("npc", context="sleepy")
    assert [] == engine.procedures("npc", context="")
    assert [] == engine.procedures("nobody")
    assert {("eat", "sleep"), ("sleep", "work"), ("eat", "sleep", "work")} == {
        p.actions for p in engine.procedures("npc", context="hungry", min_support=6, k=10)}
    low = engine.procedures("npc", context="danger", min_support=1, k=10)
    assert any(p.record_id is None for p in low) or len(low) == len(danger)


def test_a_time_gap_or_a_context_change_breaks_the_chain() -> None:
    engine = new_engine(window_ms=500)
    act(engine, "npc", "eat", 0)
    act(engine, "npc", "sleep", 400)
    act(engine, "npc", "work", 1_000)  # 600 after sleep: a new chain
    act(engine, "npc", "eat", 1_100, context="cold")
    act(engine, "npc", "sleep", 1_200, context="cold")
    engine.tick(2_000)
    assert {(("eat", "sleep"), "hungry"), (("eat", "sleep"), "cold")} == {
        (p.actions, p.context) for p in engine.procedures("npc", min_support=1, k=10)}


def test_a_reinforced_pattern_updates_its_record_instead_of_copying_it() -> None:
    engine = new_engine()
    updates: list[Any] = []
    engine.bus.subscribe("memory:record:updated", updates.append)
    t = routine(engine, times=3)
    engine.tick(t + 1)
    first = engine.procedures("npc", k=1)[0]
    assert first.record_id is not None
    before = engine.get(first.record_id)
    t = routine(engine, times=20, start=t + 1)
    engine.tick(t + 1)
    again = next(p for p in engine.procedures("npc", k=100) if p.pattern_id == first.pattern_id)
    assert first.record_id == again.record_id and again.support == 23
    after = engine.get(first.record_id)
    assert after.importance > before.importance
    assert any(e.reason == "procedural" and e.id == first.record_id for e in updates)
    assert 6 == engine.count("npc", "procedural")
    engine._check()


def test_a_removed_record_is_made_again_at_the_next_occurrence() -> None:
    engine = new_engine(update_step=1.0)
    t = routine(engine)
    engine.tick(t + 1)
    top = engine.procedures("npc", k=1)[0]
    assert top.record_id is not None
    engine.forget([top.record_id])
    assert engine.procedures("npc", k=1)[0].record_id is None
    t = routine(engine, times=1, start=t + 1)
    engine.tick(t + 1)
    again = engine.procedures("npc", k=1)[0]
    assert again.record_id not in (None, top.record_id)


def test_the_procedural_cap_holds() -> None:
    config = MemoryConfig(retention_policy={"procedural_max": 4, "protected_min": 1},
                          procedural={"min_support": 1})
    engine = MemoryEngine(config, embedder=None)
    t = 0
    for i in range(30):
        t += 100
        act(engine, "npc", f"a{i % 10}", t)
        t += 100
        act(engine, "npc", f"b{i % 7}", t)
    engine.tick(t + 1, budget_ms=None)
    assert engine.count("npc", "procedural") <= 4 + 1  # cap + ingest slack
    engine.tick(t + 2)
    assert engine.count("npc", "procedural") <= 4
    engine._check()


def test_reasoning_retrieval_ranks_working_procedures_above_failing_ones() -> None:
    engine = new_engine()
    engine.tick(routine(engine) + 1)
    bundle = engine.retrieve(RetrievalRequest(agent_id="npc", purpose="reasoning",
                                              strategy="importance", max_tokens=4_000,
                                              layers=["procedural"]), now=10**6)
    rates = [r.metadata.procedural.success_rate for r in bundle.records
             if r.metadata.procedural is not None]
    assert 6 == len(rates) and rates == sorted(rates, reverse=True)


def test_small_budgets_mine_in_slices_to_the_same_counts() -> None:
    whole, sliced = new_engine(), new_engine()
    for engine in (whole, sliced):
        for agent in ("a", "b", "c"):
            routine(engine, agent)
    whole.tick(100_000)
    costs = sliced.config.tick_costs
    item = costs.mine_agent + costs.mine_record + 2 * (costs.mine_pattern + costs.mine_store)
    fixed = costs.tick + 3 * costs.agent
    budget_ms = 0.05
    units = int(budget_ms * sliced.config.work_units_per_ms)
    mined, now = 0, 100_000
    for _ in range(200):
        report = sliced.tick(now, budget_ms=budget_ms)
        sliced._check()
        # the fixed cost alone is over this budget: one item a tick (minimum progress)
        assert report.used_units <= max(units, fixed + costs.mine_slice + item)
        assert report.mined <= 1
        mined += report.mined
        now += 1
        if report.backlog.actions_unmined == 0 and report.mined == 0:
            break
    assert 54 == mined

    def counts(engine: MemoryEngine) -> list[tuple[str, str, int, float]]:
        return [(a, p.pattern_id, p.support, p.success_rate) for a in ("a", "b", "c")
                for p in engine.procedures(a, k=100, min_support=1)]

    assert counts(whole) == counts(sliced)
    assert whole.count(layer="procedural") == sliced.count(layer="procedural")


def test_the_backlog_counts_action_records_not_yet_mined() -> None:
    engine = new_engine()
    t = routine(engine, times=2)
    engine.ingest("npc", "a plain thought", now=t)
    report = engine.tick(t + 1, budget_ms=0.002)  # 400 units: the agent check, one item
    assert 1 == report.mined
    assert 5 == report.backlog.actions_unmined
    assert report.backlog.total >= 5


def test_disabled_mining_does_nothing() -> None:
    engine = new_engine(enabled=False)
    report = engine.tick(routine(engine) + 1)
    assert 0 == report.mined and 0 == report.backlog.actions_unmined
    assert [] == engine.procedures("npc")


def test_mining_changes_the_state_hash_and_an_idle_tick_does_not_mine_again() -> None:
    engine = new_engine()
    t = routine(engine)
    before = engine.state_hash()
    engine.tick(t + 1)
    mined = engine.state_hash()
    assert before != mined
    assert 0 == engine.tick(t + 1).mined
    assert mined == engine.state_hash()


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"k": -1}, "k"), ({"k": 1.5}, "k"), ({"k": True}, "k"), ({"min_support": 0}, "min_support"),
    ({"min_support": "3"}, "min_support"), ({"context": 3}, "context")])
def test_bad_procedures_arguments_are_refused(kwargs: dict[str, Any], field: str) -> None:
    engine = new_engine()
    with pytest.raises(MemoryEngineError) as info:
        engine.procedures("npc", **kwargs)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert field == info.value.details["field"]


def test_a_bad_agent_id_is_refused() -> None:
    with pytest.raises(MemoryEngineError):
        new_engine().procedures("")


def test_procedures_are_typed_and_frozen() -> None:
    engine = new_engine()
    engine.tick(routine(engine) + 1)
    top = engine.procedures("npc", k=1)[0]
    assert isinstance(top, Procedure) and isinstance(top.actions, tuple)
    with pytest.raises(AttributeError):
        top.support = 3  # type: ignore[misc]


@pytest.mark.parametrize("bad", [{"max_n": 1}, {"max_n": 9}, {"min_support": 0},
                                 {"window_ms": -1}, {"support_half": 0}, {"update_step": 0}])
def test_bad_settings_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig(procedural=bad)
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code


def test_records_without_actions_leave_the_miner_unused_and_cost_nothing() -> None:
    engine = new_engine()
    for i in range(20):
        engine.ingest("npc", f"met {i}", metadata={"attributes": {"with": "bob"}},
                      source_event="talk:bob", now=i)
    plain = new_engine(enabled=False)
    for i in range(20):
        plain.ingest("npc", f"met {i}", metadata={"attributes": {"with": "bob"}},
                     source_event="talk:bob", now=i)
    report = engine.tick(100, budget_ms=1.0)
    assert 0 == report.mined
    assert report.used_units == plain.tick(100, budget_ms=1.0).used_units
    assert all(t.digest(1) is None for t in engine._state.tables.values())


def test_forgetting_an_agent_drops_its_patterns_and_cursor() -> None:
    engine = new_engine()
    engine.tick(routine(engine) + 1)
    routine(engine, "other", times=3)
    engine.forget(agent_id="npc")
    engine._check()
    assert [] == engine.procedures("npc", min_support=1)
    assert all(k[0] != "npc" for t in engine._state.tables.values() for k in sorted(t.keys()))
    t = routine(engine, times=3, start=10**6)
    engine.tick(t + 1)
    assert 3 == engine.procedures("npc", k=1)[0].support  # counted afresh


def reference_counts(stream: list[tuple[str, str, int, float]], max_n: int, window: int
                     ) -> dict[tuple[tuple[str, ...], str], tuple[int, float]]:
    """Brute force: every contiguous run of one context within the window, all n-grams."""
    counts: dict[tuple[tuple[str, ...], str], tuple[int, float]] = {}
    chain: list[tuple[str, str, int, float]] = []
    for step in stream:
        if chain and (chain[-1][1] != step[1] or not 0 <= step[2] - chain[-1][2] <= window):
            chain = []
        chain.append(step)
        for n in range(2, min(max_n, len(chain)) + 1):
            key = (tuple(s[0] for s in chain[-n:]), step[1])
            support, successes = counts.get(key, (0, 0.0))
            counts[key] = (support + 1, round(successes + step[3], 6))
    return counts


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_random_stream_mined_in_random_slices_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    engine = new_engine(max_n=4, window_ms=30, min_support=2)
    stream: list[tuple[str, str, int, float]] = []
    t = 0
    for _ in range(150):
        t += rng.choice([1, 5, 10, 40])
        action, context = rng.choice("abc"), rng.choice(["", "x"])
        outcome = rng.choice(["success", "failure", 0.5, "junk"])
        score = {"success": 1.0, "failure": 0.0, 0.5: 0.5, "junk": 0.0}[outcome]
        act(engine, "npc", action, t, outcome, context or None)
        if rng.random() < 0.1:
            engine.ingest("npc", "a plain thought", now=t)
        stream.append((action, context, t, score))
        if rng.random() < 0.2:
            engine.tick(t, budget_ms=rng.choice([0.01, 0.05, None]))
            engine._check()
    while engine.tick(t, budget_ms=0.05).backlog.actions_unmined:
        pass
    expected = reference_counts(stream, 4, 30)
    found = {(p.actions, p.context or ""): (p.support, p.success_rate)
             for p in engine.procedures("npc", k=10_000, min_support=1)}
    assert {k: (s, round(min(1.0, x / s), 6)) for k, (s, x) in expected.items()} == found
    assert all(p.record_id is not None for p in engine.procedures("npc", k=10_000))


def test_action_names_are_stored_redacted() -> None:
    engine = new_engine(min_support=1)
    for t in (1, 2):
        act(engine, "npc", "mail bob@example.org", t)
    engine.tick(10)
    (proc,) = engine.procedures("npc", min_support=1)
    rec = engine.get(proc.record_id or "")
    assert "bob@example.org" not in repr(proc) and "bob@example.org" not in rec.content
    assert "bob@example.org" not in repr(engine._state.tables["procedural.patterns"].get_state())


def test_an_agent_at_its_record_ceiling_gets_no_procedural_record_and_no_error() -> None:
    engine = MemoryEngine(MemoryConfig(episodic_max=20, max_records_per_agent=20),
                          embedder=None)
    t = routine(engine, times=6)  # 18 action records, then 2 plain ones: the agent is full
    engine.ingest_many("npc", ["a thought", "another thought"], now=t)
    engine.tick(t + 1)
    engine._check()
    assert 0 == engine.count("npc", "procedural")
    top = engine.procedures("npc", k=1)[0]
    assert (("eat", "sleep"), 6, None) == (top.actions, top.support, top.record_id)
