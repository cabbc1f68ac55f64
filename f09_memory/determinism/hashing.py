"""Canonical hashing (DESIGN.md rules 3-4): sha256 over canonical, quantized JSON.

The primitives (``DEFAULT_QUANTUM``, ``canonicalize``, ``canonical_json``, ``sha256_hex``)
live in the base-layer module :mod:`f09_memory.canonical` and are re-exported here;
this module adds :func:`bundle_hash`, the hash of a retrieval result.

``bundle_hash`` hashes a compact canonical form rather than the full pydantic dump (the dump
cost ~23 µs per record and dominated ``f09-memory simulate``). The form is one compact ASCII
JSON array of flat, fixed-arity lists: per record its scalar fields, the importance
quantized and the sha256 of the content (``record.hash`` when set, never the content
itself); the metadata's tags and flag, and its other fields only for records where they
are not all default; then the bundle's totals and diagnostics. No raw float is written and
every object is built with sorted keys, so the bytes are the same in every process.
Building the form column-wise (``itemgetter`` over each record's ``__dict__``) keeps the
per-record Python work small; tests pin the field lists so a new field cannot be missed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import operator
from enum import Enum
from itertools import chain
from typing import Any, Final

from pydantic import BaseModel

from f09_memory.canonical import DEFAULT_QUANTUM, canonical_json, canonicalize, sha256_hex
from f09_memory.schema.records import ProceduralMeta, RecordMetadata, SocialMeta, SpatialMeta
from f09_memory.schema.retrieval import RetrievalDiagnostics, RetrievedBundle, ScoreComponent

__all__ = ["DEFAULT_QUANTUM", "bundle_hash", "canonical_json", "canonicalize", "sha256_hex"]

BUNDLE_FORM = "f09-bundle/2"
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


def _content_hash(values: dict[str, Any]) -> str:
    return hashlib.sha256(values["content"].encode("utf-8")).hexdigest()


def _diagnostics_form(diagnostics: RetrievalDiagnostics) -> list[Any]:
    """Every diagnostics field but ``time_ms``, in declaration order (weights quantized)."""
    values = diagnostics.__dict__
    form = [_plain(values[name]) for name in _DIAGNOSTICS_GENERIC]
    form.append([
        [c.key, round(float(c.weight) * DEFAULT_QUANTUM)] for c in values["scoring_breakdown"]
    ])
    return form


_encode = json.JSONEncoder(
    separators=(",", ":"), allow_nan=False, check_circular=False, default=canonicalize
).encode
"""Compact ASCII JSON. Every object in the form is built with sorted keys, so the encoder
need not sort (which is slower); a numpy scalar that slipped into a record goes through
:func:`canonicalize`."""


def bundle_hash(bundle: RetrievedBundle) -> str:
    """Deterministic hash of a retrieval result.

    Covers, per record, its id (which names the agent), layer, importance (quantized),
    created_at, recency_anchor, ttl, tokens_estimate, embedding_ref, redacted flag, the
    sha256 of its content (``record.hash`` when set) and its metadata; then the bundle's
    total_tokens, truncated, strategy_applied and every diagnostics field except the
    measured ``time_ms`` (scoring-breakdown weights quantized). Record order counts.

    Runtime complexity: ``O(records)``, a few microseconds per record.

    Args:
        bundle: A retrieval result.

    Returns:
        64 lowercase hex characters; equal bundles give equal hashes in every process.
    """
    values = bundle.__dict__
    records = values["records"]
    fields = [record.__dict__ for record in records]
    rows = list(chain.from_iterable(map(_record_row, fields)))
    if None in rows[_HASH_AT::_ROW]:  # records built without a content hash
        for i, f in enumerate(fields):
            if rows[i * _ROW + _HASH_AT] is None:
                rows[i * _ROW + _HASH_AT] = _content_hash(f)
    importance = [round(float(f["importance"]) * DEFAULT_QUANTUM) for f in fields]
    metadata = [f["metadata"].__dict__ for f in fields]
    tags_flagged = list(chain.from_iterable(map(_metadata_short, metadata)))
    rest = list(map(_metadata_rest, metadata))
    if rest.count(_EMPTY_REST) == len(rest):
        rest_forms: list[Any] | None = None
    else:
        rest_forms = [
            None if r == _EMPTY_REST else _metadata_rest_form(r) for r in rest
        ]
    form = [
        BUNDLE_FORM,
        len(records),
        rows,
        importance,
        tags_flagged,
        rest_forms,
        values["total_tokens"],
        values["truncated"],
        values["strategy_applied"],
        _diagnostics_form(values["diagnostics"]),
    ]
    return hashlib.sha256(_encode(form).encode("ascii")).hexdigest()
