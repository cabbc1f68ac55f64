"""EpisodicRing: insertion-ordered episodic records with a fixed live capacity."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator

__all__ = ["EpisodicRing"]


class EpisodicRing:
    """A ring of record keys (per-agent sequence numbers) in insertion order.

    At most ``capacity`` live keys are held; appending to a full ring overwrites (evicts)
    the oldest live key. Keys removed elsewhere (summarized, expired by TTL) are left in
    place and skipped lazily; the ring is compacted when dead entries outnumber its
    capacity, so both operations are amortized O(1) and memory stays O(capacity).

    The keys are raw int64 in an ``array`` read from ``_head`` on (not a deque of int
    objects): 8 bytes per entry, and nothing for a full garbage collection to visit.

    Liveness is owned by the caller (``is_live``), so the ring never disagrees with the
    store about which records exist.
    """

    __slots__ = ("_head", "_is_live", "_keys", "capacity", "live")

    def __init__(self, capacity: int, is_live: Callable[[int], bool]) -> None:
        self.capacity = capacity
        self.live = 0
        self._keys = array("q")
        self._head = 0
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
        keys, head, is_live = self._keys, self._head, self._is_live
        end = len(keys)
        while head < end and not is_live(keys[head]):
            head += 1
        self._head = head
        return keys[head]

    def oldest_keys(self, count: int) -> list[int]:
        """The ``count`` oldest live keys, oldest first, left in the ring (fewer if fewer).

        Runtime complexity: O(count + dead entries among them).
        """
        keys, is_live = self._keys, self._is_live
        out: list[int] = []
        for at in range(self._head, len(keys)):
            if len(out) >= count:
                break
            key = keys[at]
            if is_live(key):
                out.append(key)
        return out

    def pop_oldest(self, count: int) -> list[int]:
        """Take the ``count`` oldest live keys out of the ring, oldest first.

        The caller removes them from the store. Runtime complexity: amortized O(count).

        Raises:
            IndexError: Fewer than ``count`` live keys (internal use only).
        """
        if count > self.live:
            raise IndexError("pop_oldest past the live keys")
        keys, head, is_live = self._keys, self._head, self._is_live
        out: list[int] = []
        while len(out) < count:
            key = keys[head]
            head += 1
            if is_live(key):
                out.append(key)
        self._head = head
        self.live -= count
        self._trim()
        return out

    def append(self, key: int) -> None:
        """Add ``key`` as the newest entry. The caller evicts ``oldest()`` first when full."""
        keys = self._keys
        keys.append(key)
        self.live += 1
        if len(keys) - self._head > 2 * self.capacity + 16:
            self._compact()
        elif self._head > self.capacity + 16:
            self._trim()

    def extend(self, keys: Iterable[int]) -> None:
        """:meth:`append` of each key, in order (the caller checked the ring has room)."""
        held = self._keys
        before = len(held)
        held.extend(keys)
        self.live += len(held) - before
        if len(held) - self._head > 2 * self.capacity + 16:
            self._compact()
        else:
            self._trim()

    def discard(self, key: int) -> None:
        """Account for the removal of a live ``key`` (its entry is skipped lazily)."""
        self.live -= 1
        keys, head = self._keys, self._head
        if head < len(keys) and keys[head] == key:
            self._head = head + 1

    def _trim(self) -> None:
        """Drop the entries before the head once they outnumber the capacity (amortized)."""
        if self._head > self.capacity + 16:
            del self._keys[: self._head]
            self._head = 0

    def _compact(self) -> None:
        is_live = self._is_live
        self._keys = array("q", [k for k in self._keys[self._head:] if is_live(k)])
        self._head = 0

    def __iter__(self) -> Iterator[int]:
        """Live keys, oldest first (of the ring as it was when iteration began)."""
        is_live = self._is_live
        return (k for k in self._keys[self._head:] if is_live(k))

    def dead_entries(self) -> int:
        """Entries kept for removed keys (for invariant checks and stats)."""
        is_live = self._is_live
        return sum(1 for k in self._keys[self._head:] if not is_live(k))

    def get_state(self) -> list[int]:
        """Live keys oldest first (the whole observable state)."""
        return list(self)

    def set_state(self, keys: list[int]) -> None:
        """Restore from :meth:`get_state` (liveness must already be restored)."""
        self._keys = array("q", keys)
        self._head = 0
        self.live = len(keys)
