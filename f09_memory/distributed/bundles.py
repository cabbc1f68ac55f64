"""The bundles of a sharded ``retrieve_many``: built on the shards, decoded when read.

A crowd frame's bundles are made on the shards (in parallel), encoded there
(``distributed.codec``) and left in Ray's object store, on the shard's node, until one is
read. :class:`ShardedBundles` is a sequence of ``RetrievedBundle`` that fetches a shard's
encoded bundles the first time one of them is read and decodes each bundle on its first
read, so a driver that only checks hashes, or hands bundles on, never moves or builds them. With
``hashes=True`` the shards also computed each bundle's ``bundle_hash``
(``determinism.hashing``), so a determinism check needs no decoding at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, overload

from f09_memory.distributed.codec import decode_bundle
from f09_memory.schema.retrieval import RetrievedBundle

__all__ = ["ShardedBundles"]


class ShardedBundles(Sequence[RetrievedBundle]):
    """One bundle per request, in request order, fetched and decoded on first access.

    Args:
        where: For each request, ``(shard, position in that shard's blobs)``.
        fetch: Per shard, a function returning its list of encoded bundles.
        hashes: Each bundle's ``bundle_hash`` (``None``: not computed).

    Runtime complexity: ``len`` O(1); the first access of a shard's bundle O(the shard's
    blobs) (one fetch), of a bundle O(its size).
    """

    def __init__(self, where: list[tuple[int, int]],
                 fetch: Mapping[int, Callable[[], list[tuple[Any, ...]]]],
                 hashes: list[str] | None = None) -> None:
        self._where = where
        self._fetch = dict(fetch)
        self._encoded: dict[int, list[tuple[Any, ...]]] = {}
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
            got = self._decoded[index] = decode_bundle(self.encoded(index))
        return got

    def __iter__(self) -> Iterator[RetrievedBundle]:
        return (self[i] for i in range(len(self)))

    def encoded(self, index: int) -> tuple[Any, ...]:
        """Bundle ``index`` as its shard encoded it (``codec.encode_bundle``: plain tuples)."""
        shard, j = self._where[index]
        encoded = self._encoded.get(shard)
        if encoded is None:
            encoded = self._encoded[shard] = self._fetch[shard]()
        return encoded[j]
