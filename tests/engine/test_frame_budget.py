"""Frame-budget ticks: caps hold, nothing waits for decay, backlog and time-outs (not timed)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.determinism.gridworld import GridWorld, grid_engine, host_loop
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.retention.policy import CAPPED_LAYERS, layer_caps
from f09_memory.schema.enums import TaskStatus
from f09_memory.testing import capture_events


def test_caps_hold_at_every_step_with_a_tenth_of_a_millisecond() -> None:
    engine = grid_engine(retention_policy={"semantic_max": 12, "social_max": 10,
                                           "procedural_max": 5, "protected_min": 3},
                         episodic_max=60)
    caps = layer_caps(engine.config.retention_policy)
    slack = {layer: max(1, int(cap * 0.1)) for layer in CAPPED_LAYERS
             if (cap := caps[layer]) is not None}
    world = GridWorld(agents=40, seed=3)
    for _ in host_loop(engine, world, 60, budget_ms=0.1):
        for am in engine._state.store:
            for layer, extra in slack.items():
                cap = caps[layer]
                assert cap is not None and am.layer_counts[layer.code] <= cap + extra
            assert am.ring.live <= 60
    engine._check()


def test_no_agent_waits_for_decay_at_a_thousand_agents() -> None:
    # decay has no pass (a pure function of now), so records per agent do not matter here;
    # benchmarks/bench_engine.py runs the same tick over 1,000 x 500 records
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    items = [{"agent_id": f"npc-{a:04d}", "content": f"fact {a} {i}", "importance": 0.5}
             for a in range(1_000) for i in range(40)]
    engine.ingest_batch(items, now=0)
    report = engine.tick(60_000, budget_ms=1.0)
    assert (0, 0, True) == (report.deferred_agents, report.backlog.agents_due,
                            report.cycle_complete)
    assert 40_000 == report.decayed  # every record decays (lazily, as a function of now)
    # nothing but the tick's fixed cost and the survey was charged: decay has no pass
    costs = engine.config.tick_costs
    assert costs.tick + 1_000 * costs.agent == report.used_units


def test_behind_is_raised_when_ingest_outpaces_the_budget() -> None:
    engine = MemoryEngine(MemoryConfig(work_units_per_ms=2_000, tick_behind_after=3),
                          embedder=None)
    reports = []
    with capture_events(engine.bus, "memory:tick:behind") as log:
        for t in range(1, 9):  # every step, 20 more agents have records whose TTL passes
            engine.ingest_batch([{"agent_id": f"a{t}-{i}", "content": "spark", "ttl": 1}
                                 for i in range(20)], now=t)
            reports.append(engine.tick(t + 1, budget_ms=1.0))
    due = [r.backlog.agents_due for r in reports]
    assert due == sorted(due) and due[-1] > due[0]
    assert [False, False, True] == [r.behind for r in reports[:3]]
    assert all(r.behind for r in reports[2:])
    assert [3, 6] == [e.ticks for e in log.events]
    assert due[2] == log.events[0].agents_due
    caught_up = engine.tick(100)  # unbounded: the backlog is gone
    assert (0, False) == (caught_up.backlog.total, caught_up.behind)


class HangingLLM:
    """An LLM double that never answers until released (tests release it at the end)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def complete(self, prompt: str, *, system: str | None = None, temperature: float = 0.0,
                 max_tokens: int = 0) -> str:
        self.calls += 1
        self.release.wait(10.0)
        return "a late answer naming nobody"


def _engine_with_tasks(**config: Any) -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(episodic_window=10, summarization_keep_recent=0,
                                       **config), embedder=None)
    for agent in ("ann", "bob"):
        engine.ingest_many(agent, [f"{agent.title()} met Cid at the well {i}."
                                   for i in range(6)], now=0)
        engine.summarization.request(agent, now=100)
    return engine


def test_a_hanging_llm_times_out_with_an_injected_timer() -> None:
    engine = _engine_with_tasks()
    waited: list[float] = []

    def never(done: threading.Event, seconds: float) -> bool:
        waited.append(seconds)
        return False  # the injected timer says the time is up at once

    engine.summarization.wait = never
    llm = HangingLLM()
    try:
        with capture_events(engine.bus, "memory:summarization:*") as log:
            outcomes = engine.summarize_pending(llm, now=100, timeout_ms=250)
    finally:
        llm.release.set()
    assert [0.25, 0.25] == waited  # one wait per task, whatever the worker threads do
    assert ["heuristic", "heuristic"] == [o.path for o in outcomes]
    assert all(o.reason and "timeout" in o.reason for o in outcomes)
    timeouts = log.of("memory:summarization:timeout")
    assert [("sum:ann:00000000", 250), ("sum:bob:00000000", 250)] == [
        (e.task_id, e.timeout_ms) for e in timeouts]
    assert 2 == len(log.of("memory:summarization:completed"))
    assert 1 == engine.count("ann")  # the six sources became one heuristic summary
    engine._check()


def test_a_hanging_llm_times_out_in_real_time_too() -> None:
    engine = _engine_with_tasks()
    llm = HangingLLM()
    try:
        outcomes = engine.summarize_pending(llm, now=100, timeout_ms=30)
    finally:
        llm.release.set()
    assert ["heuristic", "heuristic"] == [o.path for o in outcomes]
    with pytest.raises(MemoryEngineError) as info:
        engine.summarize_pending(llm, timeout_ms=0)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code


def test_an_overdue_task_times_out_in_logical_time_and_a_late_answer_is_ignored() -> None:
    engine = _engine_with_tasks(summarization_timeout_ms=5_000)
    tasks = engine.summarization.poll(now=100)
    assert 2 == len(tasks) and all(t.prompt for t in tasks)
    assert 0 == engine.tick(5_099).timed_out  # due at 100 + 5,000
    with capture_events(engine.bus, "memory:summarization:*") as log:
        report = engine.tick(5_100, budget_ms=1.0)
    assert (2, 2) == (report.timed_out, report.summaries_applied)
    assert ["memory:summarization:timeout"] * 2 + ["memory:summarization:completed"] * 2 == [
        e.name for e in log.events]
    assert all(TaskStatus.COMPLETED == t.status for t in tasks)
    before = engine.state_hash()
    with capture_events(engine.bus, "memory:summarization:*") as log:
        late = engine.summarization.complete(tasks[0].id, "Ann met Cid at the well.")
    assert ("none", None) == (late.path, late.summary_text)
    assert ["memory:summarization:late"] == [e.name for e in log.events]
    assert before == engine.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        engine.summarization.complete("sum:zed:00000000", "text")
    assert ErrorCode.MEMORY_SUMMARY_FAILED == info.value.code


def test_heuristic_summaries_are_applied_within_the_tick_budget() -> None:
    engine = MemoryEngine(MemoryConfig(episodic_window=10, summarization_keep_recent=0,
                                       summarization_min_interval_ms=0), embedder=None)
    engine.set_pressure("throttle")  # heuristic summaries, no LLM
    engine.ingest_batch([{"agent_id": f"npc-{a:02d}", "content": f"Saw Dan at the mill {i}."}
                         for a in range(30) for i in range(25)], now=0)
    costs = engine.config.tick_costs
    budget = 2 * engine.config.work_units_per_ms
    largest = costs.summary_check + costs.summary_task + 25 * costs.summary_select
    reports = []
    t = 100
    while not reports or reports[-1].backlog.total:
        reports.append(engine.tick(t, budget_ms=2.0))
        t += 1
        assert t < 200
    applied = [r.summaries_applied for r in reports]
    assert 30 == sum(applied) and max(applied) < 30  # spread over several ticks
    # never past the budget, but by the tick's first item when nothing else fit
    assert all(r.used_units <= budget or r.used_units <= costs.tick + 30 * costs.agent + largest
               for r in reports)
    assert all(1 == engine.count(f"npc-{a:02d}", "semantic") for a in range(30))


def test_save_and_load_mid_run_continue_like_an_uninterrupted_run(tmp_path: Any) -> None:
    def run(split: bool) -> str:
        engine = grid_engine(retention_policy={"semantic_max": 12, "social_max": 10,
                                               "procedural_max": 5, "protected_min": 3})
        world = GridWorld(agents=30, seed=5)
        steps = host_loop(engine, world, 40, budget_ms=0.2, summarize_every=10)
        for hs in steps:
            if split and hs.step == 19:
                engine.save(tmp_path / "mid.f09")
                loaded = MemoryEngine.load(tmp_path / "mid.f09")
                assert loaded.state_hash() == engine.state_hash()
                engine = loaded
                steps = host_loop(engine, world, 20, budget_ms=0.2, summarize_every=10,
                                  start=20)
                for _ in steps:
                    pass
                break
        return engine.state_hash()

    assert run(False) == run(True)


def test_tick_costs_are_validated() -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig(tick_costs={"scan": 0})
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    with pytest.raises(MemoryEngineError):
        MemoryConfig(hard_cap_slack=-0.1)
    assert np.isclose(MemoryConfig().hard_cap_slack or 0.0, 0.1)


def test_a_task_nobody_polls_times_out_too() -> None:
    engine = _engine_with_tasks(summarization_timeout_ms=1_000)  # queued at t=100
    assert 0 == engine.tick(1_099).timed_out
    report = engine.tick(1_100)
    assert (2, 2, 0) == (report.timed_out, report.summaries_applied,
                         report.backlog.pending_summaries)
    assert [] == engine.summarization.pending()
    assert 1 == engine.count("ann", "semantic") and 0 == engine.count("ann", "episodic")
