"""AgentVectors: an agent's vectors, embedded flags and vector index (AgentMemory's base).

The vectors of embedded records live in one float32 column by slot; the ``embedded`` flag
is part of a record's digest, so changing it un-hashes the record. The agent's index (exact
or HNSW) is built in key order by tick slices (``start_index_build`` ...
``finish_index_build``) and serves queries once complete. Durable mode records each of
these mutators (``persistence.recording``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from f09_memory.protocols import VectorIndex
from f09_memory.store.records import SCALAR_MAX

__all__ = ["AgentVectors"]


class AgentVectors:
    """Vector and index primitives of :class:`~f09_memory.store.agent.AgentMemory`."""

    capacity: int
    hi: int
    next_rev: int
    dirty: bool
    key: NDArray[np.int64]
    embedded: NDArray[np.bool_]
    hashed: NDArray[np.bool_]
    rev: NDArray[np.int64]
    vectors: NDArray[np.float32] | None
    index: VectorIndex | None
    index_build: VectorIndex | None
    index_cursor: int

    def _unhash(self, slot: int) -> None:
        raise NotImplementedError  # AgentMemory's

    def _set_building(self, building: bool) -> None:
        raise NotImplementedError  # AgentMemory's: the survey row's build flag

    def _unindex(self, keys: list[int]) -> None:
        """Take removed records out of the index and the build in progress.

        (An updated record only loses its vector: its key stays in the index until it is
        re-embedded.)
        """
        if self.index is None and self.index_build is None:
            return
        gone = np.asarray(keys, dtype=np.int64)
        for index in (self.index, self.index_build):
            if index is not None:
                index.remove(gone)

    def ensure_vectors(self, dim: int) -> NDArray[np.float32]:
        """The vector column, allocated (or re-allocated for a new ``dim``) on demand."""
        if self.vectors is None or self.vectors.shape[1] != dim:
            self.vectors = np.zeros((self.capacity, dim), dtype=np.float32)
            self.embedded[:] = False
        return self.vectors

    def drop_index(self) -> None:
        """Forget the index and any build in progress (a new embedder makes them stale)."""
        self.index = None
        self.index_build = None
        self.index_cursor = 0
        self._set_building(False)

    def mark_embedded(self, slot: int, embedded: bool) -> None:
        """Set the embedded flag of ``slot`` (it is part of the record's digest)."""
        if bool(self.embedded[slot]) != embedded:
            self._unhash(slot)
            self.embedded[slot] = embedded

    def mark_embedded_many(self, slots: NDArray[np.intp]) -> None:
        """Mark ``slots`` (distinct) embedded; their digests are recomputed.

        The flag is part of a record's digest; a slot not embedded before gets the next
        ``rev``, in order.
        """
        if slots.shape[0] <= SCALAR_MAX:  # a few slots: scalar stores beat numpy calls
            self._mark_embedded(slots.tolist())
            return
        for slot in slots[self.hashed[slots] | self.embedded[slots]].tolist():
            self._unhash(slot)
        fresh = slots[~self.embedded[slots]]
        self.rev[fresh] = np.arange(self.next_rev, self.next_rev + fresh.shape[0],
                                    dtype=np.int64)
        self.next_rev += int(fresh.shape[0])
        self.embedded[slots] = True
        self.dirty = True

    def _mark_embedded(self, slots: Sequence[int]) -> None:
        """:meth:`mark_embedded_many` of a few slots, by scalar stores."""
        embedded, hashed, rev = self.embedded, self.hashed, self.rev
        for slot in slots:
            was = embedded.item(slot)
            if was or hashed.item(slot):
                self._unhash(slot)
            if not was:
                rev[slot] = self.next_rev
                self.next_rev += 1
                embedded[slot] = True
        self.dirty = True

    def attach_vectors(self, slots: NDArray[np.intp], vectors: NDArray[np.float32]) -> None:
        """Store the unit vectors of the live ``slots`` and mark them embedded.

        They are added to the agent's index when it is complete (a build in progress picks
        them up in key order). Runtime complexity: O(k) numpy.
        """
        column = self.ensure_vectors(int(vectors.shape[1]))
        if slots.shape[0] <= SCALAR_MAX:  # row stores beat a fancy-indexed one for a few
            slot_list = slots.tolist()
            for row, slot in enumerate(slot_list):
                column[slot] = vectors[row]
            self._mark_embedded(slot_list)
        else:
            column[slots] = vectors
            self.mark_embedded_many(slots)
        if self.index is not None:
            self.index.add(self.key[slots], vectors)

    def attach_rows(self, slots: Sequence[int], vectors: NDArray[np.float32],
                    rows: Sequence[int]) -> None:
        """:meth:`attach_vectors` of ``vectors[rows]`` to the live ``slots`` (distinct).

        For a few records of an agent (a frame's, an async job's): no index arrays are built
        for a few rows, and a run of slots given as a ``range`` (new records above the
        agent's high-water mark) takes its rows, a ``range`` too, in one block copy.
        Runtime complexity: O(k).
        """
        block = (vectors[rows.start:rows.stop] if isinstance(rows, range) and rows.step == 1
                 else None)  # a run of rows: a view, no copy
        if len(slots) > SCALAR_MAX:
            self.attach_vectors(np.asarray(slots, dtype=np.intp),
                                vectors[rows] if block is None else block)
            return
        column = self.vectors
        if column is None or column.shape[1] != vectors.shape[1]:
            column = self.ensure_vectors(int(vectors.shape[1]))
        if block is not None and isinstance(slots, range) and slots.step == 1:
            column[slots.start:slots.stop] = block
        else:
            for row, slot in zip(rows, slots, strict=True):
                column[slot] = vectors[row]
        self._mark_embedded(slots)
        if self.index is not None:
            self.index.add(self.key[slots], vectors[rows] if block is None else block)

    def start_index_build(self, index: VectorIndex) -> None:
        """Begin building ``index`` (empty) in key order; it serves no query until done."""
        self.index_build = index
        self.index_cursor = 0
        self._set_building(True)

    def add_to_index_build(self, keys: NDArray[np.int64], vectors: NDArray[np.float32]) -> None:
        """Insert the next ``keys`` (ascending, above the cursor) into the index being built."""
        assert self.index_build is not None
        self.index_build.add(keys, vectors)
        self.index_cursor = int(keys[-1]) + 1

    def finish_index_build(self) -> None:
        """Make the completed build the agent's index."""
        self.index, self.index_build, self.index_cursor = self.index_build, None, 0
        self._set_building(False)

    def clear_embedded(self) -> None:
        """Mark every vector stale (a new embedder); every live digest is recomputed."""
        for slot in np.flatnonzero(self.embedded[: self.hi]).tolist():
            self._unhash(slot)
        self.embedded[:] = False
