"""The deterministic result order of every vector index.

Similarities are quantized to integers (``rint(sim * quantum)``) and results are ordered by
quantized similarity descending, then key ascending: a complete key, so equal scores can
never come out in an order that depends on memory layout, insertion history or hash seeds.
``DEFAULT_QUANTUM`` and ``quantize`` are :mod:`f09_memory.canonical`'s, re-exported here.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from f09_memory.canonical import DEFAULT_QUANTUM, quantize
from f09_memory.errors import ConfigInvalidError

__all__ = ["DEFAULT_QUANTUM", "check_quantum", "quantize", "rank_top_k"]


def check_quantum(quantum: object) -> int:
    """Check a quantum value.

    Args:
        quantum: Similarities are rounded to multiples of ``1 / quantum``.

    Returns:
        ``quantum`` as an int.

    Raises:
        ConfigInvalidError: Not an int in ``1 ..= 10**15``.

    """
    if (
        isinstance(quantum, bool)
        or not isinstance(quantum, int | np.integer)
        or not 1 <= int(quantum) <= 10**15
    ):
        raise ConfigInvalidError(
            f"quantum must be an int in 1..1e15, got {quantum!r}",
            details={"field": "quantum", "value": repr(quantum)},
        )
    return int(quantum)


def rank_top_k(
    keys: NDArray[np.int64], sims: NDArray[np.floating], k: int, quantum: int
) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """Select the top ``k`` and order them: quantized similarity desc, then key asc.

    Everything tied with the k-th quantized score is considered before cutting, so which
    keys make the cut is decided by key order too, never by ``argpartition``'s internals.

    Runtime complexity: ``O(n + c log c)`` where ``c`` is ``k`` plus the ties at the cut.

    Args:
        keys: Candidate keys (distinct).
        sims: Their similarities, same length.
        k: Most results to return.
        quantum: Similarity quantum.

    Returns:
        ``(keys, sims)``: int64 keys and float32 similarities, ``min(k, n)`` long.

    """
    n = int(keys.shape[0])
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    q = quantize(sims, quantum)
    if k < n:
        neg = -q
        threshold = np.partition(neg, k - 1)[k - 1]
        cand = np.flatnonzero(neg <= threshold)
    else:
        cand = np.arange(n)
    order = np.lexsort((keys[cand], -q[cand]))[:k]
    chosen = cand[order]
    return (
        np.ascontiguousarray(keys[chosen], dtype=np.int64),
        np.ascontiguousarray(sims[chosen], dtype=np.float32),
    )
