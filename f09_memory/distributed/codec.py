"""A compact, exact encoding of retrieved bundles for the trip from a shard to the driver.

Pickling a ``RetrievedBundle`` pickles every pydantic model in it with its field-name set
(about 0.17 ms for a bundle of 13 records). Here a bundle becomes nested tuples of its
field values in declared field order (records, their metadata and its parts, the
diagnostics and their score components), which pickle as plain tuples; decoding rebuilds
the models with ``schema.base.trusted`` (no validation: the values are the shard's own
validated ones). ``decode_bundle(encode_bundle(b)) == b`` field for field.

Runtime complexity: O(fields) Python per bundle, about 4x cheaper than pickling it.
"""

from __future__ import annotations

from typing import Any

from f09_memory.schema.base import trusted_factory
from f09_memory.schema.records import (
    MemoryRecord,
    ProceduralMeta,
    RecordMetadata,
    SocialMeta,
    SpatialMeta,
)
from f09_memory.schema.retrieval import RetrievalDiagnostics, RetrievedBundle, ScoreComponent

__all__ = ["decode_bundle", "encode_bundle"]

_RECORD = tuple(MemoryRecord.model_fields)
_META = tuple(RecordMetadata.model_fields)
_SPATIAL = tuple(SpatialMeta.model_fields)
_SOCIAL = tuple(SocialMeta.model_fields)
_PROCEDURAL = tuple(ProceduralMeta.model_fields)
_BUNDLE = tuple(RetrievedBundle.model_fields)
_DIAG = tuple(RetrievalDiagnostics.model_fields)
_SCORE = tuple(ScoreComponent.model_fields)
_PARTS = (("spatial", _SPATIAL, SpatialMeta), ("social", _SOCIAL, SocialMeta),
          ("procedural", _PROCEDURAL, ProceduralMeta))
_make_record = trusted_factory(MemoryRecord)
_make_meta = trusted_factory(RecordMetadata)
_make_bundle = trusted_factory(RetrievedBundle)
_make_diag = trusted_factory(RetrievalDiagnostics)
_make_score = trusted_factory(ScoreComponent)
_MAKERS = {SpatialMeta: trusted_factory(SpatialMeta), SocialMeta: trusted_factory(SocialMeta),
           ProceduralMeta: trusted_factory(ProceduralMeta)}


def _encode_meta(meta: RecordMetadata) -> tuple[Any, ...]:
    d = meta.__dict__
    out = [d[f] for f in _META]
    for name, fields, _ in _PARTS:
        part = d[name]
        if part is not None:
            pd = part.__dict__
            out[_META.index(name)] = tuple(pd[f] for f in fields)
    return tuple(out)


def _decode_meta(data: tuple[Any, ...]) -> RecordMetadata:
    values = dict(zip(_META, data, strict=True))
    for name, fields, cls in _PARTS:
        part = values[name]
        if part is not None:
            values[name] = _MAKERS[cls](dict(zip(fields, part, strict=True)))
    return _make_meta(values)


def encode_bundle(bundle: RetrievedBundle) -> tuple[Any, ...]:
    """``bundle`` as nested tuples of field values (see the module docstring)."""
    d = bundle.__dict__
    records = []
    meta_at = _RECORD.index("metadata")
    for record in d["records"]:
        rd = record.__dict__
        values = [rd[f] for f in _RECORD]
        values[meta_at] = _encode_meta(values[meta_at])
        records.append(tuple(values))
    diag = d["diagnostics"].__dict__
    diag_values = [diag[f] for f in _DIAG]
    at = _DIAG.index("scoring_breakdown")
    diag_values[at] = tuple(tuple(s.__dict__[f] for f in _SCORE) for s in diag_values[at])
    values = [d[f] for f in _BUNDLE]
    values[_BUNDLE.index("records")] = tuple(records)
    values[_BUNDLE.index("diagnostics")] = tuple(diag_values)
    return tuple(values)


def decode_bundle(data: tuple[Any, ...]) -> RetrievedBundle:
    """The ``RetrievedBundle`` :func:`encode_bundle` encoded."""
    values = dict(zip(_BUNDLE, data, strict=True))
    meta_at = _RECORD.index("metadata")
    records = []
    for rec in values["records"]:
        fields = dict(zip(_RECORD, rec, strict=True))
        fields["metadata"] = _decode_meta(rec[meta_at])
        records.append(_make_record(fields))
    values["records"] = records
    diag = dict(zip(_DIAG, values["diagnostics"], strict=True))
    diag["scoring_breakdown"] = [_make_score(dict(zip(_SCORE, s, strict=True)))
                                 for s in diag["scoring_breakdown"]]
    values["diagnostics"] = _make_diag(diag)
    return _make_bundle(values)
