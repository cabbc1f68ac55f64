from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from f09_memory.packing import HeuristicTokenCounter, estimate_total, pack_sequential
from f09_memory.packing.packer import pack_rows


def arr(*xs: int) -> np.ndarray:
    return np.array(xs, dtype=np.int64)


def test_everything_fits() -> None:
    pos, total, truncated = pack_sequential(arr(5, 5), 100)
    assert ([0, 1], 10, False) == (pos.tolist(), total, truncated)


def test_oversized_record_is_skipped_and_packing_goes_on() -> None:
    pos, total, truncated = pack_sequential(arr(5, 50, 3, 3, 40, 1), 12)
    assert ([0, 2, 3, 5], 12, True) == (pos.tolist(), total, truncated)


def test_exact_fit_is_not_truncated_and_overflow_is() -> None:
    assert ([0, 1], 10, False) == (lambda r: (r[0].tolist(), r[1], r[2]))(
        pack_sequential(arr(4, 6), 10))
    assert ([0], 4, True) == (lambda r: (r[0].tolist(), r[1], r[2]))(
        pack_sequential(arr(4, 7), 10))


def test_empty_and_nothing_fits() -> None:
    assert ([], 0, False) == (lambda r: (r[0].tolist(), r[1], r[2]))(pack_sequential(arr(), 5))
    assert ([], 0, True) == (lambda r: (r[0].tolist(), r[1], r[2]))(pack_sequential(arr(9), 5))


@given(st.lists(st.integers(0, 60), max_size=60), st.integers(1, 400))
def test_packing_is_the_greedy_first_fit_in_order(tokens: list[int], budget: int) -> None:
    pos, total, truncated = pack_sequential(np.array(tokens, dtype=np.int64), budget)
    # reference: walk in order, take whatever still fits
    expect, left = [], budget
    for i, t in enumerate(tokens):
        if t <= left:
            expect.append(i)
            left -= t
    chosen = pos.tolist()
    assert sorted(chosen) == chosen
    assert total == sum(tokens[i] for i in chosen) <= budget
    assert truncated == (len(chosen) < len(tokens))
    assert expect == chosen


def test_token_estimate() -> None:
    c = HeuristicTokenCounter(4.0)
    assert (0, 1, 1, 2) == (c.count(""), c.count("a"), c.count("abcd"), c.count("abcde"))
    assert 3 == estimate_total(c, ["a", "abcde"])


@given(st.lists(st.text(max_size=300), max_size=40),
       st.sampled_from([0.75, 1.0, 3.3, 4.0, 7.5]))
def test_count_many_equals_count_of_each_text(texts: list[str], chars_per_token: float) -> None:
    counter = HeuristicTokenCounter(chars_per_token)
    assert [counter.count(t) for t in texts] == counter.count_many(texts)


@given(st.lists(st.tuples(st.lists(st.integers(0, 60), max_size=40), st.integers(1, 400),
                          st.integers(0, 50)), max_size=8))
def test_rows_pack_like_pack_sequential_each(rows: list[tuple[list[int], int, int]]) -> None:
    width = max((len(t) for t, _, _ in rows), default=0)
    tokens = np.full((len(rows), width), 99, dtype=np.int64)  # padding is never packed
    for r, (t, _, _) in enumerate(rows):
        tokens[r, :len(t)] = t
    widths = np.array([len(t) for t, _, _ in rows], dtype=np.int64)
    budgets = np.array([b for _, b, _ in rows], dtype=np.int64)
    limits = np.array([lim for _, _, lim in rows], dtype=np.int64)
    taken, counts, left = pack_rows(tokens, widths, budgets, limits)
    for r, (t, budget, limit) in enumerate(rows):
        pos, _, _ = pack_sequential(np.array(t, dtype=np.int64), budget)
        expect = pos.tolist()[:limit]
        assert expect == np.flatnonzero(taken[r]).tolist()
        assert (len(expect), budget - sum(t[i] for i in expect)) == (counts[r], left[r])
