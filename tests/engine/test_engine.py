from __future__ import annotations

from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine, MemoryLayer, PressureState, RetrievalRequest
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.testing import ScriptedPressure, capture_events


def test_ingest_returns_the_stored_record_with_deterministic_id(engine: MemoryEngine) -> None:
    rec = engine.ingest("npc-1", "Saw the smith at the well", layer="episodic", importance=0.4,
                        tags=["town", "town", " well "], metadata={"sourceEvent": "ev-7"},
                        now=1_000)
    assert "npc-1:0000000000" == rec.id
    assert ("npc-1", 1_000, 1_000, 0.4) == (rec.agent_id, rec.created_at, rec.recency_anchor,
                                             rec.importance)
    assert ("town", "well") == rec.metadata.tags
    assert "ev-7" == rec.metadata.source_event
    assert 7 == rec.tokens_estimate
    assert rec is engine.get(rec.id)
    engine._check()


def test_heuristic_importance_is_used_when_none_is_given(engine: MemoryEngine) -> None:
    calm = engine.ingest("a", "walked along the lane", now=0)
    loud = engine.ingest("a", "Bandits attacked! They killed the guard!", now=0)
    assert 0.0 < calm.importance < loud.importance <= 1.0


def test_ids_count_per_agent(engine: MemoryEngine) -> None:
    a0 = engine.ingest("a", "x", now=0)
    b0 = engine.ingest("b", "x", now=0)
    a1 = engine.ingest("a", "y", now=0)
    assert ["a:0000000000", "b:0000000000", "a:0000000001"] == [a0.id, b0.id, a1.id]


def test_ingest_many_stores_in_order_and_emits_after_all(engine: MemoryEngine) -> None:
    sizes: list[int] = []
    engine.bus.subscribe("memory:record:created", lambda e: sizes.append(engine.count("a")))
    recs = engine.ingest_many("a", ["one", {"content": "two", "layer": "semantic",
                                            "importance": 0.9}], now=5)
    assert ["one", "two"] == [r.content for r in recs]
    assert [2, 2] == sizes
    assert [] == engine.ingest_many("a", [], now=5)


def test_ingest_uses_the_engine_clock_when_now_is_omitted(engine: MemoryEngine) -> None:
    engine.tick(500)
    assert 500 == engine.ingest("a", "x").created_at
    assert 500 == engine.now


def test_get_unknown_raises_record_not_found(engine: MemoryEngine) -> None:
    rec = engine.ingest("a", "x", ttl=5, now=0)
    for bad in ["a:0000000099", "nope", "zz:0000000000"]:
        with pytest.raises(MemoryEngineError) as info:
            engine.get(bad)
        assert ErrorCode.MEMORY_RECORD_NOT_FOUND == info.value.code
    engine.tick(10)
    with pytest.raises(KeyError):
        engine.get(rec.id)


def test_ttl_expiry_on_tick_emits_expired_events(engine: MemoryEngine) -> None:
    engine.ingest("a", "keep", now=0)
    short = engine.ingest("a", "short", ttl=10, layer="semantic", now=0)
    with capture_events(engine.bus, "memory:record:expired") as log:
        report = engine.tick(9)
        assert 0 == report.expired
        report = engine.tick(10)
    assert 1 == report.expired
    assert [(short.id, "semantic", "ttl")] == [(e.id, e.layer, e.reason) for e in log.events]
    assert ["keep"] == [r.content for r in engine.records("a")]
    engine._check()


BAD_INGESTS: list[tuple[dict[str, Any], str]] = [
    ({"agent_id": ""}, "agent_id"),
    ({"agent_id": 5}, "agent_id"),
    ({"content": ""}, "content"),
    ({"content": "   "}, "content"),
    ({"content": None}, "content"),
    ({"content": "x" * 70_000}, "content"),
    ({"layer": "dreams"}, "layer"),
    ({"importance": 1.01}, "importance"),
    ({"importance": -0.1}, "importance"),
    ({"importance": float("nan")}, "importance"),
    ({"importance": True}, "importance"),
    ({"importance": "high"}, "importance"),
    ({"tags": "town"}, "tags"),
    ({"tags": ["ok", ""]}, "tags"),
    ({"tags": [1]}, "tags"),
    ({"metadata": "x"}, "metadata"),
    ({"metadata": {"spatial": {"x": 1}}}, "spatial"),
    ({"ttl": 0}, "ttl"),
    ({"ttl": 1.5}, "ttl"),
    ({"flagged": "yes"}, "flagged"),
    ({"now": -1}, "now"),
    ({"now": 1.5}, "now"),
]


@pytest.mark.parametrize(("override", "field"), BAD_INGESTS)
def test_bad_ingest_raises_input_invalid_and_leaves_state_unchanged(
    engine: MemoryEngine, override: dict[str, Any], field: str
) -> None:
    engine.ingest("a", "existing", now=0)
    before = engine.state_hash()
    args: dict[str, Any] = {"agent_id": "a", "content": "fine", **override}
    with capture_events(engine.bus) as log, pytest.raises(MemoryEngineError) as info:
        engine.ingest(**args)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert field in info.value.message
    assert before == engine.state_hash()
    assert [] == list(log.events)


def test_bad_item_in_a_batch_rejects_the_whole_batch(engine: MemoryEngine) -> None:
    before = engine.state_hash()
    for items in (["ok", {"content": "bad", "importance": 3}], ["ok", {"text": "x"}],
                  ["ok", 7], "not a list", [{"importance": 0.5}]):
        with pytest.raises(MemoryEngineError) as info:
            engine.ingest_many("a", items, now=0)  # type: ignore[arg-type]
        assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert before == engine.state_hash()
    assert 0 == engine.count()


def test_capacity_ceiling_raises_capacity_exceeded(make_engine: Any) -> None:
    engine = make_engine(max_records_per_agent=3, episodic_max=2)
    engine.ingest_many("a", [{"content": "s1", "layer": "semantic"}, "e1", "e2"], now=0)
    before = engine.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        engine.ingest("a", "s2", layer="semantic", now=0)
    assert ErrorCode.MEMORY_CAPACITY_EXCEEDED == info.value.code
    assert before == engine.state_hash()
    engine.ingest("a", "e3", now=0)  # into a full ring: replaces the oldest, so it fits
    assert ["s1", "e2", "e3"] == [r.content for r in engine.records("a")]


def test_capacity_counts_ring_evictions_in_batches(make_engine: Any) -> None:
    engine = make_engine(max_records_per_agent=4, episodic_max=2)
    engine.ingest_many("a", ["e"] * 10, now=0)
    assert 2 == engine.count("a")
    with pytest.raises(MemoryEngineError) as info:
        engine.ingest_many("a", [{"content": "s", "layer": "semantic"}] * 3, now=0)
    assert ErrorCode.MEMORY_CAPACITY_EXCEEDED == info.value.code
    assert 2 == engine.count("a")


def test_tick_rejects_time_running_backwards_and_bad_budgets(engine: MemoryEngine) -> None:
    engine.tick(100)
    for kwargs in ({"now": 99}, {"now": 200, "budget_ms": 0}, {"now": 200, "budget_ms": -1},
                   {"now": 200, "budget_ms": float("inf")}, {"now": "soon"}):
        with pytest.raises(MemoryEngineError) as info:
            engine.tick(**kwargs)  # type: ignore[arg-type]
        assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert 100 == engine.now


def test_tick_budget_slices_maintenance_and_resumes_deterministically(make_engine: Any) -> None:
    def build() -> MemoryEngine:
        e: MemoryEngine = make_engine(work_units_per_ms=100_000)
        for i in range(10):  # every agent is due at t=1: its records' TTL passes
            e.ingest_many(f"agent-{i}", [{"content": f"m{j}", "ttl": 1} for j in range(40)],
                          now=0)
        return e

    a, b = build(), build()
    costs = a.config.tick_costs
    fixed = costs.tick + 10 * costs.agent  # paid by every tick
    item = costs.scan + 40 * costs.scan_slot + 40 * costs.expire  # one agent's expiry
    budget_ms = (fixed + item + item // 2) / 100_000  # room for one agent and a half
    reports = [a.tick(t, budget_ms=budget_ms) for t in (1, 2, 3, 4, 5)]
    assert [r.agents_processed for r in reports] == [
        r.agents_processed for r in (b.tick(t, budget_ms=budget_ms) for t in (1, 2, 3, 4, 5))]
    assert a.state_hash() == b.state_hash()
    first = reports[0]
    # one agent fits whole; the next one's expiry starts and is cut where the budget ends
    assert 1 == first.agents_processed and not first.cycle_complete
    assert 9 == first.deferred_agents == first.backlog.agents_due
    assert all(r.used_units <= r.budget_units for r in reports if r.budget_units)  # no overshoot
    assert 40 < first.expired < 80
    full = a.tick(6)
    assert full.cycle_complete and full.budget_units is None
    assert 0 == a.tick(7).agents_processed  # nothing is due any more: nothing is visited
    assert 0 == a.count()
    tiny = build()  # a budget below the fixed cost: one item a tick (minimum progress)
    small = [tiny.tick(t, budget_ms=0.01) for t in (1, 2, 3)]
    assert [1, 1, 1] == [r.expired for r in small]
    assert all(r.used_units == fixed + costs.scan + 40 * costs.scan_slot + costs.expire
               for r in small[:1])


def test_set_pressure_emits_only_on_change_and_rejects_unknown(engine: MemoryEngine) -> None:
    with capture_events(engine.bus, "memory:pressure:changed") as log:
        engine.set_pressure("throttle")
        engine.set_pressure(PressureState.THROTTLE)
        engine.set_pressure("normal")
    assert [("normal", "throttle"), ("throttle", "normal")] == [
        (e.previous, e.current) for e in log.events]
    with pytest.raises(MemoryEngineError) as info:
        engine.set_pressure("panic")
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert PressureState.NORMAL == engine.pressure


def test_pressure_source_is_polled_at_tick() -> None:
    source = ScriptedPressure([(100, "soft"), (200, "exhausted")])
    engine = MemoryEngine(pressure_source=source)
    assert PressureState.NORMAL == engine.tick(50).pressure
    assert PressureState.SOFT == engine.tick(150).pressure
    assert PressureState.EXHAUSTED == engine.tick(250).pressure


@pytest.mark.parametrize("kwargs", [{"config": {"episodic_max": 3}}, {"seed": "x"},
                                    {"token_counter": object()}, {"pressure_source": 5}])
def test_bad_constructor_arguments_raise(kwargs: dict[str, Any]) -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryEngine(**kwargs)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code


def test_records_and_count_validate_their_arguments(engine: MemoryEngine) -> None:
    engine.ingest("a", "x", now=0)
    assert [] == engine.records("ghost")
    assert 1 == engine.count("a", "episodic") and 0 == engine.count("a", "semantic")
    with pytest.raises(MemoryEngineError):
        engine.records("a", layer="dreams")
    with pytest.raises(MemoryEngineError):
        engine.records("")


def test_layer_counts_are_what_count_gives_for_every_agent_and_layer(
        engine: MemoryEngine) -> None:
    assert {} == engine.layer_counts()
    engine.ingest_many("b", [{"content": "x", "layer": "semantic"}, "y", "z"], now=1)
    engine.ingest("a", "a spot", layer="spatial", metadata={"spatial": {"x": 1, "y": 2}}, now=1)
    engine.forget([engine.records("b")[0].id])
    counts = engine.layer_counts()
    assert ["a", "b"] == list(counts)
    for agent, by_layer in counts.items():
        assert [layer.value for layer in MemoryLayer] == list(by_layer)
        assert {layer: engine.count(agent, layer) for layer in by_layer} == by_layer
    assert (1, 2) == (counts["a"]["spatial"], counts["b"]["episodic"] + counts["b"]["semantic"])


def test_custom_token_counter_is_used() -> None:
    class Words:
        def count(self, text: str) -> int:
            return len(text.split())

    engine = MemoryEngine(token_counter=Words())
    rec = engine.ingest("a", "one two three", now=0)
    assert 3 == rec.tokens_estimate
    bundle = engine.retrieve(RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=3))
    assert 3 == bundle.total_tokens


def test_state_hash_changes_with_state_and_not_with_reads(engine: MemoryEngine) -> None:
    h0 = engine.state_hash()
    engine.ingest("a", "x", now=0)
    h1 = engine.state_hash()
    engine.retrieve(RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=10), now=0)
    engine.get("a:0000000000")
    assert h0 != h1 == engine.state_hash()


@pytest.mark.parametrize("kwargs", [
    {"importance": 0.5, "tags": ["t", "u"]},
    {},
    {"layer": "semantic", "ttl": 50, "flagged": True},
    {"tags": ["mail a@b.co", "t"], "importance": 1},
])
def test_a_single_ingest_returns_the_record_the_columns_hold(kwargs: dict[str, Any]) -> None:
    engine = MemoryEngine(MemoryConfig(episodic_max=2), embedder=None)  # the ring overflows
    for now in range(4):
        rec = engine.ingest("npc", f"Met bob@example.com at gate {now}", now=now, **kwargs)
        assert rec is engine.get(rec.id)
        engine._reader.clear()
        rebuilt = engine.get(rec.id)
        assert rebuilt == rec
        assert [type(v) for v in rebuilt.__dict__.values()] == [
            type(v) for v in rec.__dict__.values()]
        assert rebuilt.model_fields_set == rec.model_fields_set
    engine._check()


def test_a_single_ingest_returns_the_record_as_its_handlers_left_it() -> None:
    engine = MemoryEngine(embedder=None)
    engine.bus.subscribe("memory:record:created",
                         lambda e: engine.update(e.id, importance=0.9))
    rec = engine.ingest("npc", "The gate was left open", importance=0.2, now=1)
    assert 0.9 == rec.importance
    assert rec is engine.get(rec.id)
