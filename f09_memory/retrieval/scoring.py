"""The hybrid score of spec section 7 over numpy columns.

``score = IW*importance' + RW*recency + SW*semantic + PW*structural [+ XW*proximity]``
where ``importance'`` is the importance with the flag boost, ``recency = exp(-dt/halfLife)``,
``semantic`` the cosine similarity to the query centroid, ``structural`` the layer's weight
for the purpose, and ``proximity`` (a request with a ``position`` only) ``1 / (1 + (d /
scale)**2)`` of the record's distance to it (0 for a record without a position; see
``f09_memory.spatial``). Weights come from config by purpose x strategy, are multiplied by
the pressure profile, and renormalized to sum to 1; when the semantic term is unavailable
its weight is redistributed over the others in proportion. The proximity weight
(``ScoringTables.proximity``) joins them only when the request has a position: without one
the weights are the four-term ones, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from f09_memory.canonical import quantize
from f09_memory.config.config import MemoryConfig
from f09_memory.decay.decay import recency_scores
from f09_memory.schema.enums import LAYERS_BY_CODE, PressureState, Purpose, Strategy
from f09_memory.store.agent import AgentMemory

__all__ = ["PROXIMITY_KEY", "SCORE_KEYS", "ScoringContext", "compute_scores",
           "effective_weights", "quantize", "score_terms"]

SCORE_KEYS = ("importance", "recency", "semantic", "structural")
"""The hybrid score's four terms, in weight order (spec section 7)."""
PROXIMITY_KEY = "proximity"
"""The fifth term's key (weights of a request with a ``position``)."""


def effective_weights(
    config: MemoryConfig,
    purpose: Purpose,
    strategy: Strategy,
    pressure: PressureState,
    semantic_available: bool,
    positioned: bool = False,
) -> NDArray[np.float64]:
    """Weights ``[IW, RW, SW, PW]`` for this request, summing to 1.

    With ``positioned`` (the request has a position): ``[IW, RW, SW, PW, XW]``, the
    proximity weight of the purpose renormalized with the others.
    """
    base = np.array(config.scoring.weights[purpose][strategy].as_tuple(), dtype=np.float64)
    mult = np.array(
        config.scoring.pressure[pressure].weight_multipliers.as_tuple(), dtype=np.float64
    )
    w = base * mult
    if positioned:
        w = np.append(w, config.scoring.proximity[purpose])
    if not semantic_available:
        w[2] = 0.0
    total = float(w.sum())
    if total <= 0.0:  # every remaining term was zero: fall back to importance + recency
        w = np.zeros(w.shape[0])
        w[:2] = 0.5
        total = 1.0
    result: NDArray[np.float64] = w / total
    return result


@dataclass(frozen=True, slots=True)
class ScoringContext:
    """Everything :func:`compute_scores` needs besides the columns."""

    now: int
    weights: NDArray[np.float64]
    layer_weights: NDArray[np.float64]
    boost: float
    half_life_ms: int

    @staticmethod
    def layer_weight_array(config: MemoryConfig, purpose: Purpose) -> NDArray[np.float64]:
        """The purpose's structural weight per layer code."""
        table = config.scoring.layer_weights[purpose]
        return np.array([table[layer] for layer in LAYERS_BY_CODE], dtype=np.float64)


def compute_scores(
    am: AgentMemory,
    slots: NDArray[np.intp],
    ctx: ScoringContext,
    semantic: NDArray[np.float64] | None = None,
    proximity: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Hybrid scores of the records in ``slots`` (vectorized; no per-record Python).

    Args:
        am: The agent's columns.
        slots: Candidate slots.
        ctx: Weights, time and tables.
        semantic: Cosine similarity per candidate (aligned with ``slots``), or ``None``.
        proximity: The proximity term per candidate (aligned with ``slots``; weights of
            five terms), or ``None``.

    Returns:
        float64 scores aligned with ``slots``.
    """
    weights = ctx.weights
    iw, rw, sw, pw = weights[:4].tolist()  # Python floats, one C call
    # A zero-weight term adds exactly +0.0 (every term is finite and >= 0): skipping it gives
    # the same bits, and cosine-only or recency-only tables skip the unused columns.
    if rw:
        score = recency_scores(ctx.now, am.anchor[slots], ctx.half_life_ms)
        score *= rw
    else:
        score = np.zeros(slots.shape[0])
    if iw:
        imp = am.importance[slots]
        flagged = am.flagged[slots]
        if flagged.any():
            imp = np.where(flagged, imp * ctx.boost, imp)
        score += iw * imp
    if pw:
        score += pw * ctx.layer_weights.take(am.layer[slots])
    if sw and semantic is not None:
        score += sw * semantic
    if proximity is not None and weights.shape[0] == 5 and weights[4]:
        score += float(weights[4]) * proximity
    return score


def score_terms(
    am: AgentMemory,
    slots: NDArray[np.intp],
    ctx: ScoringContext,
    semantic: NDArray[np.float64] | None = None,
    proximity: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """The terms :func:`compute_scores` weighs, one row per slot (for explanations).

    Columns follow ``ctx.weights``: importance (flag boost applied), recency, semantic (0
    where ``semantic`` is ``None``), structural (the layer's weight for the purpose) and,
    with five weights, proximity (0 where ``proximity`` is ``None``). ``terms @ weights``
    is the score up to the float rounding of the summation order; the score itself is
    :func:`compute_scores`'s.

    Returns:
        float64 array of shape ``(len(slots), len(ctx.weights))``.
    """
    n = int(slots.shape[0])
    out = np.zeros((n, ctx.weights.shape[0]), dtype=np.float64)
    imp = am.importance[slots]
    flagged = am.flagged[slots]
    out[:, 0] = np.where(flagged, imp * ctx.boost, imp) if flagged.any() else imp
    out[:, 1] = recency_scores(ctx.now, am.anchor[slots], ctx.half_life_ms)
    if semantic is not None:
        out[:, 2] = semantic
    out[:, 3] = ctx.layer_weights.take(am.layer[slots])
    if proximity is not None and out.shape[1] == 5:
        out[:, 4] = proximity
    return out
