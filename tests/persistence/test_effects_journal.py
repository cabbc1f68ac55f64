"""The journal of effects: replay without logic, write-ahead, undo, one writer, ours only."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, bundle_hash
from f09_memory.errors import ErrorCode, MemoryEngineError, SnapshotInvalidError
from f09_memory.ingestion import Claim
from f09_memory.persistence.durable import APPLICATION_ID
from f09_memory.persistence.effects import EFFECTS, EFFECTS_VERSION
from f09_memory.testing import FakeEmbedder, ScriptedLLM

MIN = 60_000
SECRET_MAIL = "zq-marker-77@example.org"
SECRET_CARD = "4111 1111 1111 1111"


def crash(engine: MemoryEngine) -> None:
    """Let the database go as a killed process would: no checkpoint, lock released."""
    assert engine._durable is not None
    engine._durable.log.close()


class RefusingEmbedder(FakeEmbedder):
    """Has the version of a ``FakeEmbedder`` but refuses to embed: replay must not call it."""

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        raise AssertionError("replay called the embedder")


def rich_workload(engine: MemoryEngine) -> None:
    """Ingest paths, claims, update/forget, handler ingests, ticks, summaries, an index."""
    def echo(event: Any) -> None:  # a handler that writes: its ingest belongs to the call
        if event.importance >= 0.95 and event.agent_id == "guard":
            engine.ingest("scribe", f"noted {event.id}", importance=0.1)

    engine.bus.subscribe("memory:record:created", echo)
    engine.ingest_many("npc", [{"content": f"Traded nails with Borin, day {i}.",
                                "importance": 0.2, "tags": ["market", f"d{i % 3}"]}
                               for i in range(40)], now=0)
    engine.ingest("npc", f"Mail from {SECRET_MAIL} about card {SECRET_CARD}.", now=1,
                  metadata={"attributes": {"contact": SECRET_MAIL}})
    engine.ingest("guard", "The gate was forced open!", importance=0.99, now=2)
    engine.ingest_claim("npc", "Budget is 5 gold.", Claim("project:mill", "budget_is", "5"),
                        now=3)
    engine.ingest_claim("npc", "Budget is 9 gold.", Claim("project:mill", "budget_is", "9"),
                        now=4)
    out = engine.ingest_batch([{"agent_id": f"crowd-{i % 4}", "content": f"wolf {i}"}
                               for i in range(24)], now=5)
    engine.update(out.ids[0], importance=0.9, tags=["danger"], content="two wolves")
    engine.forget([out.ids[1]])
    engine.forget(agent_id="crowd-3")
    engine.ingest_many("big", [f"stone {i} of the wall" for i in range(90)], now=6)
    engine.set_pressure("soft")
    for step in range(1, 6):
        engine.tick(step * 20 * MIN, budget_ms=2.0)
    engine.summarize_pending(ScriptedLLM(["Borin and the market, in short."]), now=100 * MIN)
    engine.tick(101 * MIN, budget_ms=5.0)


def config() -> MemoryConfig:
    return MemoryConfig(episodic_window=10 * MIN, summarization_min_interval_ms=MIN,
                        summarization_batch_size=8, semantic_preselect_threshold=32,
                        semantic_preselect_min_ratio=0,
                        exact_index_max=64, embedding_dim=16, hnsw_m=8,
                        hnsw_ef_construction=40)


def test_reopen_rebuilds_the_exact_state_without_the_embedder_or_the_llm(
        tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    live = MemoryEngine.open(db, config(), seed=5, embedder=FakeEmbedder(16))
    rich_workload(live)
    assert live.count("scribe") == 1  # the handler's ingest happened inside a call
    assert any(am.index is not None for am in live._state.store)  # an index was built
    crash(live)
    reopened = MemoryEngine.open(db, embedder=RefusingEmbedder(16))
    assert live.state_hash() == reopened.state_hash()
    assert live._snapshot_bytes() == reopened._snapshot_bytes()  # indexes and queues too
    for agent in ("npc", "big", "crowd-0"):
        request = RetrievalRequest(agent_id=agent, purpose="reasoning", max_tokens=300)
        assert bundle_hash(live.retrieve(request)) == bundle_hash(reopened.retrieve(request))
    reopened._check()
    reopened.close()


def test_the_journal_holds_effects_already_redacted(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    live = MemoryEngine.open(db, config(), seed=5, embedder=FakeEmbedder(16))
    rich_workload(live)
    files = [db, Path(f"{db}-wal")]
    raw = b"".join(p.read_bytes() for p in files if p.exists())
    digits = SECRET_CARD.replace(" ", "").encode()
    for needle in (SECRET_MAIL.encode(), SECRET_CARD.encode(), digits):
        assert needle not in raw  # while open (db + WAL)
    assert live._durable is not None
    rows = [row for _, row in live._durable.log.rows()]
    assert rows and all(row["v"] == EFFECTS_VERSION and "fx" in row for row in rows)
    assert {"ingest", "tick", "summarize_pending"} <= {row["call"] for row in rows}
    names = {fx[0] for row in rows for fx in row["fx"]}
    assert names <= set(EFFECTS)
    crash(live)
    raw = b"".join(p.read_bytes() for p in files if p.exists())
    assert SECRET_MAIL.encode() not in raw and digits not in raw  # after a crash
    MemoryEngine.open(db).close()
    assert SECRET_MAIL.encode() not in db.read_bytes()  # after a checkpoint and close


def _insert_row(db: Path, text: str) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("INSERT INTO journal (op) VALUES (?)", (text,))


@pytest.mark.parametrize("row", [
    '{"op": "save", "args": {"path": "x"}}',  # a call row of the old format
    '{"op": "__init__", "args": {}}',
    json.dumps({"v": EFFECTS_VERSION + 1, "call": "ingest", "fx": []}),
    json.dumps({"v": EFFECTS_VERSION, "call": "ingest", "fx": [["record.explode", "npc"]]}),
    json.dumps({"v": EFFECTS_VERSION, "call": "ingest", "fx": [["record.remove", "nobody", 1]]}),
    json.dumps({"v": EFFECTS_VERSION, "call": "ingest", "fx": [["record.add", "npc", {}]]}),
    json.dumps({"v": EFFECTS_VERSION, "call": "ingest", "fx": "not a list"}),
    "{not json",
    "[" * 50_000 + "]" * 50_000,
])
def test_a_bad_row_is_refused_by_number_and_nothing_is_modified(tmp_path: Path,
                                                               row: str) -> None:
    db = tmp_path / "mem.db"
    engine = MemoryEngine.open(db, seed=1)
    engine.ingest("npc", "first", now=0)
    engine.close()
    _insert_row(db, row)
    before = db.read_bytes()
    with pytest.raises(SnapshotInvalidError) as info:
        MemoryEngine.open(db)
    assert "journal row 1" in info.value.message
    assert 1 == info.value.details["row"]
    assert before == db.read_bytes()
    assert not (tmp_path / "x").exists()


def test_a_second_writer_is_refused_in_process_and_across_processes(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    engine = MemoryEngine.open(db, seed=1)
    engine.ingest("npc", "held", now=0)
    with pytest.raises(MemoryEngineError) as info:
        MemoryEngine.open(db)
    assert ErrorCode.MEMORY_STORAGE_FAILED == info.value.code
    assert "locked" == info.value.details["reason"]
    child = textwrap.dedent("""
        import sys
        from f09_memory import MemoryEngine, MemoryEngineError
        try:
            MemoryEngine.open(sys.argv[1])
        except MemoryEngineError as exc:
            print(exc.code.value)
    """)
    out = subprocess.run([sys.executable, "-c", child, str(db)], capture_output=True,
                         text=True, timeout=120, check=True)
    assert "MEMORY_STORAGE_FAILED" == out.stdout.strip()
    engine.ingest("npc", "still the writer", now=1)
    engine.close()
    again = MemoryEngine.open(db)  # released by close
    assert 2 == again.count("npc")
    again.close()


def test_a_foreign_sqlite_file_or_another_schema_is_refused_untouched(tmp_path: Path) -> None:
    foreign = tmp_path / "game.db"
    with closing(sqlite3.connect(foreign)) as conn, conn:
        conn.execute("CREATE TABLE saves (slot INTEGER, data BLOB)")
        conn.execute("INSERT INTO saves VALUES (1, x'00')")
    before = foreign.read_bytes()
    with pytest.raises(SnapshotInvalidError) as info:
        MemoryEngine.open(foreign)
    assert "another application" in info.value.message
    assert before == foreign.read_bytes()
    older = tmp_path / "older.db"
    with closing(sqlite3.connect(older)) as conn, conn:
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute("PRAGMA user_version=1")
        conn.execute("CREATE TABLE journal (seq INTEGER PRIMARY KEY, op TEXT)")
    with pytest.raises(SnapshotInvalidError) as info:
        MemoryEngine.open(older)
    assert "schema 1" in info.value.message
    with pytest.raises(SnapshotInvalidError):
        MemoryEngine.open(tmp_path)  # a directory


def _limit_pages(engine: MemoryEngine, pages: int) -> None:
    assert engine._durable is not None
    engine._durable.log._db.execute(f"PRAGMA max_page_count={pages}")


def test_disk_full_undoes_the_call_and_the_engine_recovers(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    engine = MemoryEngine.open(db, seed=1, checkpoint_every=1_000_000)
    engine.ingest("npc", "fits", now=0)
    page_count = engine._durable.log._db.execute("PRAGMA page_count").fetchone()[0]  # type: ignore[union-attr]
    _limit_pages(engine, page_count)
    acknowledged = engine.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        for i in range(200):
            engine.ingest("npc", f"event {i} " + "x" * 3000, now=1 + i)
            acknowledged = engine.state_hash()
    assert ErrorCode.MEMORY_STORAGE_FAILED == info.value.code
    assert isinstance(info.value, OSError)
    assert acknowledged == engine.state_hash()  # the failed call was undone
    engine._check()
    _limit_pages(engine, 1_000_000)  # space is free again
    engine.ingest("npc", "after the disk was cleaned", now=10_000)
    final = engine.state_hash()
    crash(engine)
    reopened = MemoryEngine.open(db)
    assert final == reopened.state_hash()
    ids = [r.content for r in reopened.records("npc")]
    assert len(ids) == len(set(ids))  # nothing applied twice


def test_tick_mode_disk_full_undoes_the_frame(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    engine = MemoryEngine.open(db, seed=1, commit="tick", checkpoint_every=1_000_000)
    engine.ingest("npc", "frame one", now=0)
    engine.tick(1)
    committed = engine.state_hash()
    page_count = engine._durable.log._db.execute("PRAGMA page_count").fetchone()[0]  # type: ignore[union-attr]
    _limit_pages(engine, page_count)
    with pytest.raises(MemoryEngineError) as info:
        for i in range(100):
            engine.ingest("npc", f"frame two {i} " + "y" * 3000, now=2)
        engine.tick(3)
    assert ErrorCode.MEMORY_STORAGE_FAILED == info.value.code
    assert committed == engine.state_hash()


def test_a_raising_propagate_handler_undoes_its_call(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    engine = MemoryEngine.open(db, MemoryConfig(bus_handler_errors="propagate"), seed=1)
    engine.ingest("npc", "kept, for a while", ttl=10, now=0)
    before = engine.state_hash()

    def veto(event: Any) -> None:
        raise RuntimeError("the host's handler failed")

    unsubscribe = engine.bus.subscribe("memory:record:created", veto)
    with pytest.raises(RuntimeError):
        engine.ingest("npc", "vetoed", now=1)
    assert before == engine.state_hash()
    engine._check()
    unsubscribe()
    unsubscribe = engine.bus.subscribe("memory:record:expired", veto)  # aborts the tick
    with pytest.raises(RuntimeError):
        engine.tick(100)
    assert before == engine.state_hash() and 0 == engine.now and 1 == engine.count("npc")
    unsubscribe()
    engine.ingest("npc", "accepted", now=2)
    final = engine.state_hash()
    crash(engine)
    assert final == MemoryEngine.open(db).state_hash()


def test_an_internal_error_after_a_partial_change_is_undone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "mem.db"
    engine = MemoryEngine.open(db, seed=1)
    engine.ingest("npc", "kept", now=0)
    before = engine.state_hash()
    writer = engine._writer

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OverflowError("a defect after the records were stored")

    monkeypatch.setattr(writer, "publish", broken)
    with pytest.raises(OverflowError):
        engine.ingest_many("npc", ["a", "b", "c"], now=1)
    monkeypatch.undo()
    assert before == engine.state_hash()
    engine._check()
    crash(engine)
    reopened = MemoryEngine.open(db)  # the failed call never reached the journal
    assert before == reopened.state_hash()
    reopened.ingest("npc", "works", now=2)
    reopened.close()
