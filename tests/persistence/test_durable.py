"""Durable mode: snapshot + journal on SQLite; reopening restores the last commit exactly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, bundle_hash
from f09_memory.determinism.scenario import LIFECYCLE_CONFIG
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.ingestion import Claim
from f09_memory.testing import FailingLLM, ScriptedLLM, ScriptedPressure

MIN = 60_000


def crash(engine: MemoryEngine) -> None:
    """Let the database go as a killed process would: no checkpoint, lock released."""
    assert engine._durable is not None
    engine._durable.log.close()


def workload(engine: MemoryEngine) -> None:
    """Every kind of journaled call, in a deterministic order."""
    engine.ingest_many("npc", [{"content": f"Traded nails with Borin, day {i}.",
                                "importance": 0.2, "tags": ["market"]} for i in range(30)],
                       now=0)
    engine.ingest("npc", "Mail from ana@example.org about the debt.", now=1)
    engine.ingest_claim("npc", "Budget is 5 gold.", Claim("project:mill", "budget_is", "5"),
                        now=2)
    engine.ingest_claim("npc", "Budget is 9 gold.", Claim("project:mill", "budget_is", "9"),
                        now=3)
    engine.tick(30 * MIN, budget_ms=2.0)
    tasks = engine.summarization.poll(30 * MIN)
    for task in tasks:
        engine.summarization.complete(task.id, "Mara traded iron nails with Borin.")
    engine.set_pressure("soft")
    engine.tick(60 * MIN)
    engine.summarize_pending(FailingLLM(), now=60 * MIN)
    engine.tick(90 * MIN, budget_ms=1.0)
    engine.summarize_pending(ScriptedLLM(["Borin and Mara traded at the market."]),
                             now=90 * MIN)


def config() -> MemoryConfig:
    return MemoryConfig(**{**LIFECYCLE_CONFIG, "summarization_batch_size": 8})


def test_reopening_replays_the_journal_to_the_same_state(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    durable = MemoryEngine.open(db, config(), seed=7)
    workload(durable)
    reference = MemoryEngine(config(), seed=7)
    workload(reference)
    assert reference.state_hash() == durable.state_hash()
    crash(durable)  # as after a crash, only what was committed is on disk
    reopened = MemoryEngine.open(db)
    assert reference.state_hash() == reopened.state_hash()
    request = RetrievalRequest(agent_id="npc", purpose="reasoning", max_tokens=400,
                               query="nails")
    assert bundle_hash(reference.retrieve(request)) == bundle_hash(reopened.retrieve(request))
    reopened._check()


def test_checkpoints_empty_the_journal_and_keep_the_state(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    durable = MemoryEngine.open(db, config(), seed=7, checkpoint_every=3)
    workload(durable)
    assert durable._durable is not None and durable._durable.log.journal_size() < 3
    durable.close()
    reference = MemoryEngine(config(), seed=7)
    workload(reference)
    assert reference.state_hash() == MemoryEngine.open(db).state_hash()


def test_the_rate_governor_reading_is_journaled_with_the_tick(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    source = ScriptedPressure([(100, "throttle"), (300, "normal")])
    durable = MemoryEngine.open(db, seed=1, pressure_source=source)
    durable.ingest("npc", "x", now=0)
    durable.tick(150)
    crash(durable)
    reopened = MemoryEngine.open(db)  # no governor now: the journal supplies its reading
    assert "throttle" == reopened.pressure.value
    assert durable.state_hash() == reopened.state_hash()


def test_tick_commit_mode_loses_at_most_the_calls_since_the_last_tick(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    durable = MemoryEngine.open(db, seed=1, commit="tick")
    durable.ingest("npc", "before the tick", now=0)
    durable.tick(10)
    committed = durable.state_hash()
    durable.ingest("npc", "after the tick", now=11)  # not committed yet
    crash(durable)
    assert committed == MemoryEngine.open(db).state_hash()


def test_rejected_calls_are_not_journaled(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    durable = MemoryEngine.open(db, seed=1)
    with pytest.raises(MemoryEngineError):
        durable.ingest("npc", "", now=0)
    assert durable._durable is not None and 0 == durable._durable.log.journal_size()


def test_a_foreign_file_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "not.db"
    bad.write_bytes(b"hello, this is not sqlite" * 100)
    with pytest.raises(MemoryEngineError) as info:
        MemoryEngine.open(bad)
    assert ErrorCode.MEMORY_SNAPSHOT_INVALID == info.value.code
    with pytest.raises(MemoryEngineError):
        MemoryEngine.open(tmp_path / "ok.db", checkpoint_every=0)


CHILD = textwrap.dedent("""
    import sys
    from f09_memory import MemoryConfig, MemoryEngine
    engine = MemoryEngine.open(sys.argv[1], MemoryConfig(episodic_max=50), seed=3)
    for i in range(100_000):
        engine.ingest(f"npc-{i % 3}", f"event {i} at the well", importance=0.5, now=i)
        if i % 7 == 6:
            engine.tick(i, budget_ms=1.0)
        print(i, flush=True)
""")


def committed_position(target: str, limit: int) -> tuple[int, int] | None:
    """The (step, call) after which the child's state hash was ``target`` (each call is one
    commit), replaying the child's calls in memory."""
    engine = MemoryEngine(MemoryConfig(episodic_max=50), seed=3)
    for i in range(limit):
        engine.ingest(f"npc-{i % 3}", f"event {i} at the well", importance=0.5, now=i)
        if engine.state_hash() == target:
            return i, 0
        if i % 7 == 6:
            engine.tick(i, budget_ms=1.0)
            if engine.state_hash() == target:
                return i, 1
    return None


def test_a_process_killed_mid_run_reopens_at_its_last_commit(tmp_path: Path) -> None:
    db = tmp_path / "killed.db"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db)], stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONHASHSEED": "99"})
    assert child.stdout is not None
    last = -1
    for line in child.stdout:
        last = int(line)
        if last >= 120:
            break
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()
    assert -signal.SIGKILL == child.returncode
    reopened = MemoryEngine.open(db)
    # the reopened state is exactly the state after some committed call, at or after the
    # last step the child reported (it may have run further before the kill landed)
    position = committed_position(reopened.state_hash(), limit=20_000)
    assert position is not None and position[0] >= last
    reopened._check()


def test_crowd_calls_update_forget_and_dedup_replay_exactly(tmp_path: Path) -> None:
    def work(engine: MemoryEngine) -> None:
        out = engine.ingest_batch([{"agent_id": f"npc-{i % 3}", "content": f"saw wolf {i % 4}"}
                                   for i in range(12)], now=1)
        engine.update(out.ids[0], importance=0.9, tags=["danger"], content="saw two wolves")
        engine.forget([out.ids[1]])
        engine.forget(agent_id="npc-2")
        engine.ingest("npc-0", "Saw two  wolves", now=2)  # dedup reinforces the update

    cfg = MemoryConfig(dedup_window_ms=100)
    durable = MemoryEngine.open(tmp_path / "crowd.db", cfg, seed=3)
    work(durable)
    reference = MemoryEngine(cfg, seed=3)
    work(reference)
    crash(durable)
    reopened = MemoryEngine.open(tmp_path / "crowd.db")
    assert reference.state_hash() == durable.state_hash() == reopened.state_hash()
    reopened._check()
