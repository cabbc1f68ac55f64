"""Record digests of the incremental state hash (``core.digest``).

A record's digest is 16 bytes of sha256 over every stored field (quantized importance,
times, layer, flags, status, text, tags, sparse metadata). An agent keeps the sum of its
hashed records' digests modulo 2**128 (``AgentMemory.digest_sum``); a change subtracts the
old digest (``AgentMemory._unhash``) and :func:`refresh_digest` adds the new ones lazily,
so a state hash costs O(records changed).
"""

from __future__ import annotations

import hashlib
import struct
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from f09_memory.canonical import canonical_json, quantize, quantize_scalar

if TYPE_CHECKING:
    from f09_memory.store.agent import AgentMemory

__all__ = ["MASK128", "record_digest", "refresh_digest"]

MASK128 = (1 << 128) - 1
"""Digest sums are kept modulo 2**128."""
_HEAD = struct.Struct("<qbq?qqiqbb?i")


def record_digest(am: AgentMemory, slot: int, quantum: int) -> bytes:
    """The 16-byte digest of the record in ``slot`` (every stored field)."""
    # ``item`` reads a Python scalar, as the struct and the tag table want.
    key, layer, importance, flagged, created, anchor, deadline, status, redacted, \
        _, _, _ = am._arrays
    k = key.item(slot)
    head = _HEAD.pack(
        k, layer.item(slot), quantize_scalar(importance.item(slot), quantum), flagged.item(slot),
        created.item(slot), anchor.item(slot), am.tokens.item(slot), deadline.item(slot),
        status.item(slot), redacted.item(slot), am.embedded.item(slot), 0)
    text = am.content[slot]
    assert text is not None
    tags = "\x1f".join(am.tags_of(slot)).encode("utf-8", "surrogatepass")
    return _digest(am, k, head, text, tags, quantum)


def _digest(am: AgentMemory, key: int, head: bytes, text: str, tags: bytes,
            quantum: int) -> bytes:
    """sha256 (first 16 bytes) of a record's head, text, tags and sparse parts."""
    parts = [head, text.encode("utf-8", "surrogatepass"), b"\x00", tags, b"\x00"]
    source = am.source_event.get(key) if am.source_event else None
    if source is not None:
        parts.append(b"s" + source.encode("utf-8", "surrogatepass"))
    extra = am.extras.get(key) if am.extras else None
    if extra is not None:
        parts.append(b"\x00x" + canonical_json(extra.canonical(), quantum))
    return hashlib.sha256(b"".join(parts)).digest()[:16]


_HEAD_DTYPE = np.dtype([
    ("key", "<i8"), ("layer", "i1"), ("importance", "<i8"), ("flagged", "?"),
    ("created", "<i8"), ("anchor", "<i8"), ("tokens", "<i4"), ("deadline", "<i8"),
    ("status", "i1"), ("redacted", "i1"), ("embedded", "?"), ("zero", "<i4"),
])
"""``_HEAD`` as a packed numpy record: the heads of many records are one array's bytes."""
assert _HEAD_DTYPE.itemsize == _HEAD.size
_BATCH_FROM = 8
"""Below this many records to hash, one ``record_digest`` each (the batch's numpy setup
costs more than it saves)."""


def _digests(am: AgentMemory, slots: NDArray[np.intp], quantum: int) -> list[bytes]:
    """:func:`record_digest` of each of ``slots``, the fixed-width heads packed by numpy."""
    heads = np.zeros(slots.shape[0], dtype=_HEAD_DTYPE)
    for name in ("key", "layer", "flagged", "created", "anchor", "tokens", "deadline",
                 "status", "redacted", "embedded"):
        heads[name] = getattr(am, name)[slots]
    heads["importance"] = quantize(am.importance[slots], quantum)
    raw = heads.tobytes()
    width = _HEAD_DTYPE.itemsize
    get_tags = am.tags.get
    tag_ids = am.tagset[slots].tolist()
    tag_bytes = {tag_id: "\x1f".join(get_tags(tag_id)).encode("utf-8", "surrogatepass")
                 for tag_id in dict.fromkeys(tag_ids)}
    return [_digest(am, key, raw[i * width:(i + 1) * width], text, tag_bytes[tag_id], quantum)
            for i, (key, text, tag_id) in enumerate(zip(
                am.key[slots].tolist(), am.content[slots].tolist(), tag_ids, strict=True))]


def refresh_digest(am: AgentMemory, quantum: int) -> int:
    """Hash the records changed since the last call; return the agent's digest sum.

    Runtime complexity: O(changed records) sha256 plus O(n) numpy.
    """
    if not am.dirty:
        return am.digest_sum
    hi = am.hi
    todo = (am.alive[:hi] > am.hashed[:hi]).nonzero()[0]  # alive and not hashed
    total = am.digest_sum
    if todo.shape[0] > _BATCH_FROM:  # many: numpy packs the heads, one store per column
        digests = _digests(am, todo, quantum)
        halves = np.frombuffer(b"".join(digests), dtype=">u8").reshape(-1, 2)
        am.digest_hi[todo] = halves[:, 0]
        am.digest_lo[todo] = halves[:, 1]
        am.hashed[todo] = True
    else:  # a few (the usual case between two hashes): scalar stores
        digests = [record_digest(am, slot, quantum) for slot in todo.tolist()]
        for slot, raw in zip(todo.tolist(), digests, strict=True):
            am.digest_hi[slot] = int.from_bytes(raw[:8], "big")
            am.digest_lo[slot] = int.from_bytes(raw[8:], "big")
            am.hashed[slot] = True
    total += sum(map(_as_int, digests))
    am.digest_sum = total & MASK128
    am.dirty = False
    return am.digest_sum


def _as_int(digest: bytes) -> int:
    return int.from_bytes(digest, "big")
