"""The semantic term: embeddings at ingest, failures, re-embedding, preselection, quality."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, Strategy, bundle_hash
from f09_memory.embedding import HashingEmbedder, NullEmbedder
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.evaluation import evaluate_retrieval, pure_weights_config
from f09_memory.testing import FailingEmbedder, FakeEmbedder, capture_events
from f09_memory.vector_index import ExactIndex, HnswIndex

LABELED = json.loads((Path(__file__).parents[1] / "data" / "retrieval_quality.json").read_text())


def req(query: str | None = None, strategy: str = "semantic", **kw: object) -> RetrievalRequest:
    return RetrievalRequest(agent_id="a", purpose="reasoning", max_tokens=kw.pop(  # type: ignore[arg-type]
        "max_tokens", 1800), strategy=strategy, query=query, **kw)


def village(engine: MemoryEngine) -> None:
    for i, text in enumerate([
        "The smith owes the miller three silver coins.",
        "Wolves were seen near the river at dusk.",
        "The festival starts next week in the square.",
        "Bread prices went up at the bakery.",
    ]):
        engine.ingest("a", text, importance=0.5, now=i)


def test_default_engine_embeds_with_the_hashing_embedder() -> None:
    engine = MemoryEngine()
    rec = engine.ingest("a", "hello world", now=0)
    assert isinstance(engine.embedder, HashingEmbedder)
    assert engine.embedder.version == rec.embedding_ref


def test_query_brings_the_similar_memory_first() -> None:
    engine = MemoryEngine()
    village(engine)
    bundle = engine.retrieve(req("who owes the miller money? the smith's debt"), now=10)
    assert "The smith owes the miller three silver coins." == bundle.records[0].content
    assert bundle.diagnostics.semantic_fallback is None
    weights = {c.key: c.weight for c in bundle.diagnostics.scoring_breakdown}
    assert weights["semantic"] > 0.5


def test_null_embedder_takes_the_fallback_path() -> None:
    engine = MemoryEngine(embedder=NullEmbedder())
    village(engine)
    bundle = engine.retrieve(req("wolves"), now=10)
    assert "MEMORY_EMBEDDING_UNAVAILABLE" == bundle.diagnostics.semantic_fallback
    assert 4 == len(bundle.records)
    assert all(r.embedding_ref is None for r in bundle.records)


def test_embedding_failure_keeps_the_record_and_retries_at_tick() -> None:
    embedder = FailingEmbedder(dim=16, failures=1)
    engine = MemoryEngine(MemoryConfig(embedding_dim=16), embedder=embedder)
    with capture_events(engine.bus, "memory:embedding:failed") as log:
        rec = engine.ingest("a", "the bridge collapsed", now=0)
    assert rec.embedding_ref is None and rec == engine.get(rec.id)
    (ev,) = log.events
    assert (rec.id,) == ev.record_ids
    assert ev.reason.startswith(ErrorCode.MEMORY_EMBEDDING_FAILED.value)
    report = engine.tick(1)
    assert 1 == report.embedded
    assert "fake-v1" == engine.get(rec.id).embedding_ref
    engine._check()


def test_failure_during_retry_is_reported_and_retried_again() -> None:
    embedder = FailingEmbedder(dim=16, failures=2)
    engine = MemoryEngine(MemoryConfig(embedding_dim=16), embedder=embedder)
    engine.ingest("a", "x", now=0)
    with capture_events(engine.bus, "memory:embedding:failed") as log:
        assert 0 == engine.tick(1).embedded
    assert 1 == len(log.events)
    assert 1 == engine.tick(2).embedded


def test_provider_failing_on_the_query_degrades_to_the_fallback_path() -> None:
    embedder = FakeEmbedder(16)
    engine = MemoryEngine(MemoryConfig(embedding_dim=16), embedder=embedder)
    village(engine)
    engine.set_embedder(FailingEmbedder(dim=16, failures=10))
    bundle = engine.retrieve(req("wolves"), now=10)
    assert "MEMORY_EMBEDDING_FAILED" == bundle.diagnostics.semantic_fallback
    assert 4 == len(bundle.records)


def test_new_embedder_version_re_embeds_in_bounded_slices() -> None:
    engine = MemoryEngine(MemoryConfig(embedding_dim=16, work_units_per_ms=10_000,
                                       tick_costs={"embed": 1_000, "tick": 1_000,
                                                   "agent": 80}),
                          embedder=FakeEmbedder(16, "v1"))
    engine.ingest_many("a", [f"memory {i}" for i in range(25)], now=0)
    engine.set_embedder(FakeEmbedder(16, "v2"))
    # 10,000 units per tick: the fixed cost takes 1,080, so 8 texts of 1,000 units fit
    reports = [engine.tick(t, budget_ms=1.0) for t in range(1, 5)]
    assert [8, 8, 8, 1] == [r.embedded for r in reports]
    assert all(r.used_units <= 10_000 for r in reports)
    assert {"v2"} == {r.embedding_ref for r in engine.records("a")}
    engine._check()


def test_a_text_costing_more_than_the_budget_is_still_re_embedded_one_per_tick() -> None:
    engine = MemoryEngine(MemoryConfig(embedding_dim=16, tick_costs={"embed": 1_000_000}),
                          embedder=FakeEmbedder(16, "v1"))
    engine.ingest_many("a", [f"memory {i}" for i in range(3)], now=0)
    engine.set_embedder(FakeEmbedder(16, "v2"))
    reports = [engine.tick(t, budget_ms=2.0) for t in range(1, 5)]  # 400,000 units a tick
    assert [1, 1, 1, 0] == [r.embedded for r in reports]
    assert [2, 1, 0, 0] == [r.backlog.embedding_retries for r in reports]
    assert {"v2"} == {r.embedding_ref for r in engine.records("a")}
    engine._check()


def test_same_version_embedder_swap_keeps_vectors() -> None:
    engine = MemoryEngine(MemoryConfig(embedding_dim=16), embedder=FakeEmbedder(16, "v1"))
    engine.ingest("a", "x", now=0)
    engine.set_embedder(FakeEmbedder(16, "v1"))
    assert 0 == engine.tick(1).embedded


def test_explicit_query_vectors_form_the_centroid() -> None:
    embedder = FakeEmbedder(16)
    engine = MemoryEngine(MemoryConfig(embedding_dim=16), embedder=embedder)
    village(engine)
    target = embedder.embed(["Wolves were seen near the river at dusk."])
    bundle = engine.retrieve(req(), now=10, query_vectors=target)
    assert "Wolves were seen near the river at dusk." == bundle.records[0].content


def test_float32_query_vectors_are_read_not_copied_nor_written() -> None:
    embedder = FakeEmbedder(16)
    engine = MemoryEngine(MemoryConfig(embedding_dim=16), embedder=embedder)
    village(engine)
    given = embedder.embed(["Bread prices went up at the bakery."])[0] * np.float32(3.0)
    kept = given.copy()
    bundle = engine.retrieve(req(), now=10, query_vectors=given)
    assert np.array_equal(kept, given)  # the unit copy is the engine's own
    assert "Bread prices went up at the bakery." == bundle.records[0].content
    wide = engine.retrieve(req(), now=10, query_vectors=given.astype(np.float64))
    assert bundle_hash(bundle) == bundle_hash(wide)  # the same values, the same bundle


def test_exact_similarities_of_every_slot_in_order_equal_the_gathered_ones() -> None:
    from f09_memory.retrieval.similarity import exact_similarities

    engine = MemoryEngine(MemoryConfig(embedding_dim=16), embedder=FakeEmbedder(16))
    village(engine)
    engine.forget([engine.records("a")[1].id])  # a free slot inside [0, hi)
    am = engine._state.store.get("a")
    assert am is not None
    q = FakeEmbedder(16).embed(["wolves by the river"])[0]
    every = np.arange(am.hi)
    fast = exact_similarities(am, every, q, ascending=True)
    assert fast.tobytes() == exact_similarities(am, every, q).tobytes()
    backwards = exact_similarities(am, every[::-1].copy(), q)  # not ascending: gathered
    assert backwards.tobytes() == fast[::-1].tobytes()
    assert 0.0 == fast[1]  # the freed slot is not embedded


@pytest.mark.parametrize("bad", [
    np.zeros((2, 3)), np.full((1, 16), np.nan), np.zeros((1, 2, 16)),
    np.full(16, np.inf, dtype=np.float32), np.full((1, 16), np.nan, dtype=np.float32)])
def test_bad_query_vectors_raise_input_invalid(bad: np.ndarray) -> None:
    engine = MemoryEngine(MemoryConfig(embedding_dim=16), embedder=FakeEmbedder(16))
    village(engine)
    before = engine.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        engine.retrieve(req(), now=10, query_vectors=bad)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert before == engine.state_hash()


def test_bad_embedder_is_rejected() -> None:
    with pytest.raises(MemoryEngineError):
        MemoryEngine(embedder=object())  # type: ignore[arg-type]


def big_engine(n: int = 400, **config: object) -> MemoryEngine:
    cfg = MemoryConfig(episodic_max=1_000, semantic_preselect_threshold=100,
                       semantic_preselect_min_ratio=0, exact_index_max=250,
                       semantic_preselect_k=20, embedding_dim=64, **config)
    engine = MemoryEngine(cfg, seed=3)
    rng = np.random.default_rng(0)
    words = "grain wheat barley river boat fish net sword shield arrow bow".split()
    engine.ingest_many("a", [{"content": " ".join(rng.choice(words, 6)),
                              "importance": 0.1} for _ in range(n)], now=0)
    return engine


def test_large_agents_build_an_index_in_slices_and_migrate_to_hnsw() -> None:
    engine = big_engine(200, tick_costs={"index_insert_exact": 1_000}, work_units_per_ms=50_000)
    am = engine._state.store.get("a")
    assert am is not None and am.index is None
    engine.tick(1, budget_ms=1.0)  # 50 inserts per ms of budget, minus decay work
    assert am.index is None and am.index_build is not None
    while am.index is None:
        engine.tick(engine.now + 1, budget_ms=1.0)
    assert isinstance(am.index, ExactIndex) and 200 == len(am.index)
    engine.ingest_many("a", [f"more grain {i}" for i in range(100)], now=engine.now)
    engine.tick(engine.now + 1)
    assert isinstance(am.index, HnswIndex) and 300 == len(am.index)
    engine._check()


def test_preselection_never_misses_a_vital_dissimilar_memory() -> None:
    engine = big_engine()
    engine.tick(1)
    vital = engine.ingest("a", "The queen is hiding in the chapel crypt.", importance=1.0,
                          now=1)
    bundle = engine.retrieve(req("fish in the river by the boat", strategy="balanced"), now=2)
    ids = [r.id for r in bundle.records]
    assert vital.id in ids[:5]
    assert 401 == bundle.diagnostics.candidate_count


def test_preselected_retrieval_is_deterministic() -> None:
    a, b = big_engine(), big_engine()
    a.tick(1)
    b.tick(1)
    ra = a.retrieve(req("sword and shield"), now=2)
    rb = b.retrieve(req("sword and shield"), now=2)
    assert bundle_hash(ra) == bundle_hash(rb)


def test_hybrid_beats_recency_and_importance_baselines_on_the_labeled_set() -> None:
    hybrid = evaluate_retrieval(LABELED, "hybrid", MemoryEngine, strategy=Strategy.SEMANTIC)
    recency = evaluate_retrieval(LABELED, "recency", lambda: MemoryEngine(
        pure_weights_config("recency")), with_query=False)
    importance = evaluate_retrieval(LABELED, "importance", lambda: MemoryEngine(
        pure_weights_config("importance")), with_query=False)
    assert 17 == hybrid.queries
    assert hybrid.recall_at_k > max(recency.recall_at_k, importance.recall_at_k) + 0.3
    assert hybrid.mrr > max(recency.mrr, importance.mrr) + 0.3


def test_retrieve_many_serves_a_preselected_agent_like_retrieve_with_one_search() -> None:
    engine = big_engine()
    engine.ingest_many("b", ["a boat on the river", "a sword and a shield"], now=0)
    engine.tick(1)  # builds the large agent's index: it is preselected from now on
    searches = []
    am = engine._state.store.get("a")
    assert am is not None and am.index is not None
    search = am.index.search

    def counted(*args: object, **kwargs: object) -> object:
        searches.append(1)
        return search(*args, **kwargs)  # type: ignore[arg-type]

    am.index.search = counted  # type: ignore[method-assign]
    frame = [req("fish by the river"),
             RetrievalRequest(agent_id="b", purpose="reasoning", max_tokens=1800,
                              strategy="semantic", query="sword")]
    one_by_one = [engine.retrieve(r, now=2) for r in frame]
    alone = len(searches)
    crowd = engine.retrieve_many(frame, now=2)
    assert [bundle_hash(b) for b in crowd] == [bundle_hash(b) for b in one_by_one]
    assert alone >= 1 and len(searches) - alone == alone  # no second search in the crowd
