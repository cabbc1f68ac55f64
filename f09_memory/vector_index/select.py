"""Choosing an index for a collection size, and measuring an approximate index's recall."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from f09_memory.errors import ConfigInvalidError
from f09_memory.vector_index.exact import ExactIndex
from f09_memory.vector_index.hnsw import HnswIndex
from f09_memory.vector_index.ordering import DEFAULT_QUANTUM

__all__ = ["make_index", "recall_at_k"]


def make_index(
    count_hint: int,
    dim: int,
    *,
    exact_max: int,
    m: int,
    ef_construction: int,
    ef: int,
    seed: int,
    quantum: int = DEFAULT_QUANTUM,
) -> ExactIndex | HnswIndex:
    """Build the index that fits ``count_hint`` vectors.

    Up to ``exact_max`` vectors (``MemoryConfig.exact_index_max``) an :class:`ExactIndex`
    (exact, reproducible everywhere); above it an :class:`HnswIndex` sized for the hint.

    Args:
        count_hint: Expected number of vectors (>= 0).
        dim: Vector dimension.
        exact_max: Largest count served by exact search.
        m: HNSW graph degree (``MemoryConfig.hnsw_m``).
        ef_construction: HNSW build-time list size (``MemoryConfig.hnsw_ef_construction``).
        ef: HNSW query-time list size (``MemoryConfig.hnsw_ef``).
        seed: HNSW level-generator seed.
        quantum: Similarity quantum for ordering (``MemoryConfig.score_quantum``).

    Returns:
        An empty index.

    Raises:
        ConfigInvalidError: ``count_hint`` < 0, ``exact_max`` < 1, or an index argument is
            out of range.

    """
    for name, value, low in (("count_hint", count_hint, 0), ("exact_max", exact_max, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigInvalidError(
                f"make_index {name} must be an int >= {low}, got {value!r}",
                details={"field": name, "value": repr(value)},
            )
    if count_hint <= exact_max:
        return ExactIndex(dim, initial_capacity=max(64, count_hint), quantum=quantum)
    return HnswIndex(
        dim,
        m=m,
        ef_construction=ef_construction,
        ef=ef,
        seed=seed,
        initial_capacity=count_hint,
        quantum=quantum,
    )


def recall_at_k(approx_keys: ArrayLike, exact_keys: ArrayLike) -> float:
    """Return the share of the exact top-k keys that the approximate result also found.

    Args:
        approx_keys: Keys returned by the approximate index.
        exact_keys: Keys returned by exact search (the reference top-k).

    Returns:
        ``|approx & exact| / |exact|`` in ``[0, 1]``; 1.0 when ``exact_keys`` is empty.

    """
    exact = np.unique(np.asarray(exact_keys, dtype=np.int64))
    if exact.shape[0] == 0:
        return 1.0
    approx = np.unique(np.asarray(approx_keys, dtype=np.int64))
    hits = np.intersect1d(approx, exact, assume_unique=True).shape[0]
    return float(hits) / float(exact.shape[0])
