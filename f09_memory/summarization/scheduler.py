"""Collection (spec section 8, step 1): which episodic records a summary may replace.

Eligible slots are selected column-wise (numpy, no per-record Python loop): live, episodic,
not flagged, ``recency_anchor <= now - episodic_window``, decayed importance at most
``summarization_max_importance``, and not among the agent's ``summarization_keep_recent``
most recent episodic records (spec: "keep at least K recent episodic untouched").

The ring holds episodic keys in insertion order and keys are per-agent sequence numbers,
so ring order is key order (an invariant ``AgentMemory._check`` asserts): the K most
recent episodic records are the K largest episodic keys, found with one ``np.partition``.

The eligible records then go through :class:`CandidateHeap`, the spec's min-heap (section
12), keyed ``(decayed importance quantized, recency anchor, key)`` ascending: least
important first, older first on a tie, id order last, so the order is total. The
decayed importance is ``importance * exp(-(now - anchor) / halfLife)`` at the scheduling
time (decay is lazy: a pure function of ``now``), quantized with
``round(x * score_quantum)`` before it becomes a key.

The heap is rebuilt from the columns at each scheduling attempt rather than kept between
ticks: records expire, decay, get flagged or retired between attempts, and a rebuilt heap
can never go stale. Building it is O(n) numpy plus O(m) ``heapify`` of the m candidates
that can still reach the batch (an ``np.partition`` bound drops the rest first).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from f09_memory.canonical import quantize_scalar as quantize
from f09_memory.config.config import MemoryConfig
from f09_memory.decay.decay import importance_decayed
from f09_memory.schema.enums import MemoryLayer
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import NO_DEADLINE

__all__ = ["CandidateHeap", "HeapEntry", "eligible_slots", "quantize", "select_batch"]

_EPISODIC = MemoryLayer.EPISODIC.code

HeapEntry = tuple[int, int, int]
"""``(decayed importance quantized, recency anchor, key)``."""


def eligible_slots(am: AgentMemory, now: int, config: MemoryConfig) -> NDArray[np.intp]:
    """Slots of ``am`` that may be summarized at logical time ``now`` (slot order).

    Args:
        am: The agent's columns.
        now: Logical time.
        config: Supplies ``episodic_window``, ``summarization_max_importance``,
            ``summarization_keep_recent`` and ``score_quantum``.

    Returns:
        The eligible slots, ascending.

    Runtime complexity: O(1) while no episodic record can be old enough (a maintained lower
    bound of their anchors, refreshed here), else O(n) numpy over the agent's slots.
    """
    return _eligible(am, now, config)[0]


def _eligible(am: AgentMemory, now: int, config: MemoryConfig
              ) -> tuple[NDArray[np.intp], NDArray[np.int64]]:
    """:func:`eligible_slots` and their decayed importances, quantized (aligned).

    The decay is computed once, over every slot: each value is the same float whichever
    other slots are computed with it (an elementwise product and ``exp``).
    """
    if am.min_episodic_anchor > now - config.episodic_window:
        # no episodic record can be old enough yet
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.int64)
    hi = am.hi
    episodic = am.alive[:hi] & (am.layer[:hi] == _EPISODIC)
    anchor = am.anchor[:hi]
    anchors = anchor[episodic]
    am.set_bounds(min_episodic_anchor=int(anchors.min()) if anchors.shape[0] else NO_DEADLINE)
    keep = config.summarization_keep_recent
    if keep > 0:
        ep_keys = am.key[:hi][episodic]
        if ep_keys.shape[0] <= keep:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.int64)
        # the keep-th largest key: every key >= it is among the K most recent
        kth = np.partition(ep_keys, ep_keys.shape[0] - keep)[ep_keys.shape[0] - keep]
        episodic &= am.key[:hi] < kth
    q_limit = quantize(config.summarization_max_importance, config.score_quantum)
    q = np.rint(importance_decayed(am.importance[:hi], anchor, now,
                                   config.decay_half_life_ms) * config.score_quantum)
    mask = (
        episodic
        & ~am.flagged[:hi]
        & (anchor <= now - config.episodic_window)
        & (q <= q_limit)
    )
    slots = np.flatnonzero(mask)
    return slots, q[slots].astype(np.int64)


class CandidateHeap:
    """A min-heap of summarization candidates keyed ``(decayed_q, anchor, key)``.

    Args:
        entries: Initial entries (heapified in O(len)).

    Runtime complexity: ``push``/``pop`` O(log n), ``peek``/``len`` O(1). Entries are
    distinct in ``key``, so pop order is total and deterministic.
    """

    __slots__ = ("_heap",)

    def __init__(self, entries: Iterable[HeapEntry] = ()) -> None:
        self._heap: list[HeapEntry] = list(entries)
        heapq.heapify(self._heap)

    @classmethod
    def from_agent(
        cls, am: AgentMemory, now: int, config: MemoryConfig, *, limit: int | None = None
    ) -> CandidateHeap:
        """Build the heap of ``am``'s eligible records at ``now`` (see :func:`eligible_slots`).

        Args:
            am: The agent's columns.
            now: Logical time.
            config: The engine config.
            limit: Callers will pop at most this many: candidates that cannot be among the
                ``limit`` smallest are left out (exact, ties kept).

        Returns:
            The heap.
        """
        slots, q = _eligible(am, now, config)
        if limit is not None and 0 < limit < slots.shape[0]:
            cut = np.partition(q, limit - 1)[limit - 1]
            keep = q <= cut
            slots, q = slots[keep], q[keep]
        return cls(zip(q.tolist(), am.anchor[slots].tolist(), am.key[slots].tolist(),
                       strict=True))

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, decayed_q: int, anchor: int, key: int) -> None:
        """Add a candidate (``decayed_q`` already quantized)."""
        heapq.heappush(self._heap, (decayed_q, anchor, key))

    def peek(self) -> HeapEntry:
        """The smallest entry, without removing it.

        Raises:
            IndexError: The heap is empty.
        """
        return self._heap[0]

    def pop(self) -> HeapEntry:
        """Remove and return the smallest entry.

        Raises:
            IndexError: The heap is empty.
        """
        return heapq.heappop(self._heap)

    def pop_keys(self, n: int) -> list[int]:
        """Remove the ``n`` smallest entries (fewer if the heap runs out); return their keys.

        Runtime complexity: O(n log size).
        """
        heap = self._heap
        return [heapq.heappop(heap)[2] for _ in range(min(n, len(heap)))]

    def _check(self) -> None:
        """Assert the heap property and key uniqueness (tests call this)."""
        heap = self._heap
        for i in range(1, len(heap)):
            assert heap[(i - 1) // 2] <= heap[i], "heap property violated"
        assert len({e[2] for e in heap}) == len(heap), "duplicate key in heap"


def select_batch(am: AgentMemory, now: int, config: MemoryConfig) -> list[int]:
    """Keys of up to ``summarization_batch_size`` records to summarize, in heap order.

    Heap order: decayed importance ascending, then recency anchor ascending, then key.

    Args:
        am: The agent's columns.
        now: Logical time.
        config: The engine config.

    Returns:
        The keys (possibly empty).

    Runtime complexity: O(n) numpy + O(m + b log m) heap work for b = batch size.
    """
    size = config.summarization_batch_size
    return CandidateHeap.from_agent(am, now, config, limit=size).pop_keys(size)
