"""EpisodicRing: insertion-ordered episodic records with a fixed live capacity."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator

__all__ = ["EpisodicRing"]


class EpisodicRing:
    """A ring of record keys (per-agent sequence numbers) in insertion order.

    At most ``capacity`` live keys are held; appending to a full ring overwrites (evicts)
    the oldest live key. Keys removed elsewhere (summarized, expired by TTL) are left in
    place and skipped lazily; the ring is compacted when dead entries outnumber its
    capacity, so both operations are amortized O(1) and memory stays O(capacity).

    Liveness is owned by the caller (``is_live``), so the ring never disagrees with the
    store about which records exist.
    """

    __slots__ = ("_is_live", "_keys", "capacity", "live")

    def __init__(self, capacity: int, is_live: Callable[[int], bool]) -> None:
        self.capacity = capacity
        self.live = 0
        self._keys: deque[int] = deque()
        self._is_live = is_live

    def __len__(self) -> int:
        return self.live

    @property
    def full(self) -> bool:
        """Whether the next append evicts the oldest live key."""
        return self.live >= self.capacity

    def oldest(self) -> int:
        """Return the oldest live key. Runtime complexity: amortized O(1).

        Raises:
            IndexError: The ring holds no live key (internal use only).
        """
        keys = self._keys
        while keys and not self._is_live(keys[0]):
            keys.popleft()
        return keys[0]

    def pop_oldest(self, count: int) -> list[int]:
        """Take the ``count`` oldest live keys out of the ring, oldest first.

        The caller removes them from the store. Runtime complexity: amortized O(count).

        Raises:
            IndexError: Fewer than ``count`` live keys (internal use only).
        """
        if count > self.live:
            raise IndexError("pop_oldest past the live keys")
        keys = self._keys
        is_live = self._is_live
        out: list[int] = []
        while len(out) < count:
            key = keys.popleft()
            if is_live(key):
                out.append(key)
        self.live -= count
        return out

    def append(self, key: int) -> None:
        """Add ``key`` as the newest entry. The caller evicts ``oldest()`` first when full."""
        self._keys.append(key)
        self.live += 1
        if len(self._keys) > 2 * self.capacity + 16:
            self._compact()

    def extend(self, keys: Iterable[int]) -> None:
        """:meth:`append` of each key, in order (the caller checked the ring has room)."""
        before = len(self._keys)
        self._keys.extend(keys)
        self.live += len(self._keys) - before
        if len(self._keys) > 2 * self.capacity + 16:
            self._compact()

    def discard(self, key: int) -> None:
        """Account for the removal of a live ``key`` (its entry is skipped lazily)."""
        self.live -= 1
        if self._keys and self._keys[0] == key:
            self._keys.popleft()

    def _compact(self) -> None:
        self._keys = deque(k for k in self._keys if self._is_live(k))

    def __iter__(self) -> Iterator[int]:
        """Live keys, oldest first."""
        return (k for k in self._keys if self._is_live(k))

    def dead_entries(self) -> int:
        """Entries kept for removed keys (for invariant checks and stats)."""
        return sum(1 for k in self._keys if not self._is_live(k))

    def get_state(self) -> list[int]:
        """Live keys oldest first (the whole observable state)."""
        return list(self)

    def set_state(self, keys: list[int]) -> None:
        """Restore from :meth:`get_state` (liveness must already be restored)."""
        self._keys = deque(keys)
        self.live = len(keys)
