"""AgentOrder: an agent's live records in time order (a base of ``AgentMemory``).

Every order is complete and ends in the record key: ``(recency_anchor, key)``, or the
episodic ring's insertion order for the episodic layer alone.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

from f09_memory.schema.enums import MemoryLayer
from f09_memory.store.ring import EpisodicRing

__all__ = ["AgentOrder"]


class AgentOrder:
    """Time-ordered views of :class:`~f09_memory.store.agent.AgentMemory`'s live slots."""

    hi: int
    slot_of: dict[int, int]
    ring: EpisodicRing
    key: NDArray[np.int64]
    layer: NDArray[np.int8]
    anchor: NDArray[np.int64]
    alive: NDArray[np.bool_]

    def live_slots(self) -> NDArray[np.intp]:
        """Slots of live records in slot order (not a meaningful order by itself)."""
        return np.flatnonzero(self.alive[: self.hi])

    def slots_in_time_order(self, layer: MemoryLayer | None = None) -> NDArray[np.intp]:
        """Live slots ordered by ``(recency_anchor, key)``; episodic alone in ring order.

        Runtime complexity: O(n log n) numpy (episodic: O(n) over the ring).
        """
        if layer is MemoryLayer.EPISODIC:
            slot_of = self.slot_of
            return np.fromiter((slot_of[k] for k in self.ring), dtype=np.intp,
                               count=self.ring.live)
        hi = self.hi
        mask = self.alive[:hi] if layer is None else self.alive[:hi] & (
            self.layer[:hi] == layer.code)
        slots = np.flatnonzero(mask)
        order = np.lexsort((self.key[slots], self.anchor[slots]))
        result: NDArray[np.intp] = slots[order]
        return result

    def keys_in_time_order(self, layer: MemoryLayer | None = None) -> Iterator[int]:
        """Live keys ordered by ``(recency_anchor, key)``; episodic alone in ring order."""
        if layer is MemoryLayer.EPISODIC:
            yield from self.ring
        else:
            yield from self.key[self.slots_in_time_order(layer)].tolist()

    def newest_slots(self, k: int, layer: MemoryLayer | None = None) -> NDArray[np.intp]:
        """The ``k`` newest live slots by ``(recency_anchor, key)``, newest first.

        Runtime complexity: O(n) numpy plus O(k log k).
        """
        hi = self.hi
        if layer is None and len(self.slot_of) == hi:  # no free slot below hi: all live
            if 0 < k < hi:
                tail = self._newest_tail(k)
                if tail is not None:
                    return tail
            slots = np.arange(hi, dtype=np.intp)
            anchors = self.anchor[:hi]
        else:
            mask = self.alive[:hi] if layer is None else self.alive[:hi] & (
                self.layer[:hi] == layer.code)
            slots = np.flatnonzero(mask)
            anchors = self.anchor[slots]
        n = slots.shape[0]
        if k <= 0 or n == 0:
            return np.zeros(0, dtype=np.intp)
        if k < n:  # every record at or above the k-th newest anchor (ties kept for the keys)
            slots = slots[np.flatnonzero(anchors >= np.partition(anchors, n - k)[n - k])]
        order = np.lexsort((-self.key[slots], -self.anchor[slots]))[:k]
        result: NDArray[np.intp] = slots[order]
        return result

    def _newest_tail(self, k: int) -> NDArray[np.intp] | None:
        """The ``k`` newest of ``hi`` live slots when they are the last ``k`` slots, else None.

        Records stored one after another fill slots in time order, so the last ``k`` slots
        usually hold the ``k`` newest: they do exactly when every earlier slot's anchor is
        below the lowest anchor among them (one compare over the column, no partition).
        """
        hi = self.hi
        anchors = self.anchor[:hi]
        lowest = anchors[hi - k:].min()
        if (anchors[: hi - k] >= lowest).any():  # an older slot may be newer (or tie)
            return None
        tail = np.arange(hi - k, hi, dtype=np.intp)
        result: NDArray[np.intp] = tail[np.lexsort((-self.key[tail], -anchors[tail]))]
        return result
