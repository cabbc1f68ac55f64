"""What a crowd call carries to a shard and back: one buffer each way.

A crowd call (``frame``, ``retrieve_many``) sends each shard one pickled buffer holding its
part of the call (:func:`frame_payload`, :func:`bundles_payload`), read by the shard actor's
``packed_frame`` / ``packed_bundles``. The shard answers with two buffers: a small head
(record ids, bundle hashes, the tick report, events) that the driver waits for, and the
body (the encoded bundles, ``distributed.codec``) that stays in Ray's object store until a
bundle is read (:func:`crowd_bundles`).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping
from typing import Any

from f09_memory.distributed.bundles import ShardedBundles
from f09_memory.distributed.grouping import bundle_places, scatter
from f09_memory.schema.enums import PressureState

__all__ = ["bundles_payload", "crowd_bundles", "frame_payload"]


def _dumps(args: tuple[Any, ...]) -> bytes:
    return pickle.dumps((args, {}), protocol=pickle.HIGHEST_PROTOCOL)


def frame_payload(seq: int, wanted: tuple[str, ...], pressure: PressureState | None,
                  items: list[Any], requests: list[Any], trusted: bool, now: int,
                  budget_ms: float | None, tick: bool, hashes: bool) -> bytes:
    """One shard's part of a frame (the arguments of ``ShardActor.frame_write``)."""
    return _dumps((seq, wanted, pressure, items, requests, trusted, now, budget_ms, tick,
                   hashes))


def bundles_payload(wanted: tuple[str, ...], requests: list[Any], trusted: bool,
                    now: int | None, hashes: bool) -> bytes:
    """One shard's part of a ``retrieve_many`` (the arguments of ``ShardActor.retrieve_many``)."""
    return _dumps((wanted, requests, trusted, now, hashes))


def crowd_bundles(where: Mapping[int, list[int]], total: int,
                  hashes: Mapping[int, list[str]] | None, bodies: Mapping[int, Any],
                  get: Callable[[Any], bytes]) -> ShardedBundles:
    """A crowd call's bundles, in request order, each shard's fetched when first read.

    Args:
        where: Per shard, the request positions of its bundles.
        total: How many requests.
        hashes: Per shard, its bundles' hashes (``None``: not computed).
        bodies: Per shard, the object ref of its encoded bundles.
        get: Fetches an object ref's bytes (``ray.get``).
    """
    def fetcher(ref: Any) -> Callable[[], list[tuple[Any, ...]]]:
        return lambda: list(pickle.loads(get(ref)))

    return ShardedBundles(bundle_places(where, total),
                          {i: fetcher(ref) for i, ref in bodies.items()},
                          None if hashes is None else scatter(where, hashes, total))
