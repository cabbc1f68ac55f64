"""Recency and importance decay: ``exp(-dt / halfLife)`` over numpy columns (lazy).

The spec (sections 7, 12) writes the decay as ``exp(-dt / halfLife)``; we keep its formula,
so ``decay_half_life_ms`` is the e-folding time (a record is at 1/e, not 1/2, after one
"half-life"). Time never runs backwards for a record: ``dt`` is clipped at 0.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from f09_memory.store.agent import AgentMemory

__all__ = ["decay_pass", "importance_decayed", "recency_scores"]


def recency_scores(
    now: int, anchors: NDArray[np.int64], half_life_ms: int, out: NDArray[np.float64] | None = None
) -> NDArray[np.float64]:
    """Return ``exp(-max(0, now - anchor) / half_life_ms)`` for each anchor (vectorized)."""
    dt = np.subtract(now, anchors, dtype=np.float64)
    np.maximum(dt, 0.0, out=dt)
    dt *= -1.0 / half_life_ms
    return np.exp(dt, out=dt if out is None else out)


def importance_decayed(
    importance: NDArray[np.float64], anchors: NDArray[np.int64], now: int, half_life_ms: int
) -> NDArray[np.float64]:
    """The spec's Importance-Decayed Score: ``importance * exp(-dt / halfLife)``."""
    return importance * recency_scores(now, anchors, half_life_ms)


def decay_pass(am: AgentMemory, now: int, half_life_ms: int) -> NDArray[np.float64]:
    """The decayed importance of every slot of ``am`` at ``now`` (dead slots included).

    Decay is lazy: nothing is stored, ``importance`` is never changed, and the result is a
    pure function of the columns and ``now``. Runtime complexity: O(hi), numpy only.
    """
    hi = am.hi
    return importance_decayed(am.importance[:hi], am.anchor[:hi], now, half_life_ms)
