"""Vector index search (index 7): ExactIndex at 2,000 x 384, HnswIndex at 100,000 x 384.

Set ``F09_BENCH_SHORT=1`` to build the HNSW index over 20,000 points instead of 100,000 (the
100k single-threaded deterministic build takes minutes). Recall@10 of HNSW against exact
search is printed and stored in ``extra_info``.
"""

import itertools
import os

import numpy as np
import pytest
from targets import record, timings_ms

from f09_memory.vector_index import ExactIndex, HnswIndex, recall_at_k

DIM = 384
EXACT_N = 2_000
HNSW_N = 20_000 if os.environ.get("F09_BENCH_SHORT") == "1" else 100_000
QUERIES = 200


def clustered(n: int, dim: int, clusters: int, seed: int, spread: float = 0.35):
    """Return ``(points, rng)``: ``n`` float32 points around ``clusters`` random centers."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, dim)).astype(np.float32)
    labels = rng.integers(0, clusters, size=n)
    points = centers[labels]
    points += spread * rng.standard_normal((n, dim)).astype(np.float32)
    return points, rng


def _queries(points: np.ndarray, rng: np.random.Generator, count: int) -> np.ndarray:
    picks = rng.integers(0, points.shape[0], size=count)
    noise = 0.1 * rng.standard_normal((count, points.shape[1])).astype(np.float32)
    return (points[picks] + noise).astype(np.float32)


@pytest.fixture(scope="module")
def exact_2000():
    points, rng = clustered(EXACT_N, DIM, 20, seed=11)
    index = ExactIndex(DIM)
    index.add(np.arange(EXACT_N, dtype=np.int64), points)
    return index, _queries(points, rng, QUERIES)


@pytest.fixture(scope="module")
def hnsw_large():
    points, rng = clustered(HNSW_N, DIM, 200, seed=12)
    keys = np.arange(HNSW_N, dtype=np.int64)
    index = HnswIndex(DIM, m=16, ef_construction=200, ef=64, seed=0, initial_capacity=HNSW_N)
    for start in range(0, HNSW_N, 10_000):
        index.add(keys[start : start + 10_000], points[start : start + 10_000])
    exact = ExactIndex(DIM, initial_capacity=HNSW_N)
    exact.add(keys, points)
    queries = _queries(points, rng, QUERIES)
    recalls = [recall_at_k(index.search(q, 10)[0], exact.search(q, 10)[0]) for q in queries]
    return index, exact, queries, float(np.mean(recalls))


def _report(benchmark, label: str) -> None:
    stats = benchmark.stats.stats
    mean, median = stats.mean * 1e6, stats.median * 1e6
    print(f"\n[bench] {label}: mean {mean:,.0f} us, median {median:,.0f} us")


def test_exact_search_top10_2000x384(benchmark, exact_2000):
    benchmark.group = "vector_index"
    index, queries = exact_2000
    cycle = itertools.cycle(queries)
    keys, _ = benchmark(lambda: index.search(next(cycle), 10))
    assert len(keys) == 10
    _report(benchmark, f"ExactIndex search k=10 over {EXACT_N}x{DIM}")


def test_exact_search_top10_2000x384_allowed_256(benchmark, exact_2000):
    benchmark.group = "vector_index"
    index, queries = exact_2000
    allowed = np.arange(0, EXACT_N, EXACT_N // 256, dtype=np.int64)[:256]
    cycle = itertools.cycle(queries)
    keys, _ = benchmark(lambda: index.search(next(cycle), 10, allowed=allowed))
    assert set(keys.tolist()) <= set(allowed.tolist())
    _report(benchmark, f"ExactIndex search k=10 over {EXACT_N}x{DIM}, 256 allowed")


def test_hnsw_search_top10_clustered(benchmark, hnsw_large):
    benchmark.group = "vector_index"
    index, _, queries, recall = hnsw_large
    benchmark.extra_info["recall_at_10"] = recall
    benchmark.extra_info["points"] = HNSW_N
    cycle = itertools.cycle(queries)
    keys, _ = benchmark(lambda: index.search(next(cycle), 10))
    assert len(keys) == 10
    _report(benchmark, f"HnswIndex search k=10 over {HNSW_N}x{DIM} (ef=64)")
    print(f"[bench] HnswIndex recall@10 vs exact over {QUERIES} queries: {recall:.4f}")
    record(f"HNSW recall@10 vs exact, {HNSW_N} pts", recall, "", spec=0.95, goal=0.95,
           higher_is_better=True)
    ms = timings_ms(benchmark)
    record(f"HNSW search k=10 over {HNSW_N}x{DIM}, p95", np.percentile(ms, 95), "ms",
           spec=10.0, goal=None)


def test_exact_search_top10_at_hnsw_size_for_comparison(benchmark, hnsw_large):
    benchmark.group = "vector_index"
    _, exact, queries, _ = hnsw_large
    cycle = itertools.cycle(queries)
    keys, _ = benchmark.pedantic(lambda: exact.search(next(cycle), 10), rounds=30, iterations=1)
    assert len(keys) == 10
    _report(benchmark, f"ExactIndex search k=10 over {HNSW_N}x{DIM}")
