from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from f09_memory import (
    MemoryConfig,
    MemoryEngine,
    MemoryEngineError,
    MemoryRecord,
    PressureState,
    RecordMetadata,
    RetrievalDiagnostics,
    RetrievalRequest,
    RetrievedBundle,
    bundle_hash,
)
from f09_memory.determinism import canonical_json, canonicalize, sha256_hex
from f09_memory.retrieval import digest as hashing
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.records import ProceduralMeta, SocialMeta, SpatialMeta
from f09_memory.schema.retrieval import ScoreComponent


def test_canonical_json_sorts_keys_and_quantizes_floats() -> None:
    assert b'{"a":[1,"x"],"b":500000000}' == canonical_json({"b": 0.5, "a": (1, "x")})


def test_last_bit_float_noise_does_not_change_the_hash() -> None:
    assert sha256_hex({"s": 0.1 + 0.2}) == sha256_hex({"s": 0.3})
    assert sha256_hex({"s": 0.3}) != sha256_hex({"s": 0.31})


def test_non_finite_and_unsupported_values() -> None:
    assert ["nan", "inf", "-inf"] == canonicalize([float("nan"), float("inf"), float("-inf")])
    with pytest.raises(MemoryEngineError):
        canonicalize(object())


# --------------------------------------------------------------------------- bundle_hash

def make_record(i: int = 1, **changes: Any) -> MemoryRecord:
    fields: dict[str, Any] = {
        "id": f"npc-001:{i:010d}", "layer": MemoryLayer.EPISODIC, "agent_id": "npc-001",
        "created_at": 1_000, "importance": 0.5, "recency_anchor": 1_500, "ttl": None,
        "embedding_ref": "hashing-v1", "tokens_estimate": 12, "content": f"Saw Villager {i}.",
        "metadata": RecordMetadata(tags=("well",)), "redacted": False, "hash": None,
    }
    fields.update(changes)
    return MemoryRecord(**fields)


def make_bundle(records: list[MemoryRecord] | None = None, **changes: Any) -> RetrievedBundle:
    diagnostics: dict[str, Any] = {
        "candidate_count": 7, "filtered_count": 1, "time_ms": 0.25,
        "scoring_breakdown": [ScoreComponent(key="importance", weight=0.5),
                              ScoreComponent(key="recency", weight=0.5)],
        "compression_applied": False, "pressure_state": PressureState.NORMAL, "budget": 500,
        "semantic_fallback": None,
    }
    diagnostics.update(changes.pop("diagnostics", {}))
    fields: dict[str, Any] = {
        "records": [make_record(1), make_record(2)] if records is None else records,
        "total_tokens": 24, "truncated": False, "strategy_applied": "balanced",
        "diagnostics": RetrievalDiagnostics(**diagnostics),
    }
    fields.update(changes)
    return RetrievedBundle(**fields)


def test_equal_bundles_have_equal_hashes() -> None:
    assert bundle_hash(make_bundle()) == bundle_hash(make_bundle())
    assert 64 == len(bundle_hash(make_bundle()))


def test_the_measured_time_is_not_hashed() -> None:
    assert bundle_hash(make_bundle()) == bundle_hash(make_bundle(diagnostics={"time_ms": 99.0}))


RECORD_CHANGES = {
    "id": "npc-001:0000000099",
    "layer": MemoryLayer.SEMANTIC,
    "importance": 0.51,
    "created_at": 1_001,
    "recency_anchor": 1_501,
    "ttl": 30_000,
    "tokens_estimate": 13,
    "embedding_ref": None,
    "redacted": True,
    "content": "Saw Villager 7 instead.",
    "hash": "0" * 64,
    "metadata": RecordMetadata(),
}


@pytest.mark.parametrize("field", sorted(RECORD_CHANGES))
def test_changing_any_hashed_record_field_changes_the_hash(field: str) -> None:
    changed = make_bundle([make_record(1), make_record(2, **{field: RECORD_CHANGES[field]})])
    assert bundle_hash(make_bundle()) != bundle_hash(changed)


METADATA_CHANGES: dict[str, Any] = {
    "tags": ("well", "market"),
    "source_event": "trade",
    "source_ref_ids": ("npc-001:0000000001",),
    "spatial": SpatialMeta(x=1.0, y=2.0),
    "social": SocialMeta(other_agent_id="npc-002", sentiment=0.25),
    "procedural": ProceduralMeta(pattern_id="route-well", success_rate=0.5),
    "flagged": True,
    "attributes": {"mood": "calm"},
}


@pytest.mark.parametrize("field", sorted(METADATA_CHANGES))
def test_changing_any_metadata_field_changes_the_hash(field: str) -> None:
    default = RecordMetadata.model_fields[field].get_default(call_default_factory=True)
    sparse = RecordMetadata(tags=("well",))
    full = RecordMetadata(**METADATA_CHANGES)
    pairs = [(sparse, sparse.model_copy(update={field: METADATA_CHANGES[field]})),
             (full, full.model_copy(update={field: default}))]
    for meta, other in pairs:
        assert meta != other
        a = make_bundle([make_record(1, metadata=meta)])
        b = make_bundle([make_record(1, metadata=other)])
        assert bundle_hash(a) != bundle_hash(b)


@pytest.mark.parametrize("meta", [
    SpatialMeta(x=1.0, y=2.0), SpatialMeta(x=1.0, y=2.0, z=3.0),
    SocialMeta(other_agent_id="npc-002", sentiment=0.25), SocialMeta(sentiment=-1.0),
    ProceduralMeta(pattern_id="route-well", success_rate=0.5),
])
def test_changing_a_nested_metadata_float_changes_the_hash(meta: Any) -> None:
    field = {SpatialMeta: "spatial", SocialMeta: "social", ProceduralMeta: "procedural"}[
        type(meta)]
    name = next(k for k, v in type(meta).model_fields.items() if v.annotation is not None
                and isinstance(getattr(meta, k), float))
    bumped = meta.model_copy(update={name: getattr(meta, name) / 2 + 0.01})
    a = make_bundle([make_record(1, metadata=RecordMetadata(**{field: meta}))])
    b = make_bundle([make_record(1, metadata=RecordMetadata(**{field: bumped}))])
    assert bundle_hash(a) != bundle_hash(b)


def test_attribute_values_and_key_order() -> None:
    def with_attrs(attrs: dict[str, Any]) -> str:
        meta = RecordMetadata(attributes=attrs)
        return bundle_hash(make_bundle([make_record(1, metadata=meta)]))

    assert with_attrs({"a": 1, "b": "x"}) == with_attrs({"b": "x", "a": 1})
    assert with_attrs({"a": 0.1 + 0.2}) == with_attrs({"a": 0.3})  # quantized, not raw
    assert with_attrs({"a": 0.3}) != with_attrs({"a": 0.31})
    assert with_attrs({"a": 1}) != with_attrs({"a": "1"})


BUNDLE_CHANGES: dict[str, Any] = {
    "total_tokens": 25,
    "truncated": True,
    "strategy_applied": "recency",
}
DIAGNOSTICS_CHANGES: dict[str, Any] = {
    "candidate_count": 8,
    "filtered_count": 2,
    "scoring_breakdown": [ScoreComponent(key="importance", weight=0.6),
                          ScoreComponent(key="recency", weight=0.4)],
    "compression_applied": True,
    "pressure_state": PressureState.THROTTLE,
    "budget": 400,
    "semantic_fallback": "NO_QUERY",
}


@pytest.mark.parametrize("field", sorted(BUNDLE_CHANGES))
def test_changing_a_bundle_field_changes_the_hash(field: str) -> None:
    assert bundle_hash(make_bundle()) != bundle_hash(make_bundle(**{field: BUNDLE_CHANGES[field]}))


@pytest.mark.parametrize("field", sorted(DIAGNOSTICS_CHANGES))
def test_changing_a_diagnostics_field_changes_the_hash(field: str) -> None:
    changed = make_bundle(diagnostics={field: DIAGNOSTICS_CHANGES[field]})
    assert bundle_hash(make_bundle()) != bundle_hash(changed)


def test_record_order_and_count_change_the_hash() -> None:
    one, two = make_record(1), make_record(2)
    assert bundle_hash(make_bundle([one, two])) != bundle_hash(make_bundle([two, one]))
    assert bundle_hash(make_bundle([one])) != bundle_hash(make_bundle([one, two]))
    assert bundle_hash(make_bundle([])) != bundle_hash(make_bundle([one]))


def test_a_missing_content_hash_is_computed_from_the_content() -> None:
    rec = make_record(1)
    digest = hashlib.sha256(rec.content.encode("utf-8")).hexdigest()
    assert bundle_hash(make_bundle([rec])) == bundle_hash(
        make_bundle([make_record(1, hash=digest)]))


def test_last_bit_float_noise_in_importance_and_weights_is_not_hashed() -> None:
    noisy = make_bundle(
        [make_record(1, importance=0.1 + 0.2), make_record(2)],
        diagnostics={"scoring_breakdown": [ScoreComponent(key="importance", weight=0.1 + 0.2)]},
    )
    clean = make_bundle(
        [make_record(1, importance=0.3), make_record(2)],
        diagnostics={"scoring_breakdown": [ScoreComponent(key="importance", weight=0.3)]},
    )
    assert bundle_hash(noisy) == bundle_hash(clean)


@pytest.mark.parametrize("model", [
    RecordMetadata(tags=("a",), spatial=SpatialMeta(x=1.5, y=-2.25), flagged=True,
                   attributes={"b": 0.125, "a": "x", "c": True}),
    SocialMeta(other_agent_id="npc-002", sentiment=0.25),
    ProceduralMeta(success_rate=1.0),
    SpatialMeta(x=0.0, y=0.0),
])
def test_the_fast_model_form_is_the_canonical_dump(model: Any) -> None:
    dumped = model.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    assert canonicalize(dumped) == hashing._plain(model)


def test_the_hashed_field_lists_cover_every_field() -> None:
    # A new field must be added to bundle_hash's form (or knowingly left out) here.
    hashed_record = {"id", "layer", "embedding_ref", "hash", "created_at", "recency_anchor",
                     "ttl", "tokens_estimate", "redacted", "importance", "metadata"}
    assert hashed_record | {"agent_id", "content"} == set(MemoryRecord.model_fields)
    assert set(METADATA_CHANGES) == set(RecordMetadata.model_fields)
    assert set(BUNDLE_CHANGES) | {"records", "diagnostics"} == set(RetrievedBundle.model_fields)
    assert set(DIAGNOSTICS_CHANGES) | {"time_ms"} == set(RetrievalDiagnostics.model_fields)


def test_bundle_hasher_gives_bundle_hash_and_sees_changed_records() -> None:
    from f09_memory import MemoryEngine, RetrievalRequest
    from f09_memory.determinism.hashing import BundleHasher, bundle_hash

    engine = MemoryEngine()
    rec = engine.ingest("a", "Saw the smith at the well.", importance=0.4, now=1)
    engine.ingest("a", "It rained.", now=2)
    hasher = BundleHasher(capacity=1)  # the memo also starts over when full
    request = RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=400)
    first = engine.retrieve(request, now=3)
    assert bundle_hash(first) == hasher(first) == hasher(first)
    engine.ingest_claim("a", "Smith owes 3.", _claim(), now=4)
    second = engine.retrieve(request, now=5)
    assert bundle_hash(second) == hasher(second) != hasher(first)
    assert rec.id in [r.id for r in second.records]


def _claim():  # type: ignore[no-untyped-def]
    from f09_memory.ingestion import Claim
    return Claim("smith", "owes", "3")


def test_bundle_hasher_with_a_record_twice_and_a_memo_starting_over() -> None:
    from f09_memory import MemoryEngine, RetrievalRequest
    from f09_memory.determinism.hashing import BundleHasher, bundle_hash

    engine = MemoryEngine()
    for i in range(5):
        engine.ingest("a", f"Fact number {i}.", importance=0.1 * i, now=i)
    bundle = engine.retrieve(RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=400),
                             now=9)
    twice = bundle.model_copy(update={"records": [*bundle.records, bundle.records[0]]})
    for capacity in (1, 2, 64):
        hasher = BundleHasher(capacity=capacity)
        assert [bundle_hash(b) for b in (bundle, twice, bundle)] == [
            hasher(b) for b in (bundle, twice, bundle)]


def _general_tail(bundle: RetrievedBundle) -> str:
    values = bundle.__dict__
    return hashing._encode([
        hashing.BUNDLE_FORM, len(values["records"]), values["total_tokens"],
        values["truncated"], values["strategy_applied"],
        hashing._diagnostics_form(values["diagnostics"])])


@pytest.mark.parametrize("change", [
    {}, *({field: value} for field, value in BUNDLE_CHANGES.items()),
    {"strategy_applied": 'quote " and \u00e9'},
])
def test_the_written_tail_is_the_encoded_form(change: dict[str, Any]) -> None:
    """The bundle tail written directly for engine-built types is byte for byte the JSON
    of the general form, diagnostics changed one field at a time too."""
    bundles = [make_bundle(**change)] + [
        make_bundle(**change, diagnostics={field: value})
        for field, value in DIAGNOSTICS_CHANGES.items()]
    for bundle in bundles:
        assert hashing._fast_tail(bundle.__dict__) == _general_tail(bundle)
        assert hashing._bundle_tail(bundle) == _general_tail(bundle)


def test_the_tail_of_unexpected_types_takes_the_general_form() -> None:
    """Values of other types than the engine builds (a subclass, a numpy scalar, a
    non-finite weight) are left to the general form."""
    import numpy as np

    class Count(int):
        pass

    base = make_bundle()

    def diagnostics(**update: Any) -> RetrievedBundle:
        return base.model_copy(update={"diagnostics": base.diagnostics.model_copy(
            update=update)})

    odd = [  # copies are not validated: the values keep their types
        base.model_copy(update={"total_tokens": Count(24)}),
        diagnostics(scoring_breakdown=[
            ScoreComponent.model_construct(key="importance", weight=np.float64(0.5))]),
        diagnostics(budget=np.int64(500)),
    ]
    for bundle in odd:
        assert hashing._fast_tail(bundle.__dict__) is None
        assert hashing._bundle_tail(bundle) == _general_tail(bundle)
    nan = diagnostics(scoring_breakdown=[
        ScoreComponent.model_construct(key="importance", weight=float("nan"))])
    assert hashing._fast_tail(nan.__dict__) is None  # validation never lets one through


def _general_record(record: MemoryRecord) -> str:
    return hashing._encode(hashing._record_form(record.__dict__))


@pytest.mark.parametrize("change", [
    {}, *({field: value} for field, value in RECORD_CHANGES.items() if field != "hash"),
    {"hash": "0" * 64},
    {"id": 'npc-"\u00e9:0000000001', "content": 'quote " and \u00e9'},
    {"metadata": RecordMetadata(tags=("well", 'a "quoted" tag', "caf\u00e9"), flagged=True)},
    {"metadata": RecordMetadata(tags=())},
    {"ttl": 0, "tokens_estimate": None, "importance": 0.0},
    {"importance": 1.0}, {"importance": 0.123456789},
])
def test_the_written_record_is_the_encoded_form(change: dict[str, Any]) -> None:
    """A record written directly (the engine's types, no sparse metadata) is byte for byte
    the JSON of the general form, one field changed at a time, odd characters included."""
    record = make_record(1, **{"hash": "f" * 64, **change})
    assert hashing._fast_record(record.__dict__) == _general_record(record)
    again = make_record(2, **{"hash": "f" * 64, **change})  # tags' text from the memo
    assert hashing._fast_record(again.__dict__) == _general_record(again)


@settings(max_examples=300, deadline=None)
@given(
    rid=st.text(min_size=1, max_size=30), content=st.text(min_size=1, max_size=60),
    layer=st.sampled_from(list(MemoryLayer)),
    ref=st.none() | st.text(max_size=20), digest=st.text(min_size=1, max_size=70),
    created=st.integers(0, 2**62), anchor=st.integers(0, 2**62),
    ttl=st.none() | st.integers(1, 2**62), tokens=st.none() | st.integers(0, 10**6),
    importance=st.floats(0.0, 1.0), redacted=st.booleans(), flagged=st.booleans(),
    tags=st.lists(st.text(min_size=1, max_size=12), max_size=4, unique=True),
)
def test_any_record_is_written_as_the_encoded_form(
        rid: str, content: str, layer: MemoryLayer, ref: str | None, digest: str,
        created: int, anchor: int, ttl: int | None, tokens: int | None, importance: float,
        redacted: bool, flagged: bool, tags: list[str]) -> None:
    """Whatever the ids, texts (any Unicode, quotes, control characters), times and
    importance, the written form is the general form's text, and so its digest."""
    record = MemoryRecord.model_construct(
        id=rid, layer=layer, agent_id="a", created_at=created, importance=importance,
        recency_anchor=anchor, ttl=ttl, embedding_ref=ref, tokens_estimate=tokens,
        content=content, metadata=RecordMetadata(tags=tuple(tags), flagged=flagged),
        redacted=redacted, hash=digest)
    assert hashing._fast_record(record.__dict__) == _general_record(record)


def test_a_record_of_other_types_or_sparse_metadata_takes_the_general_form() -> None:
    """Sparse metadata, a missing content hash, a subclass or a numpy scalar (a copy is not
    validated) are left to the general form; the digest is the same either way."""
    import numpy as np

    class Tick(int):
        pass

    base = make_record(1, hash="f" * 64)
    odd = [base.model_copy(update={"hash": None}),
           base.model_copy(update={"created_at": Tick(1_000)}),
           base.model_copy(update={"importance": np.float64(0.5)}),
           base.model_copy(update={"ttl": True}),
           base.model_copy(update={"layer": ["episodic"]}),
           base.model_copy(update={"metadata": RecordMetadata.model_construct(
               tags=(["well"],), flagged=False, attributes={}, source_event=None,
               source_ref_ids=(), spatial=None, social=None, procedural=None)}),
           base.model_copy(update={"metadata": RecordMetadata.model_construct(
               tags=["well"], flagged=False, attributes={}, source_event=None,
               source_ref_ids=(), spatial=None, social=None, procedural=None)}),
           *(base.model_copy(update={"metadata": RecordMetadata(**{field: value})})
             for field, value in METADATA_CHANGES.items() if field not in ("tags", "flagged"))]
    for record in odd:
        assert hashing._fast_record(record.__dict__) is None
        assert hashing.record_digest(record) == hashlib.sha256(
            _general_record(record).encode("ascii")).digest()
    plain_layer = base.model_copy(update={"layer": "episodic"})  # a str equal to the enum
    assert hashing._fast_record(plain_layer.__dict__) == _general_record(plain_layer)


def test_engine_records_are_written_as_the_encoded_form() -> None:
    """Every record the village plays hands out (layers, tags, flags, TTLs, compressed
    copies under pressure) that takes the written form gives the general form's bytes."""
    from f09_memory.determinism.scenario import Village

    engine = MemoryEngine(MemoryConfig(), seed=3)
    village = Village(6, 3)
    written = total = 0
    for tick in range(100):
        for bundle in village(engine, tick):
            for record in bundle.records:
                total += 1
                text = hashing._fast_record(record.__dict__)
                if text is not None:
                    written += 1
                    assert text == _general_record(record)
    assert written > total * 0.8  # the common case is the written one


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_a_bundle_with_a_number_that_is_not_finite_is_refused_with_the_taxonomy(
        bad: float) -> None:
    from f09_memory.determinism.hashing import BundleHasher, record_digest
    from f09_memory.errors import ErrorCode, InputInvalidError

    base = make_bundle()
    weight = base.model_copy(update={"diagnostics": base.diagnostics.model_copy(update={
        "scoring_breakdown": [ScoreComponent.model_construct(key="importance", weight=bad)]})})
    record = base.records[0].model_copy(update={"importance": bad})
    importance = base.model_copy(update={"records": [record]})
    for bundle, field in ((weight, "scoring_breakdown.weight"), (importance, "importance")):
        for hash_of in (bundle_hash, BundleHasher()):
            with pytest.raises(InputInvalidError) as info:
                hash_of(bundle)
            assert info.value.code == ErrorCode.MEMORY_INPUT_INVALID
            assert info.value.details["field"] == field
    with pytest.raises(InputInvalidError):
        record_digest(record)
    assert len(bundle_hash(base)) == 64  # the finite bundle still hashes


def test_engine_bundles_tails_are_the_encoded_form() -> None:
    """Every pressure, strategy and query case the village plays."""
    from f09_memory.determinism.scenario import Village

    engine = MemoryEngine(MemoryConfig(), seed=3)
    village = Village(6, 3)
    for tick in range(0, 100, 3):
        for bundle in village(engine, tick):
            assert hashing._fast_tail(bundle.__dict__) == _general_tail(bundle)
    query = engine.retrieve(RetrievalRequest(agent_id="npc-001", purpose="dialog",
                                             max_tokens=200, query="the well"), now=engine.now)
    assert hashing._fast_tail(query.__dict__) == _general_tail(query)
