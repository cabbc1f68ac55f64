"""The value types of a stored record, shared by the store and the write path.

``NewRecords`` (column values of records about to be stored), ``RecordExtra`` (the sparse
part of a record's metadata, kept only where present), ``Removed`` (what left the store),
record ids, claim status codes and the normalized-content fingerprint of ingest dedup.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from f09_memory.canonical import text_digest64
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.records import AttributeValue, ProceduralMeta, SocialMeta, SpatialMeta

__all__ = [
    "CLAIM_STATUSES",
    "SCALAR_MAX",
    "SHARED_EXTRAS_MAX",
    "EMPTY_EXTRA",
    "FINGERPRINT_DIGEST",
    "NO_DEADLINE",
    "STATUS_CODE",
    "NewRecords",
    "RecordExtra",
    "Removed",
    "attribute_key",
    "content_fingerprint",
    "fingerprint",
    "normalized_content",
    "record_id",
    "shared_extra",
]

NO_DEADLINE = np.iinfo(np.int64).max
"""The ``deadline`` column of a record without a TTL (int64 max: never expires)."""
CLAIM_STATUSES: tuple[str, ...] = ("active", "superseded", "quarantined")
"""Record status codes (the ``status`` column): a record without a claim is active; a claim
is superseded by a newer trusted one, or quarantined when a less trusted write conflicts."""
STATUS_CODE: dict[str, int] = {name: i for i, name in enumerate(CLAIM_STATUSES)}
"""Status name -> its code in the ``status`` column."""


SCALAR_MAX = 8
"""Most records (or slots) a store method writes by scalar stores: for more, one numpy call
per column beats a Python loop (one such call costs about as much as ten scalar stores)."""

_SPACES = re.compile(r"\s+")


_TEXT_DIGESTS: dict[str, int] = {}
"""Short texts' normalized 64-bit digests, remembered (a crowd's observations repeat)."""
_TEXT_DIGESTS_MAX = 8_192
_TEXT_DIGEST_CHARS = 256
"""Most texts remembered, and the longest: at most about 2 MB of text."""


def content_fingerprint(layer: int, text: str) -> int:
    """:func:`fingerprint` of the layer and the normalized text's 64-bit digest.

    The text is casefolded and its spaces collapsed. The ingest dedup index is keyed by
    it; a hit is confirmed by comparing the texts. The digest of a short text is
    remembered (a pure function of the text; the table starts over when full).
    """
    digest = _TEXT_DIGESTS.get(text)
    if digest is None:
        digest = text_digest64(normalized_content(text))
        if len(text) <= _TEXT_DIGEST_CHARS:
            if len(_TEXT_DIGESTS) >= _TEXT_DIGESTS_MAX:
                _TEXT_DIGESTS.clear()
            _TEXT_DIGESTS[text] = digest
    return fingerprint(layer, digest)


def fingerprint(layer: int, digest: int) -> int:
    """``layer << 64 | digest``: a dedup key from a layer code and a text's 64-bit digest.

    An int, not a pair: the index then holds no object the garbage collector tracks. The
    digest part is ``key & FINGERPRINT_DIGEST`` (what a per-slot column keeps).
    """
    return (layer << 64) | digest


FINGERPRINT_DIGEST = (1 << 64) - 1
"""Mask of a :func:`fingerprint`'s digest part."""


def normalized_content(text: str) -> str:
    """The form ingest dedup compares: casefolded, whitespace collapsed, stripped."""
    if "  " in text or not text.isprintable():  # a run of spaces, or other whitespace
        text = _SPACES.sub(" ", text)
    return text.strip().casefold()


def record_id(agent_id: str, key: int) -> str:
    """The id of the record with per-agent sequence number ``key``."""
    return f"{agent_id}:{key:010d}"


@dataclass(frozen=True, slots=True)
class RecordExtra:
    """The sparse part of a record's metadata, kept only for records that have some.

    Immutable, and shared between records (:func:`shared_extra`): never change one, nor its
    ``attributes``, in place; build a new one.
    """

    source_ref_ids: tuple[str, ...] = ()
    spatial: SpatialMeta | None = None
    social: SocialMeta | None = None
    procedural: ProceduralMeta | None = None
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)

    def is_empty(self) -> bool:
        """Whether every field has its default (such an extra is not stored)."""
        return not (self.source_ref_ids or self.attributes or self.spatial is not None
                    or self.social is not None or self.procedural is not None)

    def canonical(self) -> dict[str, Any]:
        """JSON form for hashing and snapshots (camelCase keys, ``None`` omitted)."""
        out: dict[str, Any] = {}
        if self.source_ref_ids:
            out["sourceRefIds"] = list(self.source_ref_ids)
        for name, meta in (("spatial", self.spatial), ("social", self.social),
                           ("procedural", self.procedural)):
            if meta is not None:
                out[name] = meta.to_json_dict()
        if self.attributes:
            out["attributes"] = dict(self.attributes)
        return out

    @classmethod
    def from_canonical(cls, data: Mapping[str, Any]) -> RecordExtra:
        """Inverse of :meth:`canonical` (validates the nested models)."""
        def meta(model: Any, name: str) -> Any:
            value = data.get(name)
            return None if value is None else model.parse(value)
        attrs = data.get("attributes") or {}
        if not isinstance(attrs, Mapping):
            raise ValueError("attributes must be a mapping")
        return shared_extra(cls(tuple(str(s) for s in data.get("sourceRefIds") or ()),
                                meta(SpatialMeta, "spatial"), meta(SocialMeta, "social"),
                                meta(ProceduralMeta, "procedural"), dict(attrs)))


def attribute_key(attributes: Mapping[str, Any]) -> tuple[Any, ...]:
    """A key equal for attribute mappings equal by key order, value and value type.

    ``1``, ``1.0`` and ``True`` get different keys, as do ``0.0`` and ``-0.0`` (floats by
    ``float.hex``). Hashable when every value is an attribute value (str, bool, int or
    float). Runtime complexity: O(attributes).
    """
    return tuple([(k, v.hex()) if type(v) is float else (k, type(v), v)
                  for k, v in attributes.items()])


SHARED_EXTRAS_MAX = 4_096
"""Most extras :func:`shared_extra` remembers; then it starts over (sharing is only a saving)."""
_shared: dict[tuple[Any, ...], RecordExtra] = {}


def shared_extra(extra: RecordExtra) -> RecordExtra:
    """``extra``, or an equal one already handed out (records with equal extras share one).

    A simulation's records often carry the same few attributes (``{"with": "agent-7"}`` on
    every trade with agent 7): one object for them all saves some 250 bytes per record and
    an object the garbage collector visits. Only extras of source ids and attributes are
    shared, equal by value and type (``1``, ``1.0`` and ``True`` stay apart, as do ``0.0``
    and ``-0.0``); the remembered ones are bounded by :data:`SHARED_EXTRAS_MAX`, so sharing
    never grows memory. Which object a record holds is never observable in its values,
    hashes or snapshots.

    Runtime complexity: O(attributes).
    """
    if extra.spatial is not None or extra.social is not None or extra.procedural is not None:
        return extra
    key = (extra.source_ref_ids, *attribute_key(extra.attributes))
    try:
        found = _shared.get(key)
    except TypeError:  # no attribute value (a payload not validated yet): the caller checks
        return extra
    if found is None:
        if len(_shared) >= SHARED_EXTRAS_MAX:
            _shared.clear()
        found = _shared[key] = extra
    return found


EMPTY_EXTRA = RecordExtra()
"""The shared extra of a record with no sparse fields (never mutated)."""


class Removed(NamedTuple):
    """A record that left the store: its agent, layer and key (``id`` built on demand)."""

    agent_id: str
    layer: MemoryLayer
    key: int

    @property
    def id(self) -> str:
        """The record id."""
        return record_id(self.agent_id, self.key)


@dataclass(slots=True)
class NewRecords:
    """Column values of records about to be stored, one entry per record, in order.

    Columns are any sequences (the ingestor gives tuples and a range of keys: a tuple of
    numbers or strings leaves the garbage collector's tracking, a list would not).
    """

    keys: Sequence[int] = ()
    layer: Sequence[int] = ()
    importance: Sequence[float] = ()
    flagged: Sequence[bool] = ()
    created: Sequence[int] = ()
    anchor: Sequence[int] = ()
    tokens: Sequence[int] = ()
    deadline: Sequence[int] = ()
    status: Sequence[int] = ()
    redacted: Sequence[bool] = ()
    tagset: Sequence[int] = ()
    content: Sequence[str] = ()
    source_event: dict[int, str] = field(default_factory=dict)
    """By position in the batch."""
    extras: dict[int, RecordExtra] = field(default_factory=dict)
    """By position in the batch."""

    def __len__(self) -> int:
        return len(self.keys)
