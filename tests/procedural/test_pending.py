"""PendingQueue: the miner's unread action records, counted exactly and incrementally."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.procedural.actions import may_be_action
from f09_memory.procedural.pending import PendingQueue
from f09_memory.store.store import MemoryStore


def act(engine: MemoryEngine, agent: str, action: str, now: int, **extra: Any) -> None:
    engine.ingest(agent, f"did {action}", now=now, metadata={"attributes": {
        "action": action, "outcome": "success", "context": "hungry"}}, **extra)


def brute_unmined(engine: MemoryEngine) -> int:
    """Live records that may be actions past their agent's cursor, counted from scratch."""
    miner = engine._miner
    assert miner is not None
    total = 0
    for am in engine._state.store:
        _, next_key = miner.cursors.cursor(am.agent_id)
        total += sum(1 for k in am.slot_of if k >= next_key and may_be_action(
            am.extras.get(k), am.source_event.get(k)))
    return total


def queue_of(engine: MemoryEngine) -> PendingQueue:
    miner = engine._miner
    assert miner is not None
    return miner._pending_queue()


def test_the_count_follows_adds_reads_and_removals() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    for i in range(6):
        act(engine, "ann", ["eat", "sleep"][i % 2], now=i * 1_000)
    engine.ingest("ann", "a plain thought", now=6_000)  # not an action: not queued
    queue = queue_of(engine)
    assert 6 == queue.total == engine.tick(6_001, budget_ms=0.001).backlog.actions_unmined + 1
    ids = [r.id for r in engine.records("ann") if r.content.startswith("did")]
    engine.forget(record_ids=ids[-2:])  # two unread actions removed: seen by the counter
    report = engine.tick(6_002, budget_ms=0.001)  # one more mined (the tick's first item)
    assert (1, 2) == (report.mined, report.backlog.actions_unmined)
    assert 2 == brute_unmined(engine)
    queue._check({am.agent_id: am for am in engine._state.store})
    assert 0 == engine.tick(6_003).backlog.actions_unmined == queue.total
    assert 0 == len(queue)


def test_forgetting_an_agent_drops_its_entry() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    for agent in ("ann", "bob"):
        for i in range(3):
            act(engine, agent, "eat", now=i)
    queue = queue_of(engine)
    assert 6 == queue.total
    engine.forget(agent_id="bob")
    assert 3 == queue.total and "bob" not in queue
    assert 3 == engine.tick(10, budget_ms=0.001).backlog.actions_unmined + 1


def test_the_queue_is_rebuilt_exactly_after_a_load(tmp_path: Path) -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    for i in range(40):
        act(engine, f"npc-{i % 4}", ["eat", "work", "rest"][i % 3], now=i * 100)
    engine.tick(4_000, budget_ms=0.05)  # part mined
    left = engine.tick(4_001, budget_ms=0.05).backlog.actions_unmined
    engine.save(tmp_path / "q.f09")
    loaded = MemoryEngine.load(tmp_path / "q.f09", embedder=None)
    assert left == queue_of(loaded).total == brute_unmined(loaded)
    for e in (engine, loaded):
        for t in range(4_002, 4_040):
            e.tick(t, budget_ms=0.05)
    assert engine.state_hash() == loaded.state_hash()


def test_unit_operations_keep_the_invariants() -> None:
    store = MemoryStore(100)
    am = store.get_or_create("ann")
    queue = PendingQueue()
    queue.add(am, [3, 5, 8])
    queue.add(am, [9])
    assert 4 == queue.total and [3, 5, 8, 9] == queue.get("ann").unread()  # type: ignore[union-attr]
    queue.consume("ann", 3)
    assert 1 == queue.total and [9] == queue.get("ann").unread()  # type: ignore[union-attr]
    queue.consume("ann", 1)
    assert 0 == queue.total and queue.get("ann") is None
    queue.add(am, [10, 11])
    queue.drop("ann")
    assert 0 == queue.total and [] == queue.agents()
    with pytest.raises(KeyError):
        queue.consume("ann", 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stress_the_count_is_exact_through_ingest_eviction_forget_and_ticks(seed: int) -> None:
    rng = np.random.default_rng(seed)
    engine = MemoryEngine(MemoryConfig(episodic_max=12), embedder=None)  # ring evictions
    now = 0
    for _ in range(150):
        now += int(rng.integers(1, 500))
        agent = f"npc-{int(rng.integers(0, 5))}"
        op = rng.random()
        if op < 0.55:
            act(engine, agent, str(rng.choice(["eat", "work", "rest"])), now)
        elif op < 0.65:
            engine.ingest(agent, "thinking", now=now)
        elif op < 0.72 and engine.count(agent):
            records = engine.records(agent)
            engine.forget(record_ids=[records[int(rng.integers(0, len(records)))].id])
        elif op < 0.75 and engine.count(agent):
            engine.forget(agent_id=agent)
        else:
            report = engine.tick(now, budget_ms=float(rng.choice([0.001, 0.3, 2.0])))
            assert report.backlog.actions_unmined == brute_unmined(engine)
        queue_of(engine)._check({am.agent_id: am for am in engine._state.store})
