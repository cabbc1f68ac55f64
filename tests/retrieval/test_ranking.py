from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from f09_memory.packing import pack_sequential
from f09_memory.retrieval.ranking import rank_and_pack


def full_reference(q: np.ndarray, keys: np.ndarray, tokens: np.ndarray, budget: int):
    order = np.lexsort((keys, -q))
    chosen, total, truncated = pack_sequential(tokens[order], budget)
    return order[chosen].tolist(), total, truncated


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 3_000), budget=st.integers(1, 4_000), seed=st.integers(0, 10**6),
       levels=st.sampled_from([3, 50, 10**9]), max_tok=st.sampled_from([3, 30, 400]))
def test_partial_ranking_packs_exactly_like_the_full_sort(
    n: int, budget: int, seed: int, levels: int, max_tok: int
) -> None:
    rng = np.random.default_rng(seed)
    q = rng.integers(0, levels, n).astype(np.int64)  # few levels => many ties
    keys = rng.permutation(n * 3)[:n].astype(np.int64)
    tokens = rng.integers(1, max_tok + 1, n).astype(np.int64)
    got = rank_and_pack(q, keys, tokens, budget)
    assert full_reference(q, keys, tokens, budget) == (got[0].tolist(), got[1], got[2])


def test_large_candidate_set_with_small_budget_uses_the_prefix() -> None:
    n = 5_000
    q = np.arange(n, dtype=np.int64)
    keys = np.arange(n, dtype=np.int64)
    tokens = np.full(n, 10, dtype=np.int64)
    positions, total, truncated = rank_and_pack(q, keys, tokens, 100)
    assert list(range(n - 1, n - 11, -1)) == positions.tolist()
    assert (100, True) == (total, truncated)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 2_000), budget=st.integers(1, 4_000), seed=st.integers(0, 10**6),
       levels=st.sampled_from([3, 50, 10**9]), max_tok=st.sampled_from([1, 3, 30, 400]),
       limit=st.one_of(st.none(), st.integers(1, 300)),
       hint=st.one_of(st.none(), st.floats(0.5, 500)))
def test_limit_and_mean_hint_keep_the_full_sort_result(
    n: int, budget: int, seed: int, levels: int, max_tok: int, limit: int | None,
    hint: float | None,
) -> None:
    rng = np.random.default_rng(seed)
    q = rng.integers(0, levels, n).astype(np.int64)
    keys = rng.permutation(n * 3)[:n].astype(np.int64)
    tokens = rng.integers(1, max_tok + 1, n).astype(np.int64)
    ids, total, truncated = full_reference(q, keys, tokens, budget)
    if limit is not None and len(ids) > limit:
        ids = ids[:limit]
        total, truncated = int(tokens[ids].sum()), True
    got = rank_and_pack(q, keys, tokens, budget, limit, hint)
    assert (ids, total, truncated) == (got[0].tolist(), got[1], got[2])
