"""The bundles of a sharded ``retrieve_many``: built on the shards, decoded when read.

A crowd frame's bundles are made on the shards (in parallel) and each is pickled there on
its own; the driver only puts the blobs back in request order. :class:`ShardedBundles` is a
sequence of ``RetrievedBundle`` that unpickles a bundle the first time it is read, so a
driver that hands bundles on (to agent workers, over the network) never pays for building
objects it does not use. With ``hashes=True`` the shards also computed each bundle's
``bundle_hash`` (``determinism.hashing``), so a determinism check needs no decoding at all.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from typing import overload

from f09_memory.schema.retrieval import RetrievedBundle

__all__ = ["ShardedBundles"]


class ShardedBundles(Sequence[RetrievedBundle]):
    """One bundle per request, in request order, decoded on first access.

    Args:
        blobs: Each bundle pickled by its shard.
        hashes: Each bundle's ``bundle_hash`` (``None``: not computed).

    Runtime complexity: ``len`` O(1); the first access of a bundle O(its size).
    """

    def __init__(self, blobs: list[bytes], hashes: list[str] | None = None) -> None:
        self._blobs = blobs
        self._decoded: list[RetrievedBundle | None] = [None] * len(blobs)
        self.hashes = hashes
        """Each bundle's ``bundle_hash`` as computed on its shard (``None``: not asked)."""

    def __len__(self) -> int:
        return len(self._blobs)

    @overload
    def __getitem__(self, index: int) -> RetrievedBundle: ...

    @overload
    def __getitem__(self, index: slice) -> list[RetrievedBundle]: ...

    def __getitem__(self, index: int | slice) -> RetrievedBundle | list[RetrievedBundle]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        got = self._decoded[index]
        if got is None:
            got = pickle.loads(self._blobs[index])  # our own shards' bytes
            assert isinstance(got, RetrievedBundle)
            self._decoded[index] = got
        return got

    def __iter__(self) -> Iterator[RetrievedBundle]:
        return (self[i] for i in range(len(self)))

    def blob(self, index: int) -> bytes:
        """The pickled bundle ``index`` as its shard sent it (to hand on undecoded)."""
        return self._blobs[index]
