"""Stable ordering plus packing, without sorting candidates that cannot be packed.

The full order is ``(quantized score desc, key asc)``. Sorting all n candidates costs
O(n log n) (about 0.1 ms at n = 2,000); a bundle rarely holds more than a few hundred. So
the top-K by score (K from the budget and the mean record size) are partitioned out in
O(n), every candidate tied with the K-th score is added, and only that prefix is sorted.
That prefix is *exactly* the start of the full order. Packing goes on after it with the
budget left, which only shrinks, so of the later candidates only those that fit what is
left are ordered and packed. The result is therefore identical to the full sort.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from f09_memory.packing.packer import pack_sequential

__all__ = ["FULL_SORT_BELOW", "rank_and_pack"]

FULL_SORT_BELOW = 128
"""Candidate sets smaller than this are simply sorted in full."""
PREFIX_MIN = 64
"""The smallest prefix partitioned out (the first guess of how many records pack)."""


def _limited(order: NDArray[np.intp], chosen: NDArray[np.intp], total: int, truncated: bool,
             tokens: NDArray[np.int64], limit: int | None) -> tuple[NDArray[np.intp], int, bool]:
    """The first ``limit`` packed candidates (greedy packing in order makes this exact)."""
    if limit is not None and chosen.shape[0] > limit:
        chosen = chosen[:limit]
        return order[chosen], int(tokens[order[chosen]].sum()), True
    return order[chosen], total, truncated


def _full(q: NDArray[np.int64], keys: NDArray[np.int64], tokens: NDArray[np.int64],
          budget: int, limit: int | None) -> tuple[NDArray[np.intp], int, bool]:
    order = np.lexsort((keys, -q))
    chosen, total, truncated = pack_sequential(tokens[order], budget)
    return _limited(order, chosen, total, truncated, tokens, limit)


def rank_and_pack(
    q: NDArray[np.int64], keys: NDArray[np.int64], tokens: NDArray[np.int64], budget: int,
    limit: int | None = None, mean_tokens: float | None = None,
) -> tuple[NDArray[np.intp], int, bool]:
    """Order candidates by ``(q desc, key asc)`` and pack them under ``budget``.

    Args:
        q: Quantized scores.
        keys: Record keys (unique; the tie-break).
        tokens: Token cost of each candidate.
        budget: Token budget.
        limit: At most this many records (the first ones packed); ``None`` for no cap.
        mean_tokens: The candidates' mean token cost when the caller has it (a hint that
            only sizes the first prefix; the result does not depend on it).

    Returns:
        ``(positions, total_tokens, truncated)``: positions into the inputs of the packed
        candidates, in order; ``truncated`` when any candidate was left out.
    """
    n = int(q.shape[0])
    if n < FULL_SORT_BELOW:
        return _full(q, keys, tokens, budget, limit)
    mean = max(1.0, float(tokens.mean()) if mean_tokens is None else mean_tokens)
    k = min(n, max(PREFIX_MIN, int(min(2.0 * budget / mean, 2**40))))
    if limit is not None:
        k = min(k, max(limit, 1))
    if k >= n // 2:
        return _full(q, keys, tokens, budget, limit)
    neg = -q
    part = np.argpartition(neg, k - 1)
    threshold = neg[part[k - 1]]
    prefix = np.flatnonzero(neg <= threshold)  # the top k plus every tie with the k-th
    order = prefix[np.lexsort((keys[prefix], neg[prefix]))]
    chosen, total, truncated = pack_sequential(tokens[order], budget)
    if limit is not None and chosen.shape[0] >= limit:  # the first `limit` are final
        return _limited(order, chosen, total, truncated or prefix.shape[0] < n, tokens, limit)
    picked = order[chosen]
    remaining = budget - total
    if prefix.shape[0] < n:
        # Packing goes on after the prefix with what is left; the room only shrinks, so a
        # later candidate larger than it can never be packed: order only those that fit.
        later = neg > threshold
        later &= tokens <= remaining
        rest = np.flatnonzero(later)
        if rest.shape[0]:
            rest = rest[np.lexsort((keys[rest], neg[rest]))]
            more, extra, _ = pack_sequential(tokens[rest], remaining)
            picked = np.concatenate((picked, rest[more]))
            total += extra
        if limit is not None and picked.shape[0] > limit:
            picked = picked[:limit]
            total = int(tokens[picked].sum())
    return picked, total, picked.shape[0] < n
