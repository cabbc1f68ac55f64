"""The bundles of a sharded ``retrieve_many``: built on the shards, decoded when read.

A crowd frame's bundles are made on the shards (in parallel) and each is pickled there on
its own; they stay in Ray's object store, on the shard's node, until one is read.
:class:`ShardedBundles` is a sequence of ``RetrievedBundle`` that fetches a shard's blobs the
first time one of its bundles is read and unpickles each bundle on its first read, so a
driver that only checks hashes, or hands bundles on, never moves or builds them. With ``hashes=True`` the shards also computed each bundle's
``bundle_hash`` (``determinism.hashing``), so a determinism check needs no decoding at all.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import overload

from f09_memory.schema.retrieval import RetrievedBundle

__all__ = ["ShardedBundles"]


class ShardedBundles(Sequence[RetrievedBundle]):
    """One bundle per request, in request order, fetched and decoded on first access.

    Args:
        where: For each request, ``(shard, position in that shard's blobs)``.
        fetch: Per shard, a function returning its list of pickled bundles.
        hashes: Each bundle's ``bundle_hash`` (``None``: not computed).

    Runtime complexity: ``len`` O(1); the first access of a shard's bundle O(the shard's
    blobs) (one fetch), of a bundle O(its size).
    """

    def __init__(self, where: list[tuple[int, int]],
                 fetch: Mapping[int, Callable[[], list[bytes]]],
                 hashes: list[str] | None = None) -> None:
        self._where = where
        self._fetch = dict(fetch)
        self._blobs: dict[int, list[bytes]] = {}
        self._decoded: list[RetrievedBundle | None] = [None] * len(where)
        self.hashes = hashes
        """Each bundle's ``bundle_hash`` as computed on its shard (``None``: not asked)."""

    def __len__(self) -> int:
        return len(self._where)

    @overload
    def __getitem__(self, index: int) -> RetrievedBundle: ...

    @overload
    def __getitem__(self, index: slice) -> list[RetrievedBundle]: ...

    def __getitem__(self, index: int | slice) -> RetrievedBundle | list[RetrievedBundle]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        got = self._decoded[index]
        if got is None:
            got = pickle.loads(self.blob(index))  # our own shards' bytes
            assert isinstance(got, RetrievedBundle)
            self._decoded[index] = got
        return got

    def __iter__(self) -> Iterator[RetrievedBundle]:
        return (self[i] for i in range(len(self)))

    def blob(self, index: int) -> bytes:
        """The pickled bundle ``index`` as its shard made it (to hand on undecoded)."""
        shard, j = self._where[index]
        blobs = self._blobs.get(shard)
        if blobs is None:
            blobs = self._blobs[shard] = self._fetch[shard]()
        return blobs[j]
