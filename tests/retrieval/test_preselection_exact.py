"""Preselection never changes answers: the preselected bundle equals full scoring."""

from __future__ import annotations

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, bundle_hash

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
    cfg = {"semantic_preselect_threshold": 500, "semantic_preselect_k": 32,
           "exact_index_max": exact_max}
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
