"""Sequential packing under a token budget (spec section 9, step 4)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["pack_sequential"]

_PYTHON_BELOW = 256


def pack_sequential(tokens: NDArray[np.int64], budget: int) -> tuple[NDArray[np.intp], int, bool]:
    """Choose records in the given (score) order while they fit the budget.

    Walks the candidates in order and takes each one that still fits; a record too large
    for what is left is skipped (and marks the bundle ``truncated``) and packing goes on
    with the next, so one oversized memory cannot starve the rest. The result keeps score
    order.

    Args:
        tokens: Token cost of each candidate, in score order (non-negative).
        budget: Token budget (> 0).

    Returns:
        ``(positions, total_tokens, truncated)``: positions into ``tokens`` that were taken.

    Runtime complexity: O(n * s) numpy work where s is the number of skip points (usually
    0 to 3); no per-candidate Python loop.
    """
    n = int(tokens.shape[0])
    if n == 0:
        return np.zeros(0, dtype=np.intp), 0, False
    if n <= _PYTHON_BELOW:  # a plain loop beats numpy's per-call cost on short inputs
        taken: list[int] = []
        left = budget
        for i, cost in enumerate(tokens.tolist()):
            if cost <= left:
                taken.append(i)
                left -= cost
        return np.asarray(taken, dtype=np.intp), budget - left, len(taken) < n
    pieces: list[NDArray[np.intp]] = []
    remaining = budget
    pos = 0
    truncated = False
    while pos < n:
        csum = np.cumsum(tokens[pos:])
        k = int(np.searchsorted(csum, remaining, side="right"))
        if k:
            pieces.append(np.arange(pos, pos + k, dtype=np.intp))
            remaining -= int(csum[k - 1])
            pos += k
        if pos >= n:
            break
        truncated = True
        fits = np.flatnonzero(tokens[pos:] <= remaining)
        if fits.shape[0] == 0:
            break
        pos += int(fits[0])
    if pos < n:
        truncated = True
    chosen = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.intp)
    return chosen, budget - remaining, truncated
