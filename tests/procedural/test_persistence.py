"""The miner's state survives save/load and a durable reopen, mid-mining included."""

from __future__ import annotations

from pathlib import Path

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.procedural import Procedure

CONFIG = MemoryConfig(procedural={"min_support": 2})


def routine(engine: MemoryEngine, agent: str, times: int, start: int) -> int:
    t = start
    for _ in range(times):
        for action, outcome in (("eat", "success"), ("sleep", "success"), ("work", "failure")):
            t += 1_000
            engine.ingest(agent, f"did {action}", now=t, metadata={"attributes": {
                "action": action, "outcome": outcome, "context": "hungry"}})
    return t


def answers(engine: MemoryEngine) -> list[list[Procedure]]:
    return [engine.procedures(a, k=50, min_support=1) for a in ("a", "b")]


def mid_mining(engine: MemoryEngine) -> int:
    t = 0
    for agent in ("a", "b"):
        t = routine(engine, agent, times=4, start=t)
    engine.tick(t + 1, budget_ms=0.1)  # part of the records only
    return t + 2


def finish(engine: MemoryEngine, now: int) -> None:
    for i in range(100):
        if engine.tick(now + i, budget_ms=0.1).backlog.actions_unmined == 0:
            break


def test_save_and_load_mid_mining_keep_the_hash_and_the_answers(tmp_path: Path) -> None:
    engine = MemoryEngine(CONFIG, embedder=None)
    now = mid_mining(engine)
    assert engine.tick(now, budget_ms=0.01).backlog.actions_unmined > 0
    engine.save(tmp_path / "s.f09")
    loaded = MemoryEngine.load(tmp_path / "s.f09", embedder=None)
    loaded._check()
    assert engine.state_hash() == loaded.state_hash()
    assert answers(engine) == answers(loaded)
    finish(engine, now + 1)
    finish(loaded, now + 1)
    assert engine.state_hash() == loaded.state_hash()
    assert answers(engine) == answers(loaded)
    assert any(p.support == 4 for p in answers(loaded)[1])


def test_a_durable_engine_reopened_mid_mining_keeps_the_hash_and_the_answers(
        tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    live = MemoryEngine.open(db, CONFIG, embedder=None)
    now = mid_mining(live)
    partial = live.state_hash(), answers(live)
    live.close()
    reopened = MemoryEngine.open(db, embedder=None)
    reopened._check()
    assert partial == (reopened.state_hash(), answers(reopened))
    finish(reopened, now)
    done = reopened.state_hash(), answers(reopened)
    reopened.close()
    again = MemoryEngine.open(db, embedder=None)
    assert done == (again.state_hash(), answers(again))
    again.close()
    memory = MemoryEngine(CONFIG, embedder=None)  # the same calls, never persisted
    finish(memory, mid_mining(memory))
    assert done == (memory.state_hash(), answers(memory))


def test_a_journal_replayed_after_a_crash_gives_the_same_miner_state(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    live = MemoryEngine.open(db, CONFIG, embedder=None, commit="call")
    now = mid_mining(live)
    finish(live, now)
    expected = live.state_hash(), answers(live)
    assert live._durable is not None
    live._durable.log.close()  # killed: no checkpoint, the journal replays
    reopened = MemoryEngine.open(db, embedder=None)
    assert expected == (reopened.state_hash(), answers(reopened))
    reopened._check()
    reopened.close()


def test_actions_journaled_before_any_tick_are_mined_after_a_reopen(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    live = MemoryEngine.open(db, CONFIG, embedder=None)
    t = routine(live, "a", times=3, start=0)
    assert live._durable is not None
    live._durable.log.close()  # killed before any tick: the ingests replay from the journal
    reopened = MemoryEngine.open(db, embedder=None)
    memory = MemoryEngine(CONFIG, embedder=None)
    routine(memory, "a", times=3, start=0)
    assert 9 == reopened.tick(t + 1).mined == memory.tick(t + 1).mined
    assert (memory.state_hash(), answers(memory)) == (reopened.state_hash(), answers(reopened))
    reopened.close()
