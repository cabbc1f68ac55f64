from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from f09_memory.schema import MemoryLayer
from f09_memory.summarization import CandidateHeap, eligible_slots, quantize, select_batch

NOW = 100_000


def keys_of(am: Any, slots: np.ndarray) -> list[int]:
    return sorted(int(k) for k in am.key[slots])


def test_the_k_most_recent_episodic_records_are_never_eligible(build: Any, town: Any) -> None:
    engine, am = build(town(20), summarization_keep_recent=5, summarization_batch_size=50)
    assert list(range(15)) == keys_of(am, eligible_slots(am, NOW, engine.config))
    assert list(range(15)) == sorted(select_batch(am, NOW, engine.config))


def test_keep_recent_counts_episodic_records_only(build: Any, town: Any) -> None:
    engine, am = build(town(8), summarization_keep_recent=3, summarization_batch_size=50)
    for i in range(4):  # newer, but semantic: must not push episodic ones out of the K
        engine.ingest("npc", f"Fact {i} about Bram.", layer="semantic", importance=0.1,
                      now=20_000 + i)
    assert [0, 1, 2, 3, 4] == keys_of(am, eligible_slots(am, NOW, engine.config))


def test_no_candidate_when_the_ring_holds_at_most_k(build: Any, town: Any) -> None:
    engine, am = build(town(5), summarization_keep_recent=5)
    assert [] == select_batch(am, NOW, engine.config)
    engine2, am2 = build(town(5), summarization_keep_recent=0, summarization_batch_size=50)
    assert [0, 1, 2, 3, 4] == sorted(select_batch(am2, NOW, engine2.config))


def test_flagged_records_are_never_selected(build: Any, town: Any) -> None:
    items = town(20)
    for i in (0, 3, 7):
        items[i]["flagged"] = True
        items[i]["importance"] = 0.0  # would be first in the heap otherwise
    engine, am = build(items, summarization_batch_size=50)
    selected = select_batch(am, NOW, engine.config)
    assert [k for k in range(15) if k not in (0, 3, 7)] == sorted(selected)


def test_only_live_episodic_records_older_than_the_window_qualify(
    build: Any, town: Any
) -> None:
    engine, am = build(town(20), summarization_batch_size=50, episodic_window=10_000)
    engine.ingest("npc", "Old lore of Bram.", layer="semantic", importance=0.0, now=0)
    am.remove(2)
    # now=15_000: anchors <= 5_000 are old enough; keys 15.. are the K most recent
    assert [0, 1, 3, 4, 5] == keys_of(am, eligible_slots(am, 15_000, engine.config))
    for slot in eligible_slots(am, NOW, engine.config):
        assert MemoryLayer.EPISODIC.code == am.layer[slot] and am.alive[slot]


def test_decayed_importance_above_the_threshold_is_left_alone(build: Any, town: Any) -> None:
    items = town(20)
    for i in range(0, 20, 2):
        items[i]["importance"] = 0.9
    engine, am = build(items, summarization_batch_size=50, summarization_max_importance=0.5)
    assert [1, 3, 5, 7, 9, 11, 13] == sorted(select_batch(am, NOW, engine.config))
    # once time has aged them (decay is lazy: a function of now), the important ones qualify
    later = 10 * engine.config.decay_half_life_ms
    assert list(range(15)) == sorted(select_batch(am, later, engine.config))


def test_heap_order_is_importance_then_anchor_then_key(build: Any) -> None:
    items = [
        {"content": "Saw Bram.", "importance": 0.4, "now": 0},    # key 0
        {"content": "Saw Lysa.", "importance": 0.1, "now": 500},  # key 1
        {"content": "Saw Mira.", "importance": 0.1, "now": 200},  # key 2
        {"content": "Saw Tom.", "importance": 0.1, "now": 200},   # key 3
        {"content": "Saw Ann.", "importance": 0.3, "now": 0},     # key 4
    ]
    engine, am = build(items, summarization_keep_recent=0, summarization_batch_size=50)
    assert [2, 3, 1, 4, 0] == select_batch(am, NOW, engine.config)


def test_floats_are_quantized_before_ordering(build: Any) -> None:
    items = [
        {"content": "Saw Bram.", "importance": 0.3, "now": 0},                 # key 0
        {"content": "Saw Lysa.", "importance": 0.3 - 1e-12, "now": 900},      # key 1
    ]
    engine, am = build(items, summarization_keep_recent=0)
    # raw floats would put key 1 first; quantized they tie and the older anchor wins
    assert [0, 1] == select_batch(am, NOW, engine.config)
    assert 300_000_000 == quantize(0.3 - 1e-12, 1_000_000_000)


def test_batch_is_capped_at_the_batch_size(build: Any, town: Any) -> None:
    engine, am = build(town(40), summarization_batch_size=7)
    batch = select_batch(am, NOW, engine.config)
    assert list(range(7)) == batch


def test_heap_operations_and_invariant() -> None:
    heap = CandidateHeap([(5, 0, 3), (1, 9, 4), (1, 2, 8)])
    heap._check()
    heap.push(0, 100, 1)
    heap._check()
    assert (0, 100, 1) == heap.peek()
    assert 4 == len(heap)
    assert (0, 100, 1) == heap.pop()
    assert [8, 4] == heap.pop_keys(2)
    assert [3] == heap.pop_keys(10)
    assert 0 == len(heap)
    with pytest.raises(IndexError):
        heap.pop()
    with pytest.raises(IndexError):
        heap.peek()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stress_heap_pops_in_sorted_order(seed: int) -> None:
    rng = random.Random(seed)
    entries = [(rng.randrange(5), rng.randrange(10), key) for key in range(300)]
    heap = CandidateHeap(entries[:100])
    for e in entries[100:]:
        heap.push(*e)
        if e[2] % 50 == 0:
            heap._check()
    assert [e[2] for e in sorted(entries)] == heap.pop_keys(1000)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_preselection_with_limit_is_exact_even_with_ties(build: Any, seed: int) -> None:
    rng = random.Random(seed)
    items = [{"content": f"Saw Bram {i}.", "importance": rng.choice([0.1, 0.2, 0.3]),
              "now": rng.randrange(0, 5) * 100} for i in range(200)]
    items.sort(key=lambda it: it["now"])
    engine, am = build(items, summarization_keep_recent=10, summarization_batch_size=25)
    full = CandidateHeap.from_agent(am, NOW, engine.config).pop_keys(10_000)
    assert full[:25] == select_batch(am, NOW, engine.config)
    limited = CandidateHeap.from_agent(am, NOW, engine.config, limit=25)
    limited._check()
    assert full[:25] == limited.pop_keys(25)


@pytest.mark.parametrize("seed", range(6))
def test_the_heap_keys_are_the_decay_of_the_eligible_slots_alone(build: Any, seed: int) -> None:
    """The heap's decayed importances come from one decay over every slot; each one is the
    float a decay of the eligible slots alone gives (elementwise), so the selection is the
    same whichever slots are computed together."""
    from f09_memory.decay.decay import importance_decayed

    rng = random.Random(seed)
    items = [{"content": f"event {i} {rng.random():.6f}", "importance": rng.random(),
              "now": rng.randrange(0, 60_000), "layer": rng.choice(["episodic", "semantic"]),
              "flagged": rng.random() < 0.1} for i in range(rng.randrange(30, 300))]
    engine, am = build(items, summarization_batch_size=1_000, summarization_keep_recent=4,
                       summarization_max_importance=0.7)
    cfg = engine.config
    now = 70_000 + rng.randrange(0, 10**6)
    slots = eligible_slots(am, now, cfg)
    alone = np.rint(importance_decayed(am.importance[slots], am.anchor[slots], now,
                                       cfg.decay_half_life_ms) * cfg.score_quantum)
    heap = CandidateHeap.from_agent(am, now, cfg)
    heap._check()
    expected = sorted(zip(alone.astype(np.int64).tolist(), am.anchor[slots].tolist(),
                          am.key[slots].tolist(), strict=True))
    assert [heap.pop() for _ in range(len(heap))] == expected and len(expected) > 0
