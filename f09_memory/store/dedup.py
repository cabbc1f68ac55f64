"""AgentDedup: an agent's ingest-dedup index (a base of ``AgentMemory``).

``content_fingerprint(layer, text)`` -> the newest live key with that normalized content,
built from the live records on first use and kept up to date by removals
(``MemoryConfig.dedup_window_ms``: the writer reinforces that record instead of adding a
copy).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from f09_memory.store.records import content_fingerprint

__all__ = ["AgentDedup"]


class AgentDedup:
    """The dedup index of :class:`~f09_memory.store.agent.AgentMemory`."""

    slot_of: dict[int, int]
    content: NDArray[np.object_]
    layer: NDArray[np.int8]
    dedup: dict[int, int] | None

    def _forget_fingerprint(self, slot: int, key: int) -> None:
        assert self.dedup is not None
        text = self.content[slot]
        if text is not None:
            fp = content_fingerprint(int(self.layer[slot]), text)
            if self.dedup.get(fp) == key:
                del self.dedup[fp]

    def dedup_index(self) -> dict[int, int]:
        """The dedup index, built from the live records on first use (newest key wins)."""
        if self.dedup is None:
            index: dict[int, int] = {}
            for key, slot in sorted(self.slot_of.items()):
                text = self.content[slot]
                assert text is not None
                index[content_fingerprint(int(self.layer[slot]), text)] = key
            self.dedup = index
        return self.dedup
