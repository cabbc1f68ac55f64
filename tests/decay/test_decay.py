from __future__ import annotations

import math

import numpy as np

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.decay import decay_pass, importance_decayed, recency_scores
from f09_memory.testing import capture_events


def test_recency_is_exp_of_minus_dt_over_half_life() -> None:
    anchors = np.array([1000, 0, 2000, 5000], dtype=np.int64)
    got = recency_scores(2000, anchors, 1000)
    assert np.allclose([math.exp(-1), math.exp(-2), 1.0, 1.0], got)


def test_importance_decayed_multiplies() -> None:
    got = importance_decayed(np.array([0.5, 1.0]), np.array([0, 0], dtype=np.int64), 100, 100)
    assert np.allclose([0.5 * math.exp(-1), math.exp(-1)], got)


def test_decay_is_a_pure_function_of_now_and_never_touches_importance() -> None:
    engine = MemoryEngine(MemoryConfig(decay_half_life_ms=1000))
    engine.ingest("a", "x", importance=0.8, now=0)
    engine.ingest("a", "y", importance=0.4, now=1000)
    am = engine._state.store.get("a")
    assert am is not None
    before = engine.state_hash()
    got = decay_pass(am, 2000, 1000)
    assert np.allclose([0.8 * math.exp(-2), 0.4 * math.exp(-1)], got)
    assert np.allclose([0.8, 0.4], am.importance[:2])
    assert np.array_equal(got, decay_pass(am, 2000, 1000))  # same now, same values
    assert before == engine.state_hash()  # nothing stored


def test_tick_emits_decay_applied_per_agent_in_id_order() -> None:
    engine = MemoryEngine()
    for agent in ["b", "a"]:
        engine.ingest(agent, "x", now=0)
        engine.ingest(agent, "y", now=0)
    with capture_events(engine.bus, "memory:decay:applied") as log:
        report = engine.tick(10)
    assert [("a", 2), ("b", 2)] == [(e.agent_id, e.affected) for e in log.events]
    assert 4 == report.decayed
