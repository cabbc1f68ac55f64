"""TagTable: interned tag tuples, so a record's tags are one int32 column.

Games tag memories from a small vocabulary ("town", "combat", "npc:bob"), so whole tag
tuples repeat: each distinct tuple is stored once and records hold its id (0 is the empty
tuple). A tag filter is answered per tuple, once, then applied to the column by indexing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = ["TagTable"]

TagMatch = Literal["any", "all"]


class TagTable:
    """Interned tag tuples shared by every agent of a store.

    Ids are dense and assigned in first-use order, so they are deterministic for the same
    calls; they are internal (hashes and snapshots use the tag strings).

    Runtime complexity: ``intern`` O(len(tags)) amortized; ``matches`` O(distinct tuples)
    once per query and table size (cached).
    """

    __slots__ = ("_cache", "_ids", "_sets")

    def __init__(self) -> None:
        self._sets: list[tuple[str, ...]] = [()]
        self._ids: dict[tuple[str, ...], int] = {(): 0}
        self._cache: dict[tuple[tuple[str, ...], str], NDArray[np.bool_]] = {}

    def __len__(self) -> int:
        return len(self._sets)

    def intern(self, tags: tuple[str, ...]) -> int:
        """The id of ``tags`` (added on first use)."""
        found = self._ids.get(tags)
        if found is None:
            found = self._ids[tags] = len(self._sets)
            self._sets.append(tags)
        return found

    def get(self, tag_id: int) -> tuple[str, ...]:
        """The tag tuple of ``tag_id``."""
        return self._sets[tag_id]

    def matches(self, tags: Sequence[str], mode: TagMatch) -> NDArray[np.bool_]:
        """A boolean per tuple id: does the tuple hold any (or all) of ``tags``?

        Index it with a record's tag-id column to filter records.
        """
        want = tuple(sorted(set(tags)))
        key = (want, mode)
        hit = self._cache.get(key)
        if hit is not None and hit.shape[0] == len(self._sets):
            return hit
        wanted = set(want)
        if mode == "any":
            flags = [not wanted.isdisjoint(s) for s in self._sets]
        else:
            flags = [wanted.issubset(s) for s in self._sets]
        out = np.array(flags, dtype=np.bool_)
        if len(self._cache) >= 64:
            self._cache.clear()
        self._cache[key] = out
        return out

    def get_state(self) -> list[list[str]]:
        """Every tuple in id order (the whole state)."""
        return [list(s) for s in self._sets]

    def set_state(self, sets: Sequence[Sequence[str]]) -> None:
        """Restore from :meth:`get_state`.

        Raises:
            ValueError: The first tuple is not empty or a tuple repeats.
        """
        tuples = [tuple(str(t) for t in s) for s in sets]
        if not tuples or tuples[0] != () or len(set(tuples)) != len(tuples):
            raise ValueError("malformed tag table")
        self._sets = tuples
        self._ids = {s: i for i, s in enumerate(tuples)}
        self._cache.clear()

    def _check(self) -> None:
        """Assert the table's invariants."""
        assert self._sets[0] == ()
        assert len(self._ids) == len(self._sets)
        for i, s in enumerate(self._sets):
            assert self._ids[s] == i
