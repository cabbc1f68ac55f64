"""The similarity memo: a repeated query's term equals a fresh product, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, bundle_hash
from f09_memory.embedding import HashingEmbedder
from f09_memory.retrieval.similarity import (
    SimilarityMemo,
    exact_similarities,
    remembered_similarities,
)
from f09_memory.store.agent import AgentMemory
from f09_memory.testing import FakeEmbedder

DIM = 16
WORDS = ["wolf", "river", "mill", "bread", "smith", "forge", "rain", "ford", "oak", "debt"]


def _engine(**config: object) -> MemoryEngine:
    return MemoryEngine(MemoryConfig(embedding_dim=DIM, **config), seed=1,  # type: ignore[arg-type]
                        embedder=HashingEmbedder(DIM, seed=1))


def _candidates(am: AgentMemory) -> np.ndarray:
    return np.flatnonzero(am.alive[: am.hi]).astype(np.intp)


def _check(am: AgentMemory, q: np.ndarray) -> None:
    slots = _candidates(am)
    got = remembered_similarities(am, slots, q)
    assert exact_similarities(am, slots, q, ascending=True).tobytes() == got.tobytes()


def test_a_repeated_query_reuses_values_and_computes_only_changed_slots() -> None:
    engine = _engine()
    engine.ingest_many("a", [f"{w} by the {v}" for w in WORDS for v in WORDS[:3]], now=1)
    am = engine._state.store.get("a")
    assert am is not None and am.sims_memo is None
    q = HashingEmbedder(DIM, seed=1).embed(["the wolf at the river"])[0]
    _check(am, q)
    memo = am.sims_memo
    assert isinstance(memo, SimilarityMemo) and memo.query == q.tobytes()
    kept = memo.revs.copy()
    engine.ingest("a", "a new wolf by the ford", now=2)
    _check(am, q)
    assert kept.shape == memo.revs.shape  # no growth: the same memo arrays
    changed = np.flatnonzero(memo.revs != kept)
    assert [am.hi - 1] == changed.tolist()  # only the new record was computed
    assert am.sims_memo is memo


def test_every_kind_of_change_keeps_the_term_exact() -> None:
    """Seeded stress: ingest, repeats (dedup), updates, forgets, growth, a second query."""
    rng = np.random.default_rng(7)
    engine = _engine(dedup_window_ms=50, episodic_max=60)
    embed = HashingEmbedder(DIM, seed=1).embed
    queries = [embed([q])[0] for q in ("wolves by the river", "the smith's debt")]
    now = 1
    for step in range(120):
        now += 10
        op = int(rng.integers(0, 6))
        if op <= 2:  # new records and repeats (dedup reinforces: a rev moves, no vector)
            texts = [" ".join(rng.choice(WORDS, 3)) for _ in range(int(rng.integers(1, 9)))]
            engine.ingest_many("a", texts, now=now)
        elif op == 3 and engine.records("a"):  # a content update drops the vector
            record = engine.records("a")[int(rng.integers(0, len(engine.records("a"))))]
            engine.update(record.id, content=" ".join(rng.choice(WORDS, 4)))
        elif op == 4 and engine.records("a"):  # a freed slot, reused by a later ingest
            engine.forget([engine.records("a")[0].id])
        else:
            engine.tick(now)  # re-embeds updated records
        am = engine._state.store.get("a")
        if am is not None and am.live and am.vectors is not None:
            _check(am, queries[step % 3 == 0])  # two queries take turns with the memo


def test_a_new_embedder_and_a_load_start_afresh(tmp_path: object) -> None:
    engine = _engine()
    engine.ingest_many("a", [f"{w} near the mill" for w in WORDS], now=1)
    request = RetrievalRequest(agent_id="a", purpose="reasoning", max_tokens=200,
                               query="a wolf near the mill", strategy="semantic")
    first = engine.retrieve(request, now=5)
    assert bundle_hash(first) == bundle_hash(engine.retrieve(request, now=5))
    am = engine._state.store.get("a")
    assert am is not None and am.sims_memo is not None
    engine.set_embedder(FakeEmbedder(DIM, version="fake-v2"))
    engine.tick(10)  # re-embedded with the new provider: other vectors, another query
    after = engine.retrieve(request, now=10)
    fresh = MemoryEngine(MemoryConfig(embedding_dim=DIM), seed=1,
                         embedder=FakeEmbedder(DIM, version="fake-v2"))
    fresh.ingest_many("a", [f"{w} near the mill" for w in WORDS], now=1)
    fresh.tick(10)
    assert [r.content for r in fresh.retrieve(request, now=10).records] == [
        r.content for r in after.records]
    path = str(tmp_path) + "/saved.f09"  # type: ignore[operator]
    engine.save(path)
    loaded = MemoryEngine.load(path, embedder=FakeEmbedder(DIM, version="fake-v2"))
    am2 = loaded._state.store.get("a")
    assert am2 is not None and am2.sims_memo is None  # not state
    assert bundle_hash(after) == bundle_hash(loaded.retrieve(request, now=10))


@pytest.mark.parametrize("agents", [1, 30])
def test_crowd_bundles_with_repeated_queries_equal_first_time_bundles(agents: int) -> None:
    ids = [f"npc-{i:02d}" for i in range(agents)]
    requests = [RetrievalRequest(agent_id=a, purpose="dialog", max_tokens=120,
                                 query=f"{WORDS[i % 10]} {WORDS[(i * 3) % 10]}")
                for i, a in enumerate(ids)]
    warm, cold = _engine(), None
    for step in range(6):
        items = [{"agent_id": a, "content": f"{WORDS[(i + step) % 10]} at {step}"}
                 for i, a in enumerate(ids)]
        warm.ingest_batch(items, now=step + 1)
        got = [bundle_hash(b) for b in warm.retrieve_many(requests, now=step + 1)]
        cold = _engine()  # the same history, retrieved for the first time (no memo)
        for s in range(step + 1):
            cold.ingest_batch([{"agent_id": a, "content": f"{WORDS[(i + s) % 10]} at {s}"}
                               for i, a in enumerate(ids)], now=s + 1)
        assert [bundle_hash(b) for b in cold.retrieve_many(requests, now=step + 1)] == got
    assert cold is not None and warm.state_hash() == cold.state_hash()
