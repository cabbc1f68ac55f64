"""Spec section 19's validation list, plus the rest of the retrieval contract."""

from __future__ import annotations

import pytest

from f09_memory import (
    MemoryConfig,
    MemoryEngine,
    PressureState,
    RetrievalRequest,
    bundle_hash,
)
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.testing import capture_events


def req(agent: str = "a", purpose: str = "reasoning", max_tokens: int = 1800,
        **kw: object) -> RetrievalRequest:
    return RetrievalRequest(agent_id=agent, purpose=purpose, max_tokens=max_tokens, **kw)  # type: ignore[arg-type]


def populated(n: int = 60, **config: object) -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(**config))
    for i in range(n):
        engine.ingest("a", f"Event number {i} happened near the old mill. More detail follows "
                      f"here for the record.", importance=(i * 37 % 100) / 100, now=i * 10,
                      tags=[f"t{i % 3}"])
    return engine


def test_identical_state_gives_identical_ordering_and_hash() -> None:
    a, b = populated(), populated()
    ba, bb = a.retrieve(req(), now=2_000), b.retrieve(req(), now=2_000)
    assert [r.id for r in ba.records] == [r.id for r in bb.records]
    assert bundle_hash(ba) == bundle_hash(bb)
    assert bundle_hash(ba) == bundle_hash(a.retrieve(req(), now=2_000))


def test_ties_break_by_id_ascending() -> None:
    engine = MemoryEngine()
    for _ in range(5):
        engine.ingest("a", "same", importance=0.5, now=100)
    ids = [r.id for r in engine.retrieve(req(), now=100).records]
    assert sorted(ids) == ids


def test_records_are_in_score_order() -> None:
    engine = MemoryEngine()
    engine.ingest("a", "low", importance=0.1, now=100)
    engine.ingest("a", "high", importance=0.9, now=100)
    engine.ingest("a", "mid", importance=0.5, now=100)
    assert ["high", "mid", "low"] == [
        r.content for r in engine.retrieve(req(strategy="importance"), now=100).records]


def test_exceeding_the_budget_sets_truncated() -> None:
    engine = populated()
    full = engine.retrieve(req(max_tokens=1800), now=2_000)
    small = engine.retrieve(req(max_tokens=50), now=2_000)
    assert not full.truncated and 60 == len(full.records)
    assert small.truncated
    assert small.total_tokens <= 50
    assert sum(r.tokens_estimate or 0 for r in small.records) == small.total_tokens


def test_budget_is_clamped_to_max_context_tokens() -> None:
    engine = populated(max_context_tokens=100)
    bundle = engine.retrieve(req(max_tokens=5_000), now=2_000)
    assert 100 == bundle.diagnostics.budget
    assert bundle.total_tokens <= 100 and bundle.truncated


def test_throttle_reduces_total_tokens_and_compresses_to_first_sentence_and_tags() -> None:
    engine = populated()
    normal = engine.retrieve(req(), now=2_000)
    engine.set_pressure("throttle")
    throttled = engine.retrieve(req(), now=2_000)
    assert throttled.total_tokens < normal.total_tokens
    assert throttled.diagnostics.compression_applied
    assert not normal.diagnostics.compression_applied
    first = throttled.records[0]
    original = engine.get(first.id)
    assert first.content.startswith(original.content.split(". ")[0][:10])
    assert "More detail follows" not in first.content
    bound = -(-(original.tokens_estimate or 0) * 55 // 100)
    assert (first.tokens_estimate or 0) <= bound
    # the stored record is untouched
    assert "More detail follows" in original.content


def test_request_pressure_overrides_engine_pressure() -> None:
    engine = populated()
    bundle = engine.retrieve(req(pressure_state="throttle"), now=2_000)
    assert bundle.diagnostics.compression_applied
    assert "throttle" == bundle.diagnostics.pressure_state


def test_exhausted_halves_the_budget_and_compresses() -> None:
    engine = populated()
    engine.set_pressure("exhausted")
    bundle = engine.retrieve(req(max_tokens=400), now=2_000)
    assert 200 == bundle.diagnostics.budget
    assert bundle.total_tokens <= 200 and bundle.diagnostics.compression_applied


def test_empty_candidate_set_returns_no_records_without_error() -> None:
    engine = MemoryEngine()
    bundle = engine.retrieve(req(agent="nobody"), now=0)
    assert ([], 0, False) == (bundle.records, bundle.total_tokens, bundle.truncated)
    assert 0 == bundle.diagnostics.candidate_count


def test_all_records_expired_gives_empty_bundle_without_error() -> None:
    engine = MemoryEngine()
    for i in range(5):
        engine.ingest("a", f"short-lived {i}", ttl=10, now=0)
    assert [] == engine.retrieve(req(), now=10).records  # expired, not yet collected
    engine.tick(20)
    bundle = engine.retrieve(req(), now=20)
    assert [] == bundle.records and 0 == bundle.diagnostics.candidate_count


def test_flagged_record_lands_in_the_top_positions() -> None:
    engine = populated()
    # importance >= 1/importance_boost (0.4): the boosted term beats every unflagged record
    flagged = engine.ingest("a", "The king is secretly ill.", importance=0.45, flagged=True,
                            now=0)
    plain = engine.ingest("a", "The king is secretly tired.", importance=0.45, now=0)
    ids = [r.id for r in engine.retrieve(req(), now=2_000).records]
    assert flagged.id == ids[0]
    assert ids.index(plain.id) > 10


def test_layer_policy_of_the_purpose_filters_candidates() -> None:
    engine = MemoryEngine()
    engine.ingest("a", "went north", layer="spatial", metadata={"spatial": {"x": 1, "y": 2}},
                  now=0)
    engine.ingest("a", "likes bread", layer="social", now=0)
    nav = engine.retrieve(req(purpose="navigation"), now=0)
    dialog = engine.retrieve(req(purpose="dialog"), now=0)
    assert ["went north"] == [r.content for r in nav.records]
    assert ["likes bread"] == [r.content for r in dialog.records]
    assert (1, 1) == (nav.diagnostics.candidate_count, nav.diagnostics.filtered_count)


def test_weights_come_from_config_and_semantic_weight_is_redistributed() -> None:
    engine = populated()
    d = engine.retrieve(req(purpose="dialog"), now=2_000).diagnostics
    weights = {c.key: c.weight for c in d.scoring_breakdown}
    assert 0.0 == weights["semantic"]
    assert pytest.approx(1.0) == sum(weights.values())
    base = MemoryConfig().scoring.weights["dialog"]["balanced"]  # type: ignore[index]
    expected_iw = base.importance / (base.importance + base.recency + base.structural)
    assert pytest.approx(expected_iw, abs=1e-9) == weights["importance"]
    assert "NO_QUERY" == d.semantic_fallback  # the default embedder needs a query
    without = MemoryEngine(embedder=None)
    without.ingest("a", "x", now=0)
    d2 = without.retrieve(req(purpose="dialog", query="x"), now=0).diagnostics
    assert "MEMORY_EMBEDDING_UNAVAILABLE" == d2.semantic_fallback
    assert 0.0 == {c.key: c.weight for c in d2.scoring_breakdown}["semantic"]


def test_recency_strategy_prefers_recent_records() -> None:
    engine = MemoryEngine()
    engine.ingest("a", "old but vital", importance=1.0, now=0)
    engine.ingest("a", "new and trivial", importance=0.0, now=7_200_000)
    by_recency = engine.retrieve(req(strategy="recency"), now=7_200_000).records
    by_importance = engine.retrieve(req(strategy="importance"), now=7_200_000).records
    assert "new and trivial" == by_recency[0].content
    assert "old but vital" == by_importance[0].content


def test_retrieval_event_carries_the_spec_payload() -> None:
    engine = populated(10)
    with capture_events(engine.bus, "memory:retrieval") as log:
        bundle = engine.retrieve(req(max_tokens=40), now=2_000)
    (ev,) = log.events
    payload = ev.to_dict()
    # The spec's fields, plus compressionApplied and the measured timeMs (metrics only).
    assert bundle.diagnostics.time_ms == payload.pop("timeMs") > 0
    assert {"agentId": "a", "purpose": "reasoning", "candidateCount": 10, "used": 1,
            "truncated": True, "pressureState": "normal",
            "compressionApplied": False} == payload


def test_missing_budget_raises_token_budget_undefined() -> None:
    engine = populated(3)
    before = engine.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        engine.retrieve(RetrievalRequest(agent_id="a", purpose="dialog"), now=0)
    assert ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED == info.value.code
    with pytest.raises(MemoryEngineError) as info2:
        engine.retrieve({"agentId": "a", "purpose": "dialog", "maxTokens": -1}, now=0)
    assert ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED == info2.value.code
    assert before == engine.state_hash()


def test_retrieve_many_serves_each_request_in_order_and_validates_first() -> None:
    engine = populated(10)
    engine.ingest("b", "b's memory", now=0)
    bundles = engine.retrieve_many([req("a"), {"agentId": "b", "purpose": "dialog",
                                               "maxTokens": 100}], now=2_000)
    assert [10, 1] == [len(b.records) for b in bundles]
    bad = [req("a"), RetrievalRequest(agent_id="b", purpose="dialog")]
    with capture_events(engine.bus, "memory:retrieval") as log, pytest.raises(MemoryEngineError):
        engine.retrieve_many(bad)
    assert [] == list(log.events)


def test_time_ms_is_measured_but_not_hashed() -> None:
    engine = populated(10)
    b1 = engine.retrieve(req(), now=2_000)
    b2 = engine.retrieve(req(), now=2_000)
    assert b1.diagnostics.time_ms >= 0.0
    assert bundle_hash(b1) == bundle_hash(b2)


def test_compressed_records_are_reused_while_unchanged_and_equal_compress_record() -> None:
    from f09_memory.compression.strategies import compress_record

    engine = MemoryEngine(MemoryConfig(), embedder=None)
    for i in range(6):  # two records share a text: compressed once, copied per record
        engine.ingest("a", f"Saw the smith at the well {i % 5}. It rained all day.",
                      tags=["well"], now=i)
    engine.set_pressure("throttle")
    request = RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=400)
    first = engine.retrieve(request, now=10)
    again = engine.retrieve_many([request], now=10)[0]
    assert all(a is b for a, b in zip(first.records, again.records, strict=True))
    profile = engine.config.scoring.pressure[PressureState.THROTTLE]
    ratio = profile.compression_ratio or engine.config.throttle_compression_ratio
    for record in first.records:
        expected = compress_record(engine.get(record.id), strategy=profile.compression_strategy,
                                   ratio=ratio, counter=engine.counter,
                                   drop_metadata=profile.drop_metadata)
        assert expected == record
