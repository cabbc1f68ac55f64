"""AgentColumns: a batch's values written into an agent's columns (a base of ``AgentMemory``).

The scalar-store and numpy paths of ``AgentMemory.add_batch``: a few records by scalar
stores through the columns' memoryviews, more by one slice or indexed write per column.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.schema.enums import LAYERS_BY_CODE, MemoryLayer
from f09_memory.store.records import SCALAR_MAX, NewRecords

__all__ = ["SCALAR_COLUMNS", "STAT_BUILDING", "STAT_DEADLINE", "STAT_EPISODIC_ANCHOR",
           "STAT_REMOVED", "STAT_WIDTH", "AgentColumns", "grown"]

SCALAR_COLUMNS = ("key", "layer", "importance", "flagged", "created", "anchor", "deadline",
                  "status", "redacted", "tagset", "alive", "rev")
"""Columns written by scalar stores, kept in this order in one tuple (``AgentColumns._arrays``)
for a one-step unpacking (``tokens`` is not: a host's token counter may return any number,
which numpy converts)."""

_EPISODIC = MemoryLayer.EPISODIC.code
_N_LAYERS = len(LAYERS_BY_CODE)
STAT_DEADLINE = _N_LAYERS
"""Column of :attr:`AgentMemory.stats` holding ``min_deadline`` (after the layer counts)."""
STAT_EPISODIC_ANCHOR = _N_LAYERS + 1
"""Column of :attr:`AgentMemory.stats` holding ``min_episodic_anchor``."""
STAT_BUILDING = _N_LAYERS + 2
"""Column of :attr:`AgentMemory.stats`: 1 while a vector index is being built, else 0."""
STAT_REMOVED = _N_LAYERS + 3
"""Column of :attr:`AgentMemory.stats`: records removed so far (any reason; not saved)."""
STAT_WIDTH = _N_LAYERS + 4
"""Columns of a survey row."""


def grown(old: NDArray[Any], capacity: int) -> NDArray[Any]:
    """``old`` copied into a zeroed array of ``capacity`` rows (a column grown)."""
    new = np.zeros((capacity, *old.shape[1:]), dtype=old.dtype)
    new[: old.shape[0]] = old
    return new


class AgentColumns:
    """Column writes of :class:`~f09_memory.store.agent.AgentMemory`."""

    key: NDArray[np.int64]
    layer: NDArray[np.int8]
    importance: NDArray[np.float64]
    flagged: NDArray[np.bool_]
    created: NDArray[np.int64]
    anchor: NDArray[np.int64]
    tokens: NDArray[np.int32]
    deadline: NDArray[np.int64]
    status: NDArray[np.int8]
    redacted: NDArray[np.bool_]
    tagset: NDArray[np.int32]
    alive: NDArray[np.bool_]
    rev: NDArray[np.int64]
    layer_counts: NDArray[np.int64]
    _arrays: tuple[Any, ...]
    """The :data:`SCALAR_COLUMNS` arrays, in order (rebuilt when the columns grow)."""
    _views: tuple[Any, ...] | None
    """Their memoryviews, built by :meth:`scalar_views` (``None`` until needed)."""
    _counts: Any

    def scalar_views(self) -> tuple[Any, ...]:
        """Memoryviews of the :data:`SCALAR_COLUMNS`, built on first use after a grow.

        The scalar stores of a single record and of a short batch go through them (a scalar
        store through a memoryview costs 50 ns where a numpy one costs 80: some 3% of a
        single ingest, and of a crowd frame's ``ingest_batch``). Each is two objects the
        garbage collector tracks, 24 per agent (long-lived: some 5 bytes per record at
        1,000 records per agent).
        """
        views = self._views
        if views is None:
            views = self._views = tuple(map(memoryview, self._arrays))
        return views

    def _store_one(self, slot: int, new: NewRecords, rev: int) -> None:
        """The columns of a one-record batch: plain scalar stores (the single-ingest path)."""
        key, layer, importance, flagged, created, anchor, deadline, status, redacted, \
            tagset, alive, revs = self.scalar_views()
        key[slot] = new.keys[0]
        layer[slot] = code = new.layer[0]
        importance[slot] = new.importance[0]
        flagged[slot] = new.flagged[0]
        created[slot] = new.created[0]
        anchor[slot] = new.anchor[0]
        self.tokens[slot] = new.tokens[0]
        deadline[slot] = new.deadline[0]
        status[slot] = new.status[0]
        redacted[slot] = new.redacted[0]
        tagset[slot] = new.tagset[0]
        alive[slot] = True  # embedded and hashed are clear in a free slot
        revs[slot] = rev
        self._counts[code] += 1

    def _store_columns(self, slot_list: Sequence[int], new: NewRecords, rev: int,
                       fresh: int = -1, all_episodic: bool = False) -> None:
        """The columns of a batch: scalar stores for a few records, else slices or indexing.

        Scalar stores beat a slice or fancy-indexed write of a short list (one numpy call
        per column costs about as much as ten scalar stores). Slices serve a larger batch
        when the slots are ``fresh, fresh + 1, ...`` (``fresh >= 0``: above the high-water
        mark, never used, so all-zero columns need no write). A slot that holds no record
        has its ``embedded`` and ``hashed`` flags clear already (``remove`` clears them; see
        ``_check``), so they are not written.
        """
        n = len(slot_list)
        if all_episodic:
            self._counts[_EPISODIC] += n
        elif n <= SCALAR_MAX:  # a few codes: scalar adds beat a bincount
            counts = self._counts
            for code in new.layer:
                counts[code] += 1
        else:
            self.layer_counts += np.bincount(np.asarray(new.layer, dtype=np.intp),
                                             minlength=_N_LAYERS)
        if n <= SCALAR_MAX:  # scalar stores beat a numpy call per column for a few records
            key, layer, importance, flagged, created, anchor, deadline, status, redacted, \
                tagset, alive, revs = self.scalar_views()
            tokens = self.tokens
            for slot, k, code, imp, flag, made, anc, tok, due, st, red, ts in zip(
                    slot_list, new.keys, new.layer, new.importance, new.flagged, new.created,
                    new.anchor, new.tokens, new.deadline, new.status, new.redacted, new.tagset,
                    strict=True):
                key[slot] = k
                layer[slot] = code
                importance[slot] = imp
                flagged[slot] = flag
                created[slot] = made
                anchor[slot] = anc
                tokens[slot] = tok
                deadline[slot] = due
                status[slot] = st
                redacted[slot] = red
                tagset[slot] = ts
                alive[slot] = True
                revs[slot] = rev
                rev += 1
            return
        columns: tuple[tuple[NDArray[Any], Sequence[Any]], ...] = (
            (self.key, new.keys), (self.layer, new.layer), (self.importance, new.importance),
            (self.created, new.created), (self.anchor, new.anchor), (self.tokens, new.tokens),
            (self.deadline, new.deadline))
        sparse: tuple[tuple[NDArray[Any], Sequence[Any]], ...] = (
            (self.flagged, new.flagged), (self.status, new.status),
            (self.redacted, new.redacted), (self.tagset, new.tagset))
        index: slice | NDArray[np.intp]
        if fresh >= 0:  # never used: these columns hold zeros there (see _check)
            index = slice(fresh, fresh + n)
            columns += tuple(pair for pair in sparse if any(pair[1]))
        else:
            index = np.asarray(slot_list, dtype=np.intp)
            columns += sparse
        for column, values in columns:
            column[index] = values
        self.rev[index] = np.arange(rev, rev + n, dtype=np.int64)
        self.alive[index] = True
