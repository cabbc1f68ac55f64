"""Semantic retrieval (index 8 with 6 and 7): the 384-d semantic term, HNSW preselection on a
100,000-record agent, and retrieval quality on the hand-labeled sets.

Goals: 2,000 candidates with the semantic term p95 <= 0.8 ms; 100k records with HNSW
preselection and its exact completion p95 <= 5 ms, its bundles those of full scoring
(overlap >= 0.99). CI enforces the spec's retrieval bound (p95 < 10 ms, QG4). On the
paraphrase set (no query shares a content word with its answers) MiniLM's recall@5 with the
semantic strategy must reach 0.85 (issue 16); the hashing embedder's is reported beside it.
``F09_BENCH_SHORT=1`` uses a 20,000-record agent for the preselection benchmark. With the
default config the engine preselects only where that saves work
(``semantic_preselect_min_ratio``): at 100k records it does, at 20k it scores every candidate
(faster there), so the spec is checked on what a host gets; the always-preselected path is
reported beside it, and the overlap with full scoring is measured on it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from targets import SHORT, record, rounds, timings_ms

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, RetrievedBundle, Strategy
from f09_memory.evaluation import evaluate_retrieval, pure_weights_config
from f09_memory.retrieval.preselect import preselection_depth

sys.path.insert(0, str(Path(__file__).parent))
from bench_retrieval import engine_with

LARGE = 20_000 if SHORT else 100_000
LABELED = Path(__file__).parents[1] / "tests" / "data" / "retrieval_quality.json"
PARAPHRASES = Path(__file__).parents[1] / "tests" / "data" / "paraphrase_retrieval.json"
LATENCY_QUERIES = ["fish and boats on the river", "the smith's debt in gold",
                   "wolves in the forest", "bread and ale at the tavern"]


def test_retrieve_2k_with_semantic_term(benchmark) -> None:
    benchmark.group = "semantic"
    engine = engine_with(2_000)
    request = RetrievalRequest(agent_id="npc", purpose="reasoning", max_tokens=1800,
                               strategy="semantic", query="the king's sword by the river")
    bundle = benchmark.pedantic(engine.retrieve, args=(request,), kwargs={"now": 30_000},
                                rounds=rounds(2_000, 400), iterations=1, warmup_rounds=20)
    assert bundle.diagnostics.semantic_fallback is None
    ms = timings_ms(benchmark)
    record("retrieve 2k cand + 384-d semantic, p50", np.percentile(ms, 50), "ms", spec=5.0,
           goal=None)
    record("retrieve 2k cand + 384-d semantic, p95", np.percentile(ms, 95), "ms", spec=10.0,
           goal=0.8)


def _large_agent(min_ratio: int | None) -> MemoryEngine:
    rng = np.random.default_rng(5)
    words = ("grain wheat barley river boat fish net sword shield arrow bow king queen "
             "tavern ale bread smith forge iron gold debt wolf forest road bridge").split()
    ratio = {} if min_ratio is None else {"semantic_preselect_min_ratio": min_ratio}
    engine = MemoryEngine(MemoryConfig(episodic_max=LARGE, exact_index_max=10_000, **ratio),
                          seed=1)
    batch = 5_000
    for start in range(0, LARGE, batch):
        engine.ingest_many("npc", [{"content": " ".join(rng.choice(words, 10)) + ".",
                                    "importance": round(float(rng.random()), 3)}
                                   for _ in range(batch)], now=start)
    engine.tick(LARGE)  # unbounded tick: builds the HNSW index
    return engine


@pytest.fixture(scope="module")
def large_agent() -> MemoryEngine:
    """One agent of ``LARGE`` records and its HNSW index, the default config: preselection
    where it saves work (at 100k and an 1,800-token budget; at 20k every candidate is scored,
    which is faster there)."""
    return _large_agent(None)


@pytest.fixture(scope="module")
def preselecting_agent() -> MemoryEngine:
    """The same agent, always preselected (``semantic_preselect_min_ratio=0``)."""
    return _large_agent(0)


def _latency_queries(engine: MemoryEngine) -> Callable[[], RetrievedBundle]:
    """One retrieval per call, the latency queries in turn (1,800 tokens, semantic)."""
    it = iter(range(10**9))

    def run() -> RetrievedBundle:
        q = LATENCY_QUERIES[next(it) % len(LATENCY_QUERIES)]
        return engine.retrieve(RetrievalRequest(
            agent_id="npc", purpose="reasoning", max_tokens=1800, strategy="semantic",
            query=q), now=LARGE + 1)

    return run


def test_retrieve_large_agent_with_hnsw_index(benchmark, large_agent) -> None:
    benchmark.group = "semantic"
    run = _latency_queries(large_agent)
    # 300 rounds in short mode too (about 2 s): a p95 of 100 is the 5th-slowest call, which a
    # few stalls of a shared machine move by milliseconds; of 300 it is the 15th.
    bundle = benchmark.pedantic(run, rounds=rounds(400, 300), iterations=1, warmup_rounds=4)
    assert LARGE == bundle.diagnostics.candidate_count
    ms = timings_ms(benchmark)
    am = large_agent._state.store.get("npc")
    assert am is not None and am.index is not None
    request = RetrievalRequest(agent_id="npc", purpose="reasoning", max_tokens=1800,
                               strategy="semantic", query=LATENCY_QUERIES[0])
    slots = np.arange(am.hi, dtype=np.intp)
    how = ("HNSW preselect" if preselection_depth(large_agent.config, am, am.index, slots,
                                                 request) is not None else "all scored")
    record(f"retrieve {LARGE // 1000}k records, HNSW index ({how}), p95",
           np.percentile(ms, 95), "ms", spec=10.0, goal=5.0)


def test_retrieve_large_agent_always_preselected(benchmark, preselecting_agent) -> None:
    """The preselection path itself at ``LARGE`` records (reported, the spec checked above)."""
    benchmark.group = "semantic"
    benchmark.pedantic(_latency_queries(preselecting_agent), rounds=rounds(400, 100),
                       iterations=1, warmup_rounds=4)
    ms = timings_ms(benchmark)
    record(f"retrieve {LARGE // 1000}k records, always preselected, p95",
           np.percentile(ms, 95), "ms", spec=None, goal=5.0)


def test_quality_on_the_labeled_set(benchmark) -> None:
    benchmark.group = "semantic"
    labeled = json.loads(LABELED.read_text())
    hybrid = benchmark.pedantic(
        lambda: evaluate_retrieval(labeled, "hybrid (semantic strategy, hashing embedder)",
                                   MemoryEngine, strategy=Strategy.SEMANTIC),
        rounds=1, iterations=1)
    balanced = evaluate_retrieval(labeled, "hybrid (balanced strategy)", MemoryEngine)
    recency = evaluate_retrieval(labeled, "recency only", lambda: MemoryEngine(
        pure_weights_config("recency")), with_query=False)
    importance = evaluate_retrieval(labeled, "importance only", lambda: MemoryEngine(
        pure_weights_config("importance")), with_query=False)
    for rep in (hybrid, balanced, recency, importance):
        record(f"recall@5 {rep.name}", rep.recall_at_k, "", spec=None, goal=None,
               higher_is_better=True)
        record(f"MRR {rep.name}", rep.mrr, "", spec=None, goal=None, higher_is_better=True)
    assert hybrid.recall_at_k > max(recency.recall_at_k, importance.recall_at_k)


def test_quality_on_paraphrases_minilm_beside_hashing(benchmark, minilm) -> None:
    benchmark.group = "semantic"
    labeled = json.loads(PARAPHRASES.read_text())
    model = benchmark.pedantic(
        lambda: evaluate_retrieval(labeled, "paraphrases, semantic strategy, MiniLM",
                                   lambda: MemoryEngine(embedder=minilm),
                                   strategy=Strategy.SEMANTIC),
        rounds=1, iterations=1)
    hashing = evaluate_retrieval(labeled, "paraphrases, semantic strategy, hashing",
                                 MemoryEngine, strategy=Strategy.SEMANTIC)
    record(f"recall@5 {hashing.name}", hashing.recall_at_k, "", spec=None, goal=None,
           higher_is_better=True)
    record(f"recall@5 {model.name}", model.recall_at_k, "", spec=0.85, goal=0.9,
           higher_is_better=True)
    record(f"MRR {model.name}", model.mrr, "", spec=None, goal=None, higher_is_better=True)


def test_preselection_overlap_with_full_scoring(benchmark, preselecting_agent) -> None:
    """Issue target: the preselected bundle equals full scoring (overlap >= 0.99)."""
    benchmark.group = "semantic"
    large_agent = preselecting_agent
    am = large_agent._state.store.get("npc")
    assert am is not None and am.index is not None
    rng = np.random.default_rng(11)
    words = ["fish", "boats", "river", "smith", "debt", "gold", "wolves", "forest", "bread",
             "ale", "tavern", "storm", "king", "mill"]
    requests = [RetrievalRequest(agent_id="npc", purpose="reasoning",
                                 max_tokens=int(rng.choice([400, 1800])),
                                 strategy=str(rng.choice(["semantic", "balanced"])),
                                 query=" ".join(rng.choice(words, 3))) for _ in range(20)]
    requests += [RetrievalRequest(agent_id="npc", purpose="reasoning", max_tokens=1800,
                                  strategy="semantic", query=q) for q in LATENCY_QUERIES]
    pre = benchmark.pedantic(lambda: [large_agent.retrieve(r, now=LARGE + 1)
                                      for r in requests], rounds=1, iterations=1)
    index, am.index = am.index, None  # no index: every candidate is scored
    try:
        full = [large_agent.retrieve(r, now=LARGE + 1) for r in requests]
    finally:
        am.index = index
    overlaps = [len({r.id for r in a.records} & {r.id for r in b.records}) / len(b.records)
                for a, b in zip(pre, full, strict=True)]
    same = sum([r.id for r in a.records] == [r.id for r in b.records]
               for a, b in zip(pre, full, strict=True))
    size = f"{LARGE // 1000}k HNSW"
    record(f"preselected vs full bundle overlap, {size}, mean of {len(requests)} queries",
           float(np.mean(overlaps)), "", spec=0.9, goal=0.99, higher_is_better=True)
    record(f"preselected vs full bundle overlap, {size}, worst query",
           min(overlaps), "", spec=None, goal=0.99, higher_is_better=True)
    record(f"preselected bundles identical to full scoring, {size}", same / len(requests),
           "", spec=None, goal=1.0, higher_is_better=True)
