from __future__ import annotations

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.testing import capture_events


def capped(**kw: object) -> MemoryEngine:
    return MemoryEngine(MemoryConfig(retention_policy={"semantic_max": 20, "social_max": 15,
                                                       "protected_min": 5}, **kw),
                        embedder=None)


def test_tick_prunes_layers_over_their_caps_and_reports_it() -> None:
    engine = capped(hard_cap_slack=1.0)  # up to 40 semantic records between ticks
    engine.ingest_many("a", [{"content": f"fact {i}", "layer": "semantic",
                              "importance": (i % 10) / 10} for i in range(38)], now=0)
    assert 38 == engine.count("a", "semantic")
    with capture_events(engine.bus, "memory:*") as log:
        report = engine.tick(10)
    assert 20 == engine.count("a", "semantic")
    assert 18 == report.pruned and 0 == report.backlog.over_soft_caps
    expired = log.of("memory:record:expired")
    assert 18 == len(expired) and {"retention"} == {e.reason for e in expired}
    (compaction,) = log.of("memory:compaction")
    assert ("a", 18, 20) == (compaction.agent_id, compaction.removed, compaction.remaining)


def test_ingest_never_lets_a_layer_pass_its_cap_plus_the_slack() -> None:
    engine = capped()  # semantic cap 20, slack 10% (2 records)
    with capture_events(engine.bus, "memory:record:expired") as log:
        engine.ingest_many("a", [{"content": f"fact {i}", "layer": "semantic",
                                  "importance": (i % 10) / 10} for i in range(100)], now=0)
    assert 20 == engine.count("a", "semantic")  # one batch past the hard cap: back to the cap
    assert 80 == len(log.events) and {"retention"} == {e.reason for e in log.events}
    kept = sorted(r.importance for r in engine.records("a", "semantic"))
    assert kept[0] >= 0.8  # the lowest retention scores went first
    counts = []
    for i in range(60):  # one by one, with no tick at all
        engine.ingest("b", f"rumour {i}", layer="social", importance=0.5, now=i)
        counts.append(engine.count("b", "social"))
    assert max(counts) == 15 + 1 and counts[-1] <= 16  # social cap 15, slack 1
    engine._check()
    kept = {r.importance for r in engine.records("a", "semantic")}
    assert min(kept) >= 0.8  # the lowest decayed scores went first
    engine._check()


def test_pruning_at_ingest_is_reported_as_a_compaction_too() -> None:
    engine = capped()  # social cap 15, slack 1: the 17th record prunes back to the cap
    with capture_events(engine.bus, "memory:*") as log:
        engine.ingest_many("b", [{"content": f"rumour {i}", "layer": "social"}
                                 for i in range(16)], now=0)
        assert [] == log.of("memory:compaction")
        engine.ingest("b", "rumour 16", layer="social", now=1)  # the single-record path
        engine.ingest_many("c", [{"content": f"fact {i}", "layer": "semantic"}
                                 for i in range(30)], now=1)  # the batch path
    expired = [e.id.split(":")[0] for e in log.of("memory:record:expired")
               if e.reason == "retention"]
    compactions = [(e.agent_id, e.removed, e.remaining) for e in log.of("memory:compaction")]
    assert [("b", 2, 15), ("c", 10, 20)] == compactions
    assert ["b"] * 2 + ["c"] * 10 == expired
    names = log.names()
    assert names.index("memory:compaction") > max(
        i for i, e in enumerate(log.events) if e.name == "memory:record:expired"
        and e.id.startswith("b:"))


def test_budgeted_compaction_resumes_and_matches_an_unbounded_tick() -> None:
    def load(engine: MemoryEngine) -> None:
        for agent in ("a", "b", "c"):
            engine.ingest_many(agent, [{"content": f"{agent} knows {i}", "layer": "social",
                                        "importance": ((i * 7) % 10) / 10}
                                       for i in range(30)], now=0)

    sliced = capped(work_units_per_ms=2_000, hard_cap_slack=1.0)
    whole = capped(hard_cap_slack=1.0)
    load(sliced)
    load(whole)
    whole.tick(5)
    reports = []
    for t in range(5, 1_000):  # 1,000 units, below the fixed cost: one removal per tick
        reports.append(sliced.tick(t, budget_ms=0.5))
        if all(sliced.count(a, "social") <= 15 for a in ("a", "b", "c")):
            break
    assert len(reports) >= 45 and all(r.pruned <= 1 for r in reports)
    assert [45 - i for i in range(1, 46)] == [r.backlog.over_soft_caps for r in reports]
    # the tick's first item (one agent check, scan and removal) may overshoot the budget
    costs = sliced.config.tick_costs
    fixed = costs.tick + 3 * costs.agent
    assert max(r.used_units for r in reports) <= fixed + 1 + costs.scan + 30 + costs.prune
    for agent in ("a", "b", "c"):
        assert [r.id for r in whole.records(agent)] == [r.id for r in sliced.records(agent)]
    sliced._check()


def test_live_count_plateaus_under_the_caps_over_a_long_run() -> None:
    engine = MemoryEngine(MemoryConfig(episodic_max=100, retention_policy={
        "semantic_max": 50, "social_max": 40, "procedural_max": 30, "protected_min": 5}),
        embedder=None)
    layers = ["episodic", "semantic", "social", "procedural"]
    sizes = []
    for tick in range(200):
        now = tick * 60_000
        engine.ingest_many("npc", [{"content": f"event {tick}-{i}", "layer": layers[i % 4],
                                    "importance": ((tick + i) % 10) / 10}
                                   for i in range(40)], now=now)
        engine.tick(now, budget_ms=2.0)
        sizes.append(engine.count("npc"))
    assert max(sizes[100:]) <= 100 + 50 + 40 + 30 + 10  # caps + one tick of new records
    assert sizes[-1] == sizes[150]  # plateau
