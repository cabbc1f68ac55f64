"""What a crowd call carries to a shard and back: one buffer each way.

A crowd call (``frame``, ``retrieve_many``) sends each shard one pickled buffer holding its
part of the call (:func:`frame_payload`, :func:`bundles_payload`), read by the shard actor's
``packed_frame`` / ``packed_bundles``. ``RetrievalRequest`` objects travel compactly
(:func:`encode_requests`): one tuple per request holding only the fields some request of
the part set (``__pydantic_fields_set__``: typically 3-4 of 17), the others being their
defaults by pydantic's contract (the models are frozen). That keeps a shard's part of a
1,000-agent frame under Ray's 100 KB inline limit (an argument above it goes through the
object store: about 4 ms more per call, measured), and costs the driver less than pickling
each request's field dict. :func:`decode_requests` rebuilds the field dicts on the shard.

The shard answers with two buffers: a small head (record ids, bundle hashes, the tick
report, events) that the driver waits for, and the body (the encoded bundles,
``distributed.codec``) that stays in Ray's object store until a bundle is read
(:func:`crowd_bundles`).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Any

from f09_memory.distributed.bundles import ShardedBundles
from f09_memory.distributed.grouping import bundle_places, scatter
from f09_memory.schema.enums import PressureState
from f09_memory.schema.retrieval import RetrievalRequest

__all__ = ["EncodedRequests", "bundles_payload", "crowd_bundles", "decode_requests",
           "encode_requests", "frame_payload"]

EncodedRequests = tuple[tuple[str, ...], list[tuple[Any, ...]]]
"""Requests as ``(field names, one tuple of those fields' values per request)``."""

_FIELDS = tuple(RetrievalRequest.model_fields)
_DEFAULTS: dict[str, Any] = {
    name: (None if info.is_required() else info.get_default(call_default_factory=True))
    for name, info in RetrievalRequest.model_fields.items()}
_FIELDS_SET = attrgetter("__pydantic_fields_set__")


def encode_requests(requests: Sequence[RetrievalRequest]) -> EncodedRequests:
    """``RetrievalRequest`` objects as the values of the fields any of them set.

    A field no request set holds its default in every request (pydantic fills it, and the
    models are frozen), so it is not sent. Runtime complexity: O(requests x fields set),
    C-level passes (``operator.attrgetter``).
    """
    named = set().union(*map(_FIELDS_SET, requests))
    fields = tuple(name for name in _FIELDS if name in named)
    if len(fields) == 1:
        only = fields[0]
        return fields, [(getattr(r, only),) for r in requests]
    if not fields:
        return fields, [()] * len(requests)
    return fields, list(map(attrgetter(*fields), requests))


def decode_requests(encoded: EncodedRequests) -> list[dict[str, Any]]:
    """The field dicts of :func:`encode_requests`'s requests (every field named).

    Runtime complexity: O(requests x fields).
    """
    fields, rows = encoded
    out = []
    for row in rows:
        values = _DEFAULTS.copy()
        values.update(zip(fields, row, strict=True))
        out.append(values)
    return out


def _dumps(args: tuple[Any, ...]) -> bytes:
    return pickle.dumps((args, {}), protocol=pickle.HIGHEST_PROTOCOL)


def frame_payload(seq: int, wanted: tuple[str, ...], pressure: PressureState | None,
                  items: list[Any], requests: list[Any], trusted: bool, now: int,
                  budget_ms: float | None, tick: bool, hashes: bool) -> bytes:
    """One shard's part of a frame (the arguments of ``ShardActor.frame_write``).

    ``trusted``: ``requests`` are ``RetrievalRequest`` objects, sent encoded
    (:func:`encode_requests`).
    """
    sent = encode_requests(requests) if trusted else requests
    return _dumps((seq, wanted, pressure, items, sent, trusted, now, budget_ms, tick, hashes))


def bundles_payload(wanted: tuple[str, ...], requests: list[Any], trusted: bool,
                    now: int | None, hashes: bool) -> bytes:
    """One shard's part of a ``retrieve_many`` (``ShardActor.retrieve_many``'s arguments).

    ``trusted`` as in :func:`frame_payload`.
    """
    sent = encode_requests(requests) if trusted else requests
    return _dumps((wanted, sent, trusted, now, hashes))


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
