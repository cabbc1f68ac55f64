"""An engine's persistence, driven through its explicit parts (never the facade's privates).

``MemoryEngine.save`` / ``load`` / ``open`` delegate here: :class:`EngineParts` names what
persistence reads and writes (the :class:`~f09_memory.core.state.EngineState`, the
summarizer, the semantic memory) and the one thing it asks of the facade (drop the caches
built from the store). :func:`save`, :func:`snapshot_bytes` and :func:`restore` are the file
snapshot; :func:`apply_journal` and :func:`start_session` the durable mode
(``persistence.durable``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from f09_memory.core.state import EngineState
from f09_memory.errors import (
    InputInvalidError,
    MemoryEngineError,
    SnapshotInvalidError,
    StorageFailedError,
)
from f09_memory.persistence import snapshot
from f09_memory.persistence.durable import DurableLog, DurableSession
from f09_memory.persistence.effects import Replay
from f09_memory.persistence.recording import EffectRecorder
from f09_memory.persistence.state import get_state, set_state
from f09_memory.retrieval.semantic import SemanticMemory
from f09_memory.summarization.pipeline import Summarizer

__all__ = ["EngineParts", "apply_journal", "config_error", "restore", "save",
           "snapshot_bytes", "start_session"]


@dataclass(frozen=True, slots=True)
class EngineParts:
    """What persistence reads and writes of one engine.

    Attributes:
        state: The engine state (store, clock, cursors, vocabularies).
        summarizer: The summarizer (tasks, ready queue).
        semantic: The semantic memory (vectors' provider, async queue, query table).
        clear_caches: Drops the objects the facade built from the store (after a restore).
    """

    state: EngineState
    summarizer: Summarizer
    semantic: SemanticMemory
    clear_caches: Callable[[], None]


def snapshot_bytes(parts: EngineParts) -> bytes:
    """The snapshot bytes of the engine's whole state."""
    semantic = parts.semantic
    pending = semantic.pending
    manifest, arrays = get_state(parts.state, parts.summarizer, semantic.version,
                                 None if pending is None else pending.get_state(),
                                 None if pending is None else semantic.queries)
    return snapshot.dumps(manifest, arrays)


def save(parts: EngineParts, path: object) -> Path:
    """Write the engine's snapshot to ``path`` atomically (``MemoryEngine.save``).

    Raises:
        InputInvalidError: ``path`` is not a str or ``os.PathLike`` (or holds a NUL).
        StorageFailedError: The file cannot be written; nothing partial is left.
    """
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise InputInvalidError("path must be a str or os.PathLike naming the snapshot file",
                                details={"field": "path"})
    try:
        return snapshot.write_snapshot(path, snapshot_bytes(parts))
    except ValueError as exc:  # a NUL in the path
        raise InputInvalidError("path is not a usable file name",
                                details={"field": "path"}) from exc
    except OSError as exc:
        raise StorageFailedError(
            f"the snapshot could not be written ({exc.strerror or type(exc).__name__}): "
            "check that the folder exists, is writable and has space; nothing was written",
            details={"field": "path", "errno": exc.errno}) from exc


def restore(parts: EngineParts, snap: snapshot.Snapshot) -> None:
    """Load a verified snapshot into the fresh engine of ``parts``.

    Raises:
        SnapshotInvalidError: The state is inconsistent (nothing is half-loaded).
    """
    set_state(parts.state, parts.summarizer, parts.semantic, snap.manifest, snap.arrays)


def apply_journal(parts: EngineParts, log: DurableLog) -> None:
    """Apply the journal's effect rows to the state just restored from its snapshot.

    Raises:
        SnapshotInvalidError: A row is malformed, of another version or names an unknown
            effect (the message names the row); the engine is not usable.
    """
    replay = Replay(parts.state, parts.summarizer, parts.semantic)
    for seq, row in log.rows():
        try:
            replay.apply_row(row)
        except (MemoryEngineError, ValueError, TypeError, KeyError, IndexError,
                AttributeError, AssertionError, OverflowError, RecursionError) as exc:
            raise SnapshotInvalidError(
                f"journal row {seq} cannot be applied: effect {replay.at!r:.40} "
                f"({type(exc).__name__}); the database is damaged",
                details={"row": seq, "effect": replay.at[:40]}) from exc
    replay.finish()


def start_session(parts: EngineParts, log: DurableLog, checkpoint_every: int) -> DurableSession:
    """Start recording the engine's effects into ``log``; returns the durable session.

    The session's undo reloads the committed state from ``log`` into the same parts.
    """
    recorder = EffectRecorder(parts.state, parts.summarizer, parts.semantic)

    def reload() -> None:
        recorder.detach()
        blob = log.snapshot()
        assert blob is not None
        parts.state.reset()
        parts.semantic.queries.reset()
        restore(parts, snapshot.loads(blob, log.path))
        apply_journal(parts, log)
        parts.clear_caches()
        recorder.attach()

    session = DurableSession(log, checkpoint_every, recorder, lambda: snapshot_bytes(parts),
                             reload)
    recorder.attach()
    return session


def config_error(path: str | os.PathLike[str]) -> SnapshotInvalidError:
    """The error for a snapshot whose config cannot build an engine."""
    return SnapshotInvalidError(f"snapshot {str(path)!r} holds an invalid config",
                                details={"path": str(path)})

