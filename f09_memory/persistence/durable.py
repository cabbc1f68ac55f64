"""Durable mode: an SQLite (WAL) snapshot plus a journal of every state-changing call.

``MemoryEngine.open(path)`` loads the latest snapshot and replays the journal; the engine
is deterministic, so replaying the same calls rebuilds the same state (same state hash).
Each state-changing call is appended to the journal and committed before it returns
(``commit="call"``), or at the end of every ``tick`` (``commit="tick"``: fewer fsyncs, up to
one frame of calls lost on a crash). Every ``checkpoint_every`` journaled calls (and on
``close()``) the snapshot is rewritten and the journal emptied, in one transaction.

Not journaled: reads, and adapter changes (``set_embedder``); summarization through an LLM
is journaled as its two phases (poll, then complete with the LLM's text), so a replay needs
no LLM.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from f09_memory.errors import SnapshotInvalidError
from f09_memory.persistence.journal import from_journal, to_journal

__all__ = ["CommitMode", "DurableLog", "DurableSession", "replay"]

CommitMode = Literal["call", "tick"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), "
    "data BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS journal (seq INTEGER PRIMARY KEY, op TEXT NOT NULL)",
)


class DurableLog:
    """The SQLite side of durable mode: one snapshot row and an append-only journal.

    Args:
        path: The database file (created if missing).
        commit: ``call`` commits every journaled call; ``tick`` commits at each tick.
    """

    def __init__(self, path: str | os.PathLike[str], *, commit: CommitMode = "call") -> None:
        if commit not in ("call", "tick"):
            raise SnapshotInvalidError("commit must be 'call' or 'tick'",
                                       details={"field": "commit"})
        self.path = Path(path)
        self.commit_mode: CommitMode = commit
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            for statement in _SCHEMA:
                self._db.execute(statement)
        except sqlite3.DatabaseError as exc:
            raise SnapshotInvalidError(
                f"{str(self.path)!r} is not a usable f09-memory database ({exc})",
                details={"path": str(self.path)}) from exc
        self._in_txn = False
        self.pending = 0

    def snapshot(self) -> bytes | None:
        """The stored snapshot bytes, or ``None`` for a new database."""
        row = self._db.execute("SELECT data FROM snapshot WHERE id = 1").fetchone()
        return None if row is None else bytes(row[0])

    def ops(self) -> Iterator[dict[str, Any]]:
        """The journaled calls since the snapshot, in order."""
        for (op,) in self._db.execute("SELECT op FROM journal ORDER BY seq"):
            value: dict[str, Any] = json.loads(op)
            yield value

    def journal_size(self) -> int:
        """Calls journaled since the snapshot."""
        row = self._db.execute("SELECT COUNT(*) FROM journal").fetchone()
        return int(row[0])

    def append(self, op: dict[str, Any]) -> None:
        """Journal one call (committed now in ``call`` mode)."""
        if not self._in_txn:
            self._db.execute("BEGIN IMMEDIATE")
            self._in_txn = True
        self._db.execute("INSERT INTO journal (op) VALUES (?)",
                         (json.dumps(op, sort_keys=True, separators=(",", ":")),))
        self.pending += 1
        if self.commit_mode == "call":
            self.commit()

    def commit(self) -> None:
        """Make everything journaled so far durable."""
        if self._in_txn:
            self._db.execute("COMMIT")
            self._in_txn = False

    def checkpoint(self, snapshot: bytes) -> None:
        """Replace the snapshot and empty the journal atomically."""
        if not self._in_txn:
            self._db.execute("BEGIN IMMEDIATE")
        self._db.execute("INSERT OR REPLACE INTO snapshot (id, data) VALUES (1, ?)",
                         (snapshot,))
        self._db.execute("DELETE FROM journal")
        self._db.execute("COMMIT")
        self._in_txn = False
        self.pending = 0

    def close(self) -> None:
        """Commit and close the database."""
        self.commit()
        self._db.close()


class DurableSession:
    """An engine's durable mode: journals completed calls and checkpoints.

    Args:
        log: The database.
        checkpoint_every: Journaled calls between two snapshots.
        snapshot: Returns the engine's snapshot bytes (for checkpoints).
        pressure: Returns the pressure to journal with a ``tick`` when a rate governor
            supplied it (``None`` when the engine has no pressure source).
    """

    def __init__(self, log: DurableLog, checkpoint_every: int,
                 snapshot: Callable[[], bytes], pressure: Callable[[], str | None]) -> None:
        self.log = log
        self.checkpoint_every = checkpoint_every
        self._snapshot = snapshot
        self._pressure = pressure
        self.depth = 0

    def record(self, name: str, arguments: dict[str, Any]) -> None:
        """Journal one completed call (and commit, or checkpoint, as configured)."""
        op: dict[str, Any] = {"op": name, "args": to_journal(arguments)}
        if name == "tick":
            pressure = self._pressure()
            if pressure is not None:
                op["pressure"] = pressure
        self.log.append(op)
        if name == "tick":
            self.log.commit()
        if self.log.pending >= self.checkpoint_every:
            self.checkpoint()

    def checkpoint(self) -> None:
        """Rewrite the snapshot and empty the journal (one transaction)."""
        self.log.checkpoint(self._snapshot())

    def close(self) -> None:
        """Checkpoint and close the database."""
        self.checkpoint()
        self.log.close()


def replay(log: DurableLog, root: object, set_pressure: Callable[[str], None]) -> None:
    """Apply the journaled calls of ``log`` to ``root`` (the engine), in order.

    Op names are attribute paths from ``root`` (``ingest``, ``summarization.poll``); only
    methods marked journaled are run.

    Raises:
        SnapshotInvalidError: An op names no journaled method or is malformed.
    """
    for seq, op in enumerate(log.ops()):
        name = op.get("op") if isinstance(op, dict) else None
        target: object = root
        method: object = None
        if isinstance(name, str):
            *path, last = name.split(".")
            for part in path:
                target = getattr(target, part, None)
            method = getattr(target, last, None)
        args = op.get("args") if isinstance(op, dict) else None
        if not getattr(method, "__journaled__", False) or not isinstance(args, dict):
            raise SnapshotInvalidError(f"journal row {seq} names no journaled operation",
                                       details={"row": seq})
        if "pressure" in op:  # the state the rate governor reported at that tick
            set_pressure(str(op["pressure"]))
        assert callable(method)
        method(**from_journal(args))
