"""The engine's persistence methods: ``save``/``load``, ``dumps``/``loads``, ``open``, ``close``.

:class:`PersistenceFacade` is a base of :class:`~f09_memory.engine.MemoryEngine` holding its
persistence API; every method delegates to ``persistence.engine_io`` through the engine's
explicit parts (``_parts``). The engine supplies ``_build`` (a new engine from a config, a
seed and adapters). Also here: :data:`DEFAULT_EMBEDDER`, the "default embedder" sentinel the
constructors share.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from pydantic import SecretStr

from f09_memory._owner import ThreadOwner, owned_by_thread
from f09_memory.config.config import MemoryConfig
from f09_memory.errors import InputInvalidError, MemoryEngineError, SnapshotInvalidError
from f09_memory.persistence import engine_io, snapshot
from f09_memory.persistence.durable import CommitMode, DurableLog, DurableSession
from f09_memory.persistence.journal import DurableHook
from f09_memory.protocols import EmbeddingProvider, PressureSource, TokenCounter

if TYPE_CHECKING:
    from f09_memory.summarization.service import SummarizationService

__all__ = ["DEFAULT_EMBEDDER", "DefaultEmbedder", "PersistenceFacade"]


class DefaultEmbedder:
    """The type of :data:`DEFAULT_EMBEDDER` ("use the default embedder")."""

    def __repr__(self) -> str:
        return "DEFAULT_EMBEDDER"


DEFAULT_EMBEDDER = DefaultEmbedder()
"""Pass as ``embedder=`` for the default: the seeded ``HashingEmbedder``. ``None`` means none."""




@owned_by_thread()
class PersistenceFacade:
    """Persistence methods of the engine facade (see the module docstring)."""

    _owner: ThreadOwner
    _parts: engine_io.EngineParts
    _durable: DurableHook | None
    summarization: SummarizationService

    @classmethod
    def _build(cls, config: MemoryConfig | None, seed: int,
               adapters: dict[str, Any]) -> Self:
        """A new engine of this class (supplied by the engine)."""
        raise NotImplementedError

    def _snapshot_bytes(self) -> bytes:
        return engine_io.snapshot_bytes(self._parts)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the whole engine state to ``path`` atomically (temp file, fsync, rename).

        ``MemoryEngine.load(path)`` gives an engine with the same ``state_hash()`` whose
        next retrievals are identical. The columns are written as binary arrays.
        Runtime complexity: O(total records), numpy-bound.

        Returns:
            The path written.

        Raises:
            InputInvalidError: ``path`` is not a str or ``os.PathLike`` (or holds a NUL).
            StorageFailedError: The file cannot be written (missing or read-only folder,
                full disk: ``MEMORY_STORAGE_FAILED``, an ``OSError``; the original error is
                the cause, ``details["errno"]`` its number); no partial file is left and a
                file already at ``path`` is unchanged.
        """
        return engine_io.save(self._parts, path)

    def dumps(self) -> bytes:
        """The snapshot :meth:`save` writes, as bytes, without a file.

        :meth:`loads` restores it (same ``state_hash()``, identical next retrievals). For
        hosts that keep state in their own checkpoints (a component's ``get_state``).
        Runtime complexity: O(total records), numpy-bound.

        Returns:
            The snapshot bytes (the file format of :meth:`save`).
        """
        return engine_io.snapshot_bytes(self._parts)

    @classmethod
    def loads(
        cls,
        data: bytes,
        *,
        token_counter: TokenCounter | None = None,
        pressure_source: PressureSource | None = None,
        embedder: EmbeddingProvider | DefaultEmbedder | None = DEFAULT_EMBEDDER,
        max_bytes: int = snapshot.DEFAULT_MAX_BYTES,
        redaction_key: str | SecretStr | None = None,
    ) -> Self:
        """Rebuild an engine from bytes written by :meth:`dumps` (or a :meth:`save` file's).

        The same checks and arguments as :meth:`load`: adapters and the redaction key are
        passed again, the bytes are not trusted.

        Raises:
            SnapshotInvalidError: ``data`` is not bytes, or is too large, truncated,
                corrupted, foreign, of another format version, or holds an inconsistent
                state; nothing is half-loaded.
            InputInvalidError: ``max_bytes`` is not a positive integer.
            ConfigInvalidError: The snapshot's redaction key is missing or another was given.
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise SnapshotInvalidError("snapshot data must be bytes (from MemoryEngine.dumps())",
                                       details={"field": "data"})
        return cls._restore(snapshot.loads(bytes(data), max_bytes=max_bytes), "<bytes>",
                            token_counter=token_counter, pressure_source=pressure_source,
                            embedder=embedder, redaction_key=redaction_key)

    @classmethod
    def _restore(cls, snap: snapshot.Snapshot, path: str | os.PathLike[str], *,
                 redaction_key: str | SecretStr | None = None,
                 **adapters: Any) -> Self:
        manifest = snap.manifest
        try:
            config = MemoryConfig.parse(manifest.get("config"))
        except (MemoryEngineError, TypeError, ValueError) as exc:
            raise engine_io.config_error(path) from exc
        config = config.with_redaction_key(redaction_key)  # a missing or wrong key: say so
        try:
            engine = cls._build(config, int(manifest.get("seed", 0)), adapters)
        except (MemoryEngineError, TypeError, ValueError) as exc:
            raise engine_io.config_error(path) from exc
        engine_io.restore(engine._parts, snap)
        return engine

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        token_counter: TokenCounter | None = None,
        pressure_source: PressureSource | None = None,
        embedder: EmbeddingProvider | DefaultEmbedder | None = DEFAULT_EMBEDDER,
        max_bytes: int = snapshot.DEFAULT_MAX_BYTES,
        redaction_key: str | SecretStr | None = None,
    ) -> Self:
        """Rebuild an engine from a snapshot written by :meth:`save`.

        Adapters are not stored: pass the same ``embedder`` (same ``version``) to keep the
        saved vectors, otherwise records are re-embedded by later ticks. Nor is the
        redaction key: a snapshot written with one needs it again, as ``redaction_key`` or
        the ``MEMORY_REDACTION_KEY`` variable (see ``MemoryConfig.with_redaction_key``).
        The file is not trusted: a payload above ``max_bytes`` (default 4 GiB) is refused
        unread, memory stays a small multiple of the file size, and the state's invariants
        are checked before anything is restored (``persistence.validate``).

        Raises:
            SnapshotInvalidError: The file is missing, too large, truncated, corrupted,
                foreign, of another format version, or holds an inconsistent state
                (``MEMORY_SNAPSHOT_INVALID``, naming the problem); nothing is half-loaded.
            InputInvalidError: ``max_bytes`` is not a positive integer.
            ConfigInvalidError: The snapshot's redaction key is missing or another was given.
        """
        return cls._restore(snapshot.read_snapshot(path, max_bytes=max_bytes), path,
                            token_counter=token_counter, pressure_source=pressure_source,
                            embedder=embedder, redaction_key=redaction_key)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        config: MemoryConfig | None = None,
        *,
        seed: int = 0,
        commit: CommitMode = "call",
        checkpoint_every: int = 10_000,
        token_counter: TokenCounter | None = None,
        pressure_source: PressureSource | None = None,
        embedder: EmbeddingProvider | DefaultEmbedder | None = DEFAULT_EMBEDDER,
    ) -> Self:
        """Open (or create) a durable engine on an SQLite database (WAL).

        A new database starts from ``config`` and ``seed``; an existing one restores its
        snapshot and applies its journal (``config``/``seed`` are then ignored, except
        ``config.redaction_key``: a database made with a key needs it, from there or the
        ``MEMORY_REDACTION_KEY`` variable), giving the state of the last commit, with the
        same state hash, even after the process was killed. The journal holds each call's
        effects (already redacted), written before the call returns and committed then
        (``commit="call"``) or at each tick (``commit="tick"``); a call that raises or
        cannot be written is undone. The database is locked to this engine until
        :meth:`close` (see ``persistence.durable``).

        Raises:
            SnapshotInvalidError: The file is not an f09-memory database (it is not
                modified), or its snapshot or journal is damaged (the row is named).
            StorageFailedError: Another engine has the database open, or it cannot be
                written.
            ConfigInvalidError: The database's redaction key is missing or another was given.
            InputInvalidError: ``checkpoint_every`` is not a positive integer.
        """
        if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or (
                checkpoint_every < 1):
            raise InputInvalidError("checkpoint_every must be a positive integer",
                                    details={"field": "checkpoint_every"})
        log = DurableLog(path, commit=commit)
        adapters: dict[str, Any] = {"token_counter": token_counter,
                                    "pressure_source": pressure_source, "embedder": embedder}
        try:
            blob = log.snapshot()
            if blob is None:
                engine = cls._build(config, seed, adapters)
                log.checkpoint(engine._snapshot_bytes())
            else:
                engine = cls._restore(
                    snapshot.loads(blob, path), path, **adapters,
                    redaction_key=None if config is None else config.redaction_key)
                engine_io.apply_journal(engine._parts, log)
        except BaseException:
            log.close()  # nothing was modified; release the lock
            raise
        session = engine_io.start_session(engine._parts, log, checkpoint_every)
        engine._durable = engine.summarization._durable = session
        return engine

    def checkpoint(self) -> None:
        """Durable mode: rewrite the snapshot and empty the journal (one transaction).

        Raises:
            StorageFailedError: The snapshot could not be written (the journal is kept).
        """
        if isinstance(self._durable, DurableSession):
            self._durable.checkpoint()

    def close(self) -> None:
        """Durable mode: checkpoint, close the database and release it (no-op otherwise).

        Raises:
            StorageFailedError: The final checkpoint failed; the database is closed anyway
                and its journal replays on the next open.
        """
        if isinstance(self._durable, DurableSession):
            session = self._durable
            self._durable = self.summarization._durable = None
            session.close()

