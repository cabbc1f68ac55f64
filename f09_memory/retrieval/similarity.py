"""The semantic term of stored vectors: exact, and remembered for a repeated query.

:func:`exact_similarities` is ``max(0, cos(record, q))`` of candidate slots (0 where not
embedded), from :func:`raw_similarities` and :func:`clipped_term`.

An NPC often asks with the same query frame after frame (its goal, its situation) while
most of its memories do not change. Each similarity is one dot product of a slot's vector
with the query (``vector_index.kernels.similarities``), the same bits whatever the other
rows are, so a value computed in an earlier frame is the value a new product gives as long
as the slot holds the same vector. A slot's ``rev`` moves with every change of its record,
its vector included (a new record in the slot, a vector attached, re-embedded or dropped),
so a value is kept with the rev it was computed at: :func:`remembered_similarities`
computes only the slots whose rev moved and takes the others from the memo. With a repeated
query the semantic term then costs a gather per agent instead of a product over all of its
vectors (a crowd frame with a query per agent reads every vector otherwise).

The memo is one per agent (``AgentMemory.sims_memo``, the last query vector asked), not
state: it lives and dies with the agent's memory object (a load builds new ones), holds
two numbers per slot (16 bytes) and is made on the agent's first query.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from f09_memory.store.agent import AgentMemory
from f09_memory.vector_index.kernels import similarities

__all__ = ["SimilarityMemo", "clipped_term", "exact_similarities", "raw_similarities",
           "remembered_similarities"]


def exact_similarities(am: AgentMemory, slots: NDArray[np.intp], q: NDArray[np.float32],
                       ascending: bool = False) -> NDArray[np.float64]:
    """The semantic term ``max(0, cos(record, q))`` of ``slots`` (0 when not embedded).

    ``ascending``: ``slots`` are known to be ascending (candidates are); when they are then
    every slot of ``[0, hi)``, the product is the term as is, without a gather.
    """
    return clipped_term(am, slots, raw_similarities(am, slots, q, ascending), ascending)


def raw_similarities(am: AgentMemory, slots: NDArray[np.intp], q: NDArray[np.float32],
                     ascending: bool = False) -> NDArray[np.float64]:
    """``cos(vector, q)`` of the vectors stored in ``slots`` (embedded or not), a new array.

    Each value depends only on its slot's vector and ``q`` (``similarities``), so it is the
    same bits whichever way the rows are taken.
    """
    assert am.vectors is not None
    n, hi = slots.shape[0], am.hi
    if n * 4 < hi:  # few rows: gather them
        return similarities(am.vectors, q, slots)
    if ascending and n == hi:  # every slot, in order: the product itself
        return similarities(am.vectors[:hi], q)
    return similarities(am.vectors[:hi], q)[slots]  # most rows: one contiguous product


def clipped_term(am: AgentMemory, slots: NDArray[np.intp], sims: NDArray[np.float64],
                 ascending: bool = False) -> NDArray[np.float64]:
    """``sims`` of ``slots`` as the semantic term, in place: clipped to [0, 1], 0 unembedded."""
    embedded = (am.embedded[: am.hi] if ascending and slots.shape[0] == am.hi
                else am.embedded[slots])
    if not embedded.all():
        sims[~embedded] = 0.0
    np.minimum(np.maximum(sims, 0.0, out=sims), 1.0, out=sims)  # np.clip's wrapper costs more
    return sims


class SimilarityMemo:
    """One agent's raw similarities to one query vector, by slot, with each slot's rev.

    Args:
        query: The query vector's bytes (float32).
        capacity: Slots to hold (the agent's capacity).
    """

    __slots__ = ("query", "revs", "sims")

    def __init__(self, query: bytes, capacity: int) -> None:
        self.query = query
        self.sims = np.zeros(capacity, dtype=np.float64)
        self.revs = np.full(capacity, -1, dtype=np.int64)
        """The rev each value was computed at (-1: none yet)."""

    def grow(self, capacity: int) -> None:
        """Hold ``capacity`` slots, keeping the values computed (the agent grew)."""
        sims = np.zeros(capacity, dtype=np.float64)
        revs = np.full(capacity, -1, dtype=np.int64)
        n = self.sims.shape[0]
        sims[:n], revs[:n] = self.sims, self.revs
        self.sims, self.revs = sims, revs


def remembered_similarities(am: AgentMemory, slots: NDArray[np.intp],
                            q: NDArray[np.float32]) -> NDArray[np.float64]:
    """``exact_similarities(am, slots, q, ascending=True)``, products only where needed.

    ``slots`` ascending (candidates are). The same values, bit for bit, as the product over
    every slot (see the module docstring). Runtime complexity: O(len(slots)) C-level work
    plus a product over the slots whose record changed since the agent last asked ``q``.
    """
    key = q.tobytes()
    memo: SimilarityMemo | None = am.sims_memo
    if memo is None or memo.query != key:
        memo = am.sims_memo = SimilarityMemo(key, am.capacity)
    elif memo.sims.shape[0] < am.capacity:
        memo.grow(am.capacity)
    revs = am.rev[slots]
    stale = memo.revs[slots] != revs
    if stale.all():  # a new query (or all changed): the product over the candidates
        sims = raw_similarities(am, slots, q, ascending=True)
        memo.sims[slots] = sims
        memo.revs[slots] = revs
        return clipped_term(am, slots, sims, ascending=True)  # the memo holds a copy
    if stale.any():
        changed = slots[stale]
        memo.sims[changed] = raw_similarities(am, changed, q, ascending=True)
        memo.revs[changed] = revs[stale]
    return clipped_term(am, slots, memo.sims[slots], ascending=True)
