"""The hybrid score of spec section 7 over numpy columns.

``score = IW*importance' + RW*recency + SW*semantic + PW*structural`` where ``importance'``
is the importance with the flag boost, ``recency = exp(-dt/halfLife)``, ``semantic`` the
cosine similarity to the query centroid, and ``structural`` the layer's weight for the
purpose. Weights come from config by purpose x strategy, are multiplied by the pressure
profile, and renormalized to sum to 1; when the semantic term is unavailable its weight is
redistributed over the others in proportion.
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

__all__ = ["SCORE_KEYS", "ScoringContext", "compute_scores", "effective_weights", "quantize"]

SCORE_KEYS = ("importance", "recency", "semantic", "structural")


def effective_weights(
    config: MemoryConfig,
    purpose: Purpose,
    strategy: Strategy,
    pressure: PressureState,
    semantic_available: bool,
) -> NDArray[np.float64]:
    """Weights ``[IW, RW, SW, PW]`` for this request, summing to 1."""
    base = np.array(config.scoring.weights[purpose][strategy].as_tuple(), dtype=np.float64)
    mult = np.array(
        config.scoring.pressure[pressure].weight_multipliers.as_tuple(), dtype=np.float64
    )
    w = base * mult
    if not semantic_available:
        w[2] = 0.0
    total = float(w.sum())
    if total <= 0.0:  # every remaining term was zero: fall back to importance + recency
        w = np.array([0.5, 0.5, 0.0, 0.0])
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
) -> NDArray[np.float64]:
    """Hybrid scores of the records in ``slots`` (vectorized; no per-record Python).

    Args:
        am: The agent's columns.
        slots: Candidate slots.
        ctx: Weights, time and tables.
        semantic: Cosine similarity per candidate (aligned with ``slots``), or ``None``.

    Returns:
        float64 scores aligned with ``slots``.
    """
    iw, rw, sw, pw = (float(x) for x in ctx.weights)
    imp = am.importance[slots]
    flagged = am.flagged[slots]
    if flagged.any():
        imp = np.where(flagged, imp * ctx.boost, imp)
    score = recency_scores(ctx.now, am.anchor[slots], ctx.half_life_ms)
    score *= rw
    score += iw * imp
    if pw:
        score += pw * ctx.layer_weights[am.layer[slots]]
    if sw and semantic is not None:
        score += sw * semantic
    return score
