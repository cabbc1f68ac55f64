"""Bundle hashing (DESIGN.md rules 3-4): sha256 over a canonical, quantized form.

:func:`bundle_hash` is the hash of a retrieval result (the primitives ``DEFAULT_QUANTUM``,
``canonicalize``, ``canonical_json`` and ``sha256_hex`` live in the base-layer module
:mod:`f09_memory.canonical`; :mod:`f09_memory.determinism.hashing` re-exports both). It lives
with retrieval because the engine computes it too: ``retrieve_many(..., hashes=True)`` hashes
a frame's bundles from per-slot record digests kept beside the record cache
(``core.records.RecordReader.digests``), with no Python work per unchanged record, and gives
the same hashes as :func:`bundle_hash` (:func:`hash_with_digests`).

``bundle_hash`` hashes a compact canonical form rather than the full pydantic dump (the dump
cost ~23 µs per record and dominated ``f09-memory simulate``). The form is one compact ASCII
JSON array of flat, fixed-arity lists: per record its scalar fields, the importance
quantized and the sha256 of the content (``record.hash`` when set, never the content
itself); the metadata's tags and flag, and its other fields only for records where they
are not all default; then the bundle's totals and diagnostics. No raw float is written and
every object is built with sorted keys, so the bytes are the same in every process.
Building the form column-wise (``itemgetter`` over each record's ``__dict__``) keeps the
per-record Python work small; tests pin the field lists so a new field cannot be missed.
A bundle's hash is the sha256 of its tail (totals and diagnostics) followed by each
record's 32-byte :func:`record_digest`, in order.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import operator
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel

from f09_memory.canonical import DEFAULT_QUANTUM, canonicalize, quantize_scalar
from f09_memory.errors import InputInvalidError
from f09_memory.schema.enums import MemoryLayer, PressureState
from f09_memory.schema.records import (
    MemoryRecord,
    ProceduralMeta,
    RecordMetadata,
    SocialMeta,
    SpatialMeta,
)
from f09_memory.schema.retrieval import RetrievalDiagnostics, RetrievedBundle, ScoreComponent

if TYPE_CHECKING:
    from hashlib import _Hash

__all__ = [
    "BUNDLE_FORM",
    "DIGEST_SIZE",
    "BundleHasher",
    "RetrievedBundles",
    "bundle_hash",
    "content_hash",
    "hash_with_digests",
    "record_digest",
]

DIGEST_SIZE: Final = 32
"""Bytes of one :func:`record_digest` (sha256)."""

BUNDLE_FORM = "f09-bundle/3"
"""Tag of the canonical form hashed by :func:`bundle_hash`; bump it when the form changes."""

_EMPTY_METADATA: Final[dict[str, Any]] = dict(RecordMetadata().__dict__)
_METADATA_FIELDS: Final = tuple(RecordMetadata.model_fields)
_SHORT_METADATA: Final = ("tags", "flagged")
_REST_METADATA: Final = tuple(f for f in _METADATA_FIELDS if f not in _SHORT_METADATA)
_metadata_short = operator.itemgetter(*_SHORT_METADATA)
_metadata_rest = operator.itemgetter(*_REST_METADATA)
_EMPTY_REST: Final = _metadata_rest(_EMPTY_METADATA)
_record_row = operator.itemgetter(
    "id", "layer", "embedding_ref", "hash", "created_at", "recency_anchor", "ttl",
    "tokens_estimate", "redacted",
)
"""Per record, the fields JSON holds as they are: str, int, bool or None (``layer`` is a
StrEnum, written as its value). ``agent_id`` is left out: the id names the agent."""
_ROW: Final = 9
"""Values per record in the flat ``rows`` list of the hashed form."""
_HASH_AT: Final = 3
_MODELS: Final = frozenset(
    {SpatialMeta, SocialMeta, ProceduralMeta, RecordMetadata, ScoreComponent}
)
"""Model classes met in bundles, recognized by exact type (pydantic's ``isinstance`` is slow)."""
_DIAGNOSTICS_GENERIC: Final = tuple(
    name for name in RetrievalDiagnostics.model_fields
    if name not in ("time_ms", "scoring_breakdown")
)


@functools.cache
def _fields_of(cls: type[BaseModel]) -> tuple[tuple[str, str, Any], ...]:
    """``(name, JSON alias, default)`` per field of a model class, sorted by alias."""
    return tuple(sorted(
        ((name, info.alias or name, info.get_default(call_default_factory=True))
         for name, info in cls.model_fields.items()),
        key=lambda field: field[1],
    ))


def _model_form(model: BaseModel) -> dict[str, Any]:
    """The model's non-default fields by JSON alias, canonical (see :func:`_plain`)."""
    values = model.__dict__
    return {
        alias: _plain(value)
        for name, alias, default in _fields_of(type(model))
        if (value := values[name]) != default
    }


def _first(pair: tuple[str, Any]) -> str:
    return pair[0]


def _plain(value: Any) -> Any:
    """Canonical JSON-ready form of a field value: floats quantized, models as objects.

    A model becomes ``canonicalize(model.model_dump(mode="json", by_alias=True,
    exclude_defaults=True))`` without the pydantic dump (a test checks they agree); exact
    types are dispatched first because ``isinstance`` against pydantic's ABC is slow.
    """
    if value is None:
        return None
    kind = type(value)
    if kind is str or kind is int or kind is bool:
        return value
    if kind is float and math.isfinite(value):
        return round(value * DEFAULT_QUANTUM)
    if kind is tuple or kind is list:
        return [_plain(v) for v in value] if value else []
    if kind is dict:
        if not value:
            return {}
        items = sorted(((str(k), v) for k, v in value.items()), key=_first)
        return {k: _plain(v) for k, v in items}
    if kind in _MODELS or (not isinstance(value, Enum) and isinstance(value, BaseModel)):
        return _model_form(value)
    if isinstance(value, Enum):
        return _plain(value.value)
    return canonicalize(value)


def _metadata_rest_form(rest: tuple[Any, ...]) -> list[Any]:
    """Metadata fields besides tags and flagged, canonical, in declaration order.

    ``rest`` is ``_metadata_rest(metadata.__dict__)`` and not all default.
    """
    return [_plain(v) for v in rest]


def content_hash(content: str) -> str:
    """A record's ``hash``: the sha256 hex of its (stored, redacted) content."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def _quantized(value: Any, field: str) -> int:
    """``value`` quantized (an int); a number that is not finite is refused.

    Raises:
        InputInvalidError: ``value`` is NaN or infinite (only a bundle or record built
            without validation can hold one).
    """
    try:
        return quantize_scalar(value, DEFAULT_QUANTUM)
    except (ValueError, OverflowError):
        raise InputInvalidError(
            f"{field} is {value!r}, not a finite number: hash bundles the engine returned, "
            "or validate a hand-made one first (model_validate)",
            details={"field": field}) from None


def _diagnostics_form(diagnostics: RetrievalDiagnostics) -> list[Any]:
    """Every diagnostics field but ``time_ms``, in declaration order (weights quantized)."""
    values = diagnostics.__dict__
    form = [_plain(values[name]) for name in _DIAGNOSTICS_GENERIC]
    form.append([
        [c.key, _quantized(c.weight, "scoring_breakdown.weight")]
        for c in values["scoring_breakdown"]
    ])
    return form


_encode = json.JSONEncoder(
    separators=(",", ":"), allow_nan=False, check_circular=False, default=canonicalize
).encode
"""Compact ASCII JSON. Every object in the form is built with sorted keys, so the encoder
need not sort (which is slower); a numpy scalar that slipped into a record goes through
:func:`canonicalize`."""


def _record_form(values: dict[str, Any]) -> list[Any]:
    """One record's canonical form: its row, quantized importance, tags, flag, metadata."""
    row = list(_record_row(values))
    if row[_HASH_AT] is None:  # a record built without a content hash
        row[_HASH_AT] = content_hash(values["content"])
    meta = values["metadata"].__dict__
    rest = _metadata_rest(meta)
    row.append(_quantized(values["importance"], "importance"))
    row.extend(_metadata_short(meta))
    row.append(None if rest == _EMPTY_REST else _metadata_rest_form(rest))
    return row


def record_digest(record: MemoryRecord) -> bytes:
    """sha256 of one record's canonical form (what a bundle hash covers of it)."""
    values = record.__dict__
    text = _fast_record(values) or _encode(_record_form(values))
    return hashlib.sha256(text.encode("ascii")).digest()


def _bundle_tail(bundle: RetrievedBundle) -> str:
    """The bundle's canonical tail (its totals and diagnostics) as compact JSON."""
    values = bundle.__dict__
    return _fast_tail(values) or _encode([
        BUNDLE_FORM,
        len(values["records"]),
        values["total_tokens"],
        values["truncated"],
        values["strategy_applied"],
        _diagnostics_form(values["diagnostics"]),
    ])


_json_str: Final[Callable[[str], str]] = json.encoder.encode_basestring_ascii
_TAIL_START: Final = _encode([BUNDLE_FORM])[:-1]
assert _DIAGNOSTICS_GENERIC == ("candidate_count", "filtered_count", "compression_applied",
                                "pressure_state", "budget", "semantic_fallback")
_JSON_BOOL: Final = ("false", "true")
_LAYER_TEXT: Final = {layer: _json_str(layer.value) for layer in MemoryLayer}
_TAGS_TEXT: dict[tuple[str, ...], str] = {}
"""The JSON (inside the brackets) of tag tuples met before: records share few of them."""
_TAGS_MAX: Final = 4_096
_COMPONENT_TEXT: dict[int, tuple[ScoreComponent, str]] = {}
"""The JSON of score components met before (frozen models; the engine reuses the same
objects from frame to frame), by identity, each kept alive beside its text."""
_COMPONENTS_MAX: Final = 4_096


def _fast_tail(values: dict[str, Any]) -> str | None:
    """:func:`_bundle_tail` written directly for the types the engine builds.

    About 3x faster than encoding the form; ``None`` for any other value (the general form
    then decides). A test checks both give the same text.
    """
    diagnostics = values["diagnostics"].__dict__
    total, strategy = values["total_tokens"], values["strategy_applied"]
    candidates, filtered = diagnostics["candidate_count"], diagnostics["filtered_count"]
    budget, fallback = diagnostics["budget"], diagnostics["semantic_fallback"]
    pressure = diagnostics["pressure_state"]
    truncated, compressed = values["truncated"], diagnostics["compression_applied"]
    if not (type(total) is int and type(strategy) is str and type(candidates) is int
            and type(filtered) is int and type(budget) is int and type(truncated) is bool
            and type(compressed) is bool and type(pressure) is PressureState
            and (fallback is None or type(fallback) is str)):
        return None
    parts = []
    for component in diagnostics["scoring_breakdown"]:
        known = _COMPONENT_TEXT.get(id(component))
        if known is not None and known[0] is component:
            parts.append(known[1])
            continue
        weight = component.weight
        if type(component) is not ScoreComponent or type(weight) is not float or not (
                math.isfinite(weight) and type(component.key) is str):
            return None
        text = f"[{_json_str(component.key)},{round(weight * DEFAULT_QUANTUM)}]"
        if len(_COMPONENT_TEXT) >= _COMPONENTS_MAX:
            _COMPONENT_TEXT.clear()
        _COMPONENT_TEXT[id(component)] = (component, text)  # kept: its id is not reused
        parts.append(text)
    return (f"{_TAIL_START},{len(values['records'])},{total},{_JSON_BOOL[truncated]},"
            f"{_json_str(strategy)},[{candidates},{filtered},{_JSON_BOOL[compressed]},"
            f"{_json_str(pressure.value)},{budget},"
            f"{'null' if fallback is None else _json_str(fallback)},[{','.join(parts)}]]]")


def _fast_record(values: dict[str, Any]) -> str | None:
    """:func:`_record_form`'s JSON written directly for the types the engine builds.

    About 2x faster than encoding the form (a record digest was 5% of ``f09-memory
    simulate``); ``None`` for a record with sparse metadata, a missing content hash or any
    other value type (the general form then decides). A test checks both give the same text.
    """
    rid, layer, ref, digest, created, anchor, ttl, tokens, redacted = _record_row(values)
    meta = values["metadata"].__dict__
    tags, flagged = _metadata_short(meta)
    importance = values["importance"]
    try:
        layer_text = _LAYER_TEXT.get(layer)
        tag_text = _TAGS_TEXT.get(tags)
    except TypeError:  # an unhashable value: a record built without validation
        return None
    if not (type(rid) is str and layer_text is not None and type(digest) is str
            and type(created) is int and type(anchor) is int
            and (ttl is None or type(ttl) is int) and (tokens is None or type(tokens) is int)
            and (ref is None or type(ref) is str) and type(redacted) is bool
            and type(flagged) is bool and type(importance) is float
            and math.isfinite(importance) and type(tags) is tuple
            and _metadata_rest(meta) == _EMPTY_REST):
        return None
    if tag_text is None:
        if not all(type(tag) is str for tag in tags):
            return None
        if len(_TAGS_TEXT) >= _TAGS_MAX:
            _TAGS_TEXT.clear()
        tag_text = _TAGS_TEXT[tags] = ",".join(map(_json_str, tags))
    return (f"[{_json_str(rid)},{layer_text},{'null' if ref is None else _json_str(ref)},"
            f"{_json_str(digest)},{created},{anchor},{'null' if ttl is None else ttl},"
            f"{'null' if tokens is None else tokens},{_JSON_BOOL[redacted]},"
            f"{round(importance * DEFAULT_QUANTUM)},[{tag_text}],{_JSON_BOOL[flagged]},null]")


def _bundle_head(bundle: RetrievedBundle) -> _Hash:
    """sha256 state over the bundle's canonical tail (its totals and diagnostics)."""
    return hashlib.sha256(_bundle_tail(bundle).encode("ascii"))


def hash_with_digests(bundle: RetrievedBundle, digests: bytes) -> str:
    """The :func:`bundle_hash` of ``bundle``, given its records' digests.

    Args:
        bundle: A retrieval result.
        digests: The :func:`record_digest` of each of its records, concatenated in order.

    Returns:
        64 lowercase hex characters, equal to ``bundle_hash(bundle)``.
    """
    h = _bundle_head(bundle)
    h.update(digests)
    return h.hexdigest()


def bundle_hash(bundle: RetrievedBundle) -> str:
    """Deterministic hash of a retrieval result.

    Covers, per record (in order), its id (which names the agent), layer, importance
    (quantized), created_at, recency_anchor, ttl, tokens_estimate, embedding_ref, redacted
    flag, the sha256 of its content (``record.hash`` when set) and its metadata; then the
    bundle's total_tokens, truncated, strategy_applied and every diagnostics field except
    the measured ``time_ms`` (scoring-breakdown weights quantized).

    Runtime complexity: ``O(records)``, a few microseconds per record
    (:class:`BundleHasher` reuses the digests of records seen before).

    Args:
        bundle: A retrieval result.

    Returns:
        64 lowercase hex characters; equal bundles give equal hashes in every process.

    Raises:
        InputInvalidError: The bundle holds a number that is not finite (an importance or
            a score weight: a bundle built without validation).
    """
    return hash_with_digests(bundle, b"".join(map(record_digest, bundle.records)))


class BundleHasher:
    """``bundle_hash`` that remembers record digests, for hashing every frame's bundles.

    The engine hands back the same record object while a record is unchanged, so a digest
    is remembered by object identity (the object is kept alongside, so its identity cannot
    be reused while remembered); at most ``capacity`` digests are kept, then the memo starts
    over. A bundle's remembered digests are looked up in one pass and hashed in one update.
    The hashes are exactly :func:`bundle_hash`'s.
    """

    def __init__(self, capacity: int = 65_536) -> None:
        self._capacity = capacity
        self._memo: dict[int, bytes] = {}
        self._kept: list[MemoryRecord] = []

    def __call__(self, bundle: RetrievedBundle) -> str:
        """The :func:`bundle_hash` of ``bundle``."""
        h = _bundle_head(bundle)
        records = bundle.records
        memo = self._memo
        digests = list(map(memo.get, map(id, records)))
        if not all(digests):  # a digest is 32 non-empty bytes: only misses are None
            for i, found in enumerate(digests):
                if found is None:
                    record = records[i]
                    if len(memo) >= self._capacity:
                        memo.clear()
                        self._kept.clear()
                    digests[i] = memo[id(record)] = record_digest(record)
                    self._kept.append(record)
        h.update(b"".join(digests))  # type: ignore[arg-type]
        return h.hexdigest()


class RetrievedBundles(list[RetrievedBundle]):
    """``MemoryEngine.retrieve_many``'s bundles (a list), with their hashes when asked for.

    Attributes:
        hashes: The :func:`bundle_hash` of each bundle, in order (``retrieve_many(...,
            hashes=True)``), or ``None``.
    """

    hashes: list[str] | None = None
