from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from f09_memory.packing import pack_sequential
from f09_memory.retrieval.ranking import NO_LIMIT, full_order, rank_and_pack, rank_and_pack_many


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


@settings(max_examples=60, deadline=None)
@given(n=st.sampled_from([0, 1, 255, 256, 2_000]), seed=st.integers(0, 10**6),
       levels=st.sampled_from([3, 10**9, 2**62]), spread=st.sampled_from([1, 2**40]))
def test_the_full_order_is_score_desc_then_key_whatever_the_sort_used(
    n: int, seed: int, levels: int, spread: int
) -> None:
    rng = np.random.default_rng(seed)
    q = rng.integers(-levels // 2, levels // 2, n, dtype=np.int64)  # wide ranges: lexsort
    keys = rng.permutation(n).astype(np.int64) * spread
    assert full_order(q, keys).tolist() == np.lexsort((keys, -q)).tolist()


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


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.sampled_from([0, 1, 5, 60, 127, 128, 400, 2_500]), max_size=8),
       seed=st.integers(0, 10**6), levels=st.sampled_from([3, 50, 10**9]),
       max_tok=st.sampled_from([1, 3, 30, 400]), wide_keys=st.booleans())
def test_many_lists_pack_each_like_rank_and_pack(
    sizes: list[int], seed: int, levels: int, max_tok: int, wide_keys: bool
) -> None:
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    q = rng.integers(0, levels, n).astype(np.int64)
    spread = 2**52 if wide_keys else 3  # keys this far apart take the lexsort path
    keys = np.concatenate([rng.permutation(s).astype(np.int64) * spread + rng.integers(0, 3)
                           for s in sizes] or [np.zeros(0)]).astype(np.int64)
    tokens = rng.integers(0, max_tok + 1, n).astype(np.int32)
    budgets = rng.integers(1, 4_000, len(sizes)).astype(np.int64)
    limits = np.array([NO_LIMIT if rng.random() < 0.5 else int(rng.integers(1, 300))
                       for _ in sizes], dtype=np.int64)
    bounds = np.concatenate(([0], np.cumsum(sizes))).astype(np.intp)
    picked, counts, totals = rank_and_pack_many(q, keys, tokens, bounds, budgets, limits)
    assert picked.shape[0] == int(counts.sum())
    at = 0
    for g, (a, b) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)):
        limit = None if limits[g] == NO_LIMIT else int(limits[g])
        ids, total, truncated = rank_and_pack(q[a:b], keys[a:b], tokens[a:b].astype(np.int64),
                                              int(budgets[g]), limit)
        got = (picked[at:at + counts[g]] - a).tolist()
        at += int(counts[g])
        assert (ids.tolist(), total, truncated) == (got, int(totals[g]), bool(counts[g] < b - a))
