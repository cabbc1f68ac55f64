"""Preselection never changes answers: the preselected bundle equals full scoring."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, bundle_hash
from f09_memory.errors import MemoryEngineError
from f09_memory.retrieval.completion import Completion
from f09_memory.vector_index import ExactIndex, HnswIndex

LABELED = Path(__file__).parents[1] / "data" / "retrieval_quality.json"
WORDS = ("smith well gold debt market guard fire bread river king queen sword horse tavern "
         "mill chapel rain storm harvest festival wolf bridge lantern cellar").split()


def build(n: int, seed: int, **cfg: object) -> MemoryEngine:
    rng = np.random.default_rng(seed)
    engine = MemoryEngine(MemoryConfig(episodic_max=n, **cfg), seed=seed)  # type: ignore[arg-type]
    items = [{"content": " ".join(rng.choice(WORDS, int(rng.integers(2, 14)))),
              "importance": round(float(rng.random()), 3),
              "flagged": bool(rng.random() < 0.01)} for _ in range(n)]
    for k in range(0, n, 1_000):
        engine.ingest_many("npc", items[k:k + 1_000], now=k)
    engine.tick(n + 1)  # builds the index (unbounded budget)
    return engine


@pytest.mark.parametrize(("kind", "exact_max"), [("exact", 100_000), ("hnsw", 1_000)])
def test_preselected_bundles_equal_full_scoring(kind: str, exact_max: int) -> None:
    cfg = {"semantic_preselect_threshold": 500, "semantic_preselect_min_ratio": 0,
           "semantic_preselect_k": 32, "exact_index_max": exact_max}
    pre = build(3_000, 3, **cfg)
    full = build(3_000, 3, **{**cfg, "semantic_preselect_threshold": 10**9})
    am = pre._state.store.get("npc")
    assert am is not None and am.index is not None
    assert (kind == "hnsw") == (type(am.index).__name__ == "HnswIndex")
    same = total = 0
    for i, strategy in enumerate(["semantic", "balanced", "recency", "importance"] * 3):
        request = RetrievalRequest(agent_id="npc", purpose="reasoning", strategy=strategy,
                                   max_tokens=[60, 400, 1800][i % 3],
                                   query=f"{WORDS[i]} {WORDS[-i - 1]}",
                                   limit=20 if i % 4 == 3 else None)
        a = pre.retrieve(request, now=5_000)
        b = full.retrieve(request, now=5_000)
        ids_a, ids_b = [r.id for r in a.records], [r.id for r in b.records]
        total += len(ids_b)
        same += len(set(ids_a) & set(ids_b))
        if kind == "exact":
            assert ids_b == ids_a and a.total_tokens == b.total_tokens
            assert a.diagnostics.candidate_count == b.diagnostics.candidate_count
    assert same / total >= 0.99
    # the crowd path takes the same route for preselected agents
    request = RetrievalRequest(agent_id="npc", purpose="dialog", max_tokens=400, query="wolf")
    assert bundle_hash(pre.retrieve(request, now=5_000)) == bundle_hash(
        pre.retrieve_many([request], now=5_000)[0])


def requests_for_20k() -> list[RetrievalRequest]:
    rng = np.random.default_rng(17)
    out = []
    for i in range(24):
        strategy = ["semantic", "balanced", "recency", "importance"][i % 4]
        out.append(RetrievalRequest(
            agent_id="npc", purpose="reasoning", strategy=strategy,
            max_tokens=[60, 400, 1800][i % 3], limit=25 if i % 5 == 4 else None,
            query=" ".join(rng.choice(WORDS, int(rng.integers(1, 4))))))
    return out


def assert_equal_to_full_scoring(engine: MemoryEngine, requests: list[RetrievalRequest],
                                 now: int) -> None:
    """Every preselected bundle equals the one scoring every candidate (index removed)."""
    am = engine._state.store.get("npc")
    assert am is not None and am.index is not None
    pre = [engine.retrieve(r, now=now) for r in requests]
    index, am.index = am.index, None
    try:
        full = [engine.retrieve(r, now=now) for r in requests]
    finally:
        am.index = index
    assert [[r.id for r in b.records] for b in full] == [[r.id for r in b.records] for b in pre]
    assert [bundle_hash(b) for b in full] == [bundle_hash(b) for b in pre]


def test_preselection_equals_full_scoring_on_a_seeded_20k_hnsw_agent() -> None:
    engine = build(20_000, 7, exact_index_max=5_000, semantic_preselect_min_ratio=0)
    assert type(engine._state.store.get("npc").index).__name__ == "HnswIndex"  # type: ignore[union-attr]
    assert_equal_to_full_scoring(engine, requests_for_20k(), now=21_000)


@pytest.mark.parametrize(("k", "k_max"), [(4, 4), (4, 256)])
def test_a_loose_similarity_bound_still_gives_full_scoring(k: int, k_max: int) -> None:
    # a tiny first search leaves a loose bound on 20k records, as K = 128 does on 100k:
    # the completion scores thousands of left-out records, or deepens the search
    engine = build(20_000, 8, exact_index_max=100_000, semantic_preselect_k=k,
                   semantic_preselect_k_max=k_max, semantic_preselect_min_ratio=0)
    assert_equal_to_full_scoring(engine, requests_for_20k(), now=21_000)


@pytest.mark.parametrize("kind", ["exact", "hnsw"])
def test_preselection_equals_full_scoring_on_the_labeled_set(
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    labeled = json.loads(LABELED.read_text())
    cfg = {"semantic_preselect_threshold": 1, "semantic_preselect_min_ratio": 0,
           "semantic_preselect_k": 1, "exact_index_max": 10**6 if kind == "exact" else 4}
    last = max(int(m["minute"]) for ms in labeled["agents"].values() for m in ms)
    now = (last + 10) * 60_000

    def load(**extra: object) -> MemoryEngine:
        engine = MemoryEngine(MemoryConfig(**{**cfg, **extra}))  # type: ignore[arg-type]
        for agent, memories in labeled["agents"].items():
            for m in memories:
                engine.ingest(agent, m["content"], importance=float(m["importance"]),
                              now=int(m["minute"]) * 60_000)
        engine.tick(now)  # builds the indexes
        return engine

    pre, full = load(), load(semantic_preselect_threshold=10**9)
    completions = []
    run = Completion.run
    monkeypatch.setattr(Completion, "run", lambda self, *a, **kw: completions.append(1) or run(
        self, *a, **kw))
    for q in labeled["queries"]:
        for strategy in ("semantic", "balanced"):
            for max_tokens in (12, 40, 120, 4_000):
                request = RetrievalRequest(agent_id=q["agent"], purpose="reasoning",
                                           strategy=strategy, max_tokens=max_tokens,
                                           query=q["query"])
                assert bundle_hash(full.retrieve(request, now=now)) == bundle_hash(
                    pre.retrieve(request, now=now))
    assert len(completions) >= len(labeled["queries"]) * 4  # the small budgets preselect


@pytest.mark.parametrize(("kind", "exact_max", "limit", "preselects"), [
    ("exact", 100_000, 1, False),  # an exact index's search scans every vector: never
    ("hnsw", 300, 100, False),  # depth 400: 3,000 candidates are fewer than 48 x 400
    ("hnsw", 300, 1, True),  # depth 4: 3,000 >= 48 x 4
])
def test_preselection_is_used_only_where_it_saves_work(
        kind: str, exact_max: int, limit: int, preselects: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = {"semantic_preselect_threshold": 500, "semantic_preselect_k": 1,
           "exact_index_max": exact_max}
    searches: list[int] = []
    for index_type in (ExactIndex, HnswIndex):
        monkeypatch.setattr(index_type, "search", _counted(index_type.search, searches))
    pre = build(3_000, 4, **cfg)
    full = build(3_000, 4, **{**cfg, "semantic_preselect_threshold": 10**9})
    am = pre._state.store.get("npc")
    assert am is not None
    # only an index that preselection can read is built: none below exact_index_max
    assert (kind == "hnsw") == isinstance(am.index, HnswIndex)
    assert (kind == "exact") == (am.index is None)
    request = RetrievalRequest(agent_id="npc", purpose="reasoning", max_tokens=1_800,
                               strategy="semantic", limit=limit, query="gold debt at the mill")
    got = pre.retrieve(request, now=3_001)
    assert bool(searches) is preselects
    assert bundle_hash(got) == bundle_hash(full.retrieve(request, now=3_001))
    # 0 turns the rule off: an index of either kind is built, and the same request
    # preselects from it
    searches.clear()
    always = build(3_000, 4, **{**cfg, "semantic_preselect_min_ratio": 0})
    kept = always._state.store.get("npc")
    assert kept is not None and kept.index is not None
    assert bundle_hash(always.retrieve(request, now=3_001)) == bundle_hash(got)
    assert searches


def _counted(search: Callable[..., Any], calls: list[int]) -> Callable[..., Any]:
    def counted(self: object, q: object, k: int, allowed: object = None) -> Any:
        calls.append(k)
        return search(self, q, k, allowed)
    return counted


def test_a_negative_preselect_ratio_is_refused() -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig(semantic_preselect_min_ratio=-1)
    assert info.value.code.value == "MEMORY_CONFIG_INVALID"
    assert "semantic_preselect_min_ratio" in info.value.message
