"""AgentDedup: an agent's ingest-dedup index (a base of ``AgentMemory``).

``content_fingerprint(layer, text)`` -> the newest live key with that normalized content,
built from the live records on first use and kept up to date by removals
(``MemoryConfig.dedup_window_ms``: the writer reinforces that record instead of adding a
copy). With the index comes the ``fprint`` column: each live record's digest by slot, so a
removal finds its entry without normalizing and digesting the text again.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from f09_memory.store.records import FINGERPRINT_DIGEST, content_fingerprint, fingerprint

__all__ = ["AgentDedup"]


class AgentDedup:
    """The dedup index of :class:`~f09_memory.store.agent.AgentMemory`."""

    slot_of: dict[int, int]
    content: NDArray[np.object_]
    layer: NDArray[np.int8]
    capacity: int
    fprint: NDArray[np.uint64] | None
    """Each live record's dedup digest by slot, allocated with :attr:`dedup` (an engine
    without a dedup window pays nothing for it)."""
    dedup: dict[int, int] | None

    def _forget_fingerprint(self, slot: int, key: int) -> None:
        """Drop the live record ``key`` in ``slot`` from the index (if it is its entry)."""
        assert self.dedup is not None and self.fprint is not None
        fp = fingerprint(self.layer.item(slot), self.fprint.item(slot))
        if self.dedup.get(fp) == key:
            del self.dedup[fp]

    def _index_fingerprints(self, slots: Iterable[int], keys: Iterable[int],
                            fps: Iterable[int]) -> None:
        """Enter records in the index (``fps[i] -> keys[i]``), each digest kept by slot."""
        index, column = self.dedup, self.fprint
        assert index is not None and column is not None
        for slot, key, fp in zip(slots, keys, fps, strict=True):
            index[fp] = key
            column[slot] = fp & FINGERPRINT_DIGEST

    def dedup_index(self) -> dict[int, int]:
        """The dedup index, built from the live records on first use (newest key wins)."""
        if self.dedup is None:
            self.dedup = {}
            self.fprint = np.zeros(self.capacity, dtype=np.uint64)
            live = sorted(self.slot_of.items())
            slots = [slot for _, slot in live]
            codes = self.layer[slots].tolist()
            texts = self.content[slots].tolist()
            self._index_fingerprints(slots, [key for key, _ in live],
                                     map(content_fingerprint, codes, texts))
        return self.dedup
