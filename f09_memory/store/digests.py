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

from f09_memory.canonical import canonical_json

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
    h = hashlib.sha256(_HEAD.pack(
        k, layer.item(slot), round(importance.item(slot) * quantum), flagged.item(slot),
        created.item(slot), anchor.item(slot), am.tokens.item(slot), deadline.item(slot),
        status.item(slot), redacted.item(slot), am.embedded.item(slot), 0))
    text = am.content[slot]
    assert text is not None
    h.update(text.encode("utf-8", "surrogatepass"))
    h.update(b"\x00")
    h.update("\x1f".join(am.tags_of(slot)).encode("utf-8", "surrogatepass"))
    h.update(b"\x00")
    source = am.source_event.get(k)
    if source is not None:
        h.update(b"s" + source.encode("utf-8", "surrogatepass"))
    extra = am.extras.get(k)
    if extra is not None:
        h.update(b"\x00x" + canonical_json(extra.canonical(), quantum))
    return h.digest()[:16]


def refresh_digest(am: AgentMemory, quantum: int) -> int:
    """Hash the records changed since the last call; return the agent's digest sum.

    Runtime complexity: O(changed records) sha256 plus O(n) numpy.
    """
    if not am.dirty:
        return am.digest_sum
    hi = am.hi
    todo = (am.alive[:hi] > am.hashed[:hi]).nonzero()[0].tolist()  # alive and not hashed
    total = am.digest_sum
    digest_hi, digest_lo, hashed = am.digest_hi, am.digest_lo, am.hashed
    for slot in todo:
        raw = record_digest(am, slot, quantum)
        hi64 = int.from_bytes(raw[:8], "big")
        lo64 = int.from_bytes(raw[8:], "big")
        digest_hi[slot] = hi64
        digest_lo[slot] = lo64
        hashed[slot] = True
        total += (hi64 << 64) | lo64
    am.digest_sum = total & MASK128
    am.dirty = False
    return am.digest_sum
