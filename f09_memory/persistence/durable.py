"""Durable mode: an SQLite (WAL) snapshot plus a write-ahead journal of effects.

``MemoryEngine.open(path)`` loads the latest snapshot and applies the journal; each journal
row holds the *effects* of one completed call (``persistence.effects``): records created
with their redacted fields and assigned keys, records removed or updated, vectors, clock,
pressure and summarizer changes. Replay applies them to the store without running any logic
(no LLM, no embedder, no event handler), so a row can never fail the way its call could.

Guarantees:

- **Write-ahead.** A call's row is appended (and, with ``commit="call"``, committed) before
  the call returns. A call that raises, or whose row cannot be written (disk full, I/O
  error), is undone: the engine reloads the last committed state from the database, so the
  state after a reopen always equals the acknowledged calls. ``commit="tick"`` commits at
  the end of every ``tick``: a crash loses the calls since the last tick.
- **One writer.** The database is locked (SQLite exclusive locking mode) from ``open`` to
  ``close``; another ``open``, in this process or another, gets ``MEMORY_STORAGE_FAILED``.
- **Ours only.** A new database is marked with ``PRAGMA application_id`` and a schema
  version; ``open`` refuses any other file without modifying it.
- **Checkpoints.** Every ``checkpoint_every`` rows (and on ``close()``) the snapshot is
  rewritten and the journal emptied, in one transaction; a failed checkpoint leaves the
  journal in place and is retried.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from f09_memory.errors import SnapshotInvalidError, StorageFailedError
from f09_memory.persistence.effects import json_default
from f09_memory.persistence.recording import EffectRecorder

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "CommitMode", "DurableLog", "DurableSession"]

logger = logging.getLogger("f09_memory")

CommitMode = Literal["call", "tick"]
"""When the journal commits: after every state-changing call, or once per tick."""
APPLICATION_ID = 0x46303931
"""``PRAGMA application_id`` of an f09-memory database ("F091")."""
SCHEMA_VERSION = 2
"""``PRAGMA user_version``: 2 is the journal of effects."""

_SCHEMA = (
    "CREATE TABLE snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), data BLOB NOT NULL)",
    "CREATE TABLE journal (seq INTEGER PRIMARY KEY, op TEXT NOT NULL)",
)


def _storage_error(path: Path, exc: sqlite3.Error, doing: str) -> StorageFailedError:
    locked = isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)
    if locked:
        return StorageFailedError(
            f"{str(path)!r} is open in another engine (one writer at a time): close it "
            "there first", details={"path": str(path), "reason": "locked"})
    return StorageFailedError(
        f"could not {doing} {str(path)!r} ({type(exc).__name__}: {exc}); the call was undone "
        "- free disk space or fix the file system, then retry",
        details={"path": str(path), "reason": "io"})


def _is_new(path: Path) -> bool:
    """Whether ``path`` is missing or an empty file (a new database).

    Raises:
        SnapshotInvalidError: ``path`` is a directory or other non-file.
    """
    if not path.exists():
        return True
    if not path.is_file():
        raise SnapshotInvalidError(f"{str(path)!r} is not a file",
                                   details={"path": str(path)})
    return path.stat().st_size == 0


def _check_ours(db: sqlite3.Connection, path: Path) -> None:
    """Refuse a file that is not an f09-memory database of this schema (read-only check).

    The header is read through SQLite, never by opening the file again: closing another
    descriptor of the file would drop this process's SQLite locks (POSIX).

    Raises:
        SnapshotInvalidError: Not SQLite, another application's database, or another
            journal schema; nothing was written.
    """
    try:
        app_id = int(db.execute("PRAGMA application_id").fetchone()[0])
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise
        raise SnapshotInvalidError(
            f"{str(path)!r} is not an f09-memory database (not SQLite); open a new path",
            details={"path": str(path)}) from exc
    if app_id != APPLICATION_ID:
        raise SnapshotInvalidError(
            f"{str(path)!r} is an SQLite database of another application (application_id "
            f"{app_id}); it was not modified - open a new path",
            details={"path": str(path), "applicationId": app_id})
    if version != SCHEMA_VERSION:
        raise SnapshotInvalidError(
            f"{str(path)!r} has journal schema {version}; this release reads "
            f"{SCHEMA_VERSION}", details={"path": str(path), "schema": version})


class DurableLog:
    """The SQLite side of durable mode: one snapshot row and an append-only journal.

    Args:
        path: The database file (created if missing).
        commit: ``call`` commits every journaled call; ``tick`` commits at each tick.

    Raises:
        SnapshotInvalidError: The file exists and is not an f09-memory database.
        StorageFailedError: Another engine holds the database, or it cannot be written.
    """

    def __init__(self, path: str | os.PathLike[str], *, commit: CommitMode = "call") -> None:
        if commit not in ("call", "tick"):
            raise SnapshotInvalidError("commit must be 'call' or 'tick'",
                                       details={"field": "commit"})
        self.path = Path(path)
        self.commit_mode: CommitMode = commit
        new = _is_new(self.path)
        try:
            db = sqlite3.connect(self.path, isolation_level=None, timeout=0)
        except sqlite3.Error as exc:
            raise _storage_error(self.path, exc, "open") from exc
        self._db = db
        try:
            db.execute("PRAGMA locking_mode=EXCLUSIVE")  # before the first access: one writer
            if not new:
                _check_ours(db, self.path)
            db.execute("BEGIN IMMEDIATE")  # takes the lock now, held until close
            if new:
                for statement in _SCHEMA:
                    db.execute(statement)
                db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("COMMIT")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as exc:
            db.close()
            raise _storage_error(self.path, exc, "open") from exc
        except BaseException:
            db.close()
            raise
        self._in_txn = False
        self.pending = 0
        """Rows appended since the last checkpoint."""

    def snapshot(self) -> bytes | None:
        """The stored snapshot bytes, or ``None`` for a new database."""
        row = self._db.execute("SELECT data FROM snapshot WHERE id = 1").fetchone()
        return None if row is None else bytes(row[0])

    def rows(self) -> Iterator[tuple[int, Any]]:
        """``(seq, decoded row)`` of the journal since the snapshot, in order.

        Raises:
            SnapshotInvalidError: A row is not valid JSON (named by its ``seq``).
        """
        for seq, text in self._db.execute("SELECT seq, op FROM journal ORDER BY seq"):
            try:
                yield seq, json.loads(text)
            except (TypeError, ValueError, RecursionError) as exc:
                raise SnapshotInvalidError(f"journal row {seq} is not a valid effect row",
                                           details={"row": seq}) from exc

    def journal_size(self) -> int:
        """Rows journaled since the snapshot."""
        row = self._db.execute("SELECT COUNT(*) FROM journal").fetchone()
        return int(row[0])

    def append(self, row: dict[str, Any]) -> None:
        """Journal one row (committed now in ``call`` mode).

        Raises:
            StorageFailedError: The row could not be written; the open transaction (every
                row since the last commit) is rolled back.
        """
        text = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          default=json_default)
        try:
            if not self._in_txn:
                self._db.execute("BEGIN IMMEDIATE")
                self._in_txn = True
            self._db.execute("INSERT INTO journal (op) VALUES (?)", (text,))
        except sqlite3.Error as exc:
            self.rollback()
            raise _storage_error(self.path, exc, "append to") from exc
        self.pending += 1
        if self.commit_mode == "call":
            self.commit()

    def commit(self) -> None:
        """Make everything journaled so far durable.

        Raises:
            StorageFailedError: The commit failed; the rows since the last commit are gone.
        """
        if self._in_txn:
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self.rollback()
                raise _storage_error(self.path, exc, "commit to") from exc
            self._in_txn = False

    def rollback(self) -> None:
        """Drop the rows since the last commit (after a failed write)."""
        try:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
        except sqlite3.Error:  # the transaction may already be gone (SQLite rolled it back)
            pass
        self._in_txn = False
        self.pending = self.journal_size()

    def checkpoint(self, snapshot: bytes) -> None:
        """Replace the snapshot and empty the journal atomically.

        Raises:
            StorageFailedError: Nothing changed (the journal is kept).
        """
        try:
            if not self._in_txn:
                self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("INSERT OR REPLACE INTO snapshot (id, data) VALUES (1, ?)",
                             (snapshot,))
            self._db.execute("DELETE FROM journal")
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self.rollback()
            raise _storage_error(self.path, exc, "checkpoint") from exc
        self._in_txn = False
        self.pending = 0

    def close(self) -> None:
        """Close the database (uncommitted rows are dropped) and release the lock."""
        self._db.close()


class DurableSession:
    """An engine's durable mode: journals the effects of each completed call.

    ``journaled`` calls :meth:`complete` after the outermost call returns and :meth:`abort`
    when it raises.

    Args:
        log: The database.
        checkpoint_every: Rows between two snapshots.
        recorder: Records the engine's effects.
        snapshot: Returns the engine's snapshot bytes (for checkpoints).
        reload: Restores the engine to the database's committed (or appended) state.
    """

    def __init__(self, log: DurableLog, checkpoint_every: int, recorder: EffectRecorder,
                 snapshot: Callable[[], bytes], reload: Callable[[], None]) -> None:
        self.log = log
        self.checkpoint_every = checkpoint_every
        self.recorder = recorder
        self._snapshot = snapshot
        self._reload = reload
        self.depth = 0

    def complete(self, call: str) -> None:
        """Journal the effects of the completed call ``call`` (write-ahead).

        Raises:
            StorageFailedError: The row could not be written; the engine was reloaded from
                the database, so the call (and, in ``tick`` mode, the frame) is undone.
        """
        try:
            row = self.recorder.take(call)
            if row is not None:
                self.log.append(row)
            if call == "tick":
                self.log.commit()
        except StorageFailedError:
            self._reload()
            raise
        if self.log.pending >= self.checkpoint_every and (
                call == "tick" or self.log.commit_mode == "call"):  # tick mode: at a commit
            try:
                self.checkpoint()
            except StorageFailedError as exc:  # the journal is intact: retried later
                logger.warning("[MEM][DURABLE] checkpoint failed, journal kept: %s",
                               exc.message)

    def abort(self) -> None:
        """Undo a call that raised: reload the engine if it changed anything."""
        if self.recorder.changed():
            self._reload()

    def checkpoint(self) -> None:
        """Rewrite the snapshot and empty the journal (one transaction).

        Raises:
            StorageFailedError: The snapshot could not be written (the journal is kept).
        """
        self.log.checkpoint(self._snapshot())
        self.recorder.reset()

    def close(self) -> None:
        """Checkpoint, close the database and stop recording.

        Raises:
            StorageFailedError: The final checkpoint failed; the database is still closed
                and holds every committed call (its journal replays on the next open).
        """
        try:
            self.log.commit()
            self.checkpoint()
        finally:
            self.recorder.detach()
            self.log.close()
