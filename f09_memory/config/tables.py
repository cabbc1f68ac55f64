"""Scoring and pressure tables: every weight retrieval uses, by purpose, strategy and pressure.

Defaults follow spec section 7: semantic outweighs episodic for dialog, spatial matters for
navigation, and pressure shifts weight toward cheap, high-value memories while compressing.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from f09_memory.errors import ErrorCode
from f09_memory.schema.base import BoundaryModel
from f09_memory.schema.enums import MemoryLayer, PressureState, Purpose, Strategy

__all__ = [
    "CompressionStrategy",
    "NonNegative",
    "PressureProfile",
    "ScoreWeights",
    "ScoringTables",
    "SummarizationMode",
    "default_layer_policy",
    "default_layer_weights",
    "default_pressure_profiles",
    "default_proximity_weights",
    "default_weight_table",
]

NonNegative = Annotated[float, Field(ge=0.0, le=1000.0, allow_inf_nan=False)]
"""A finite weight or multiplier in 0..1000."""
SummarizationMode = Literal["llm", "heuristic", "skip"]
"""How summarization runs under a pressure state: by the LLM, by the local heuristic, or not."""
CompressionStrategy = Literal["first_sentence_tags", "ratio_truncate"]
"""A name in :data:`~f09_memory.compression.strategies.TEXT_STRATEGIES`."""

_L = MemoryLayer
_P = Purpose
_S = Strategy


class _ConfigModel(BoundaryModel):
    _default_code: ClassVar[ErrorCode] = ErrorCode.MEMORY_CONFIG_INVALID


class ScoreWeights(_ConfigModel):
    """Weights of the four hybrid-score terms (spec section 7). At least one is positive."""

    importance: NonNegative
    recency: NonNegative
    semantic: NonNegative
    structural: NonNegative

    @model_validator(mode="after")
    def _some_positive(self) -> ScoreWeights:
        if self.importance + self.recency + self.semantic + self.structural <= 0.0:
            raise ValueError("at least one weight must be > 0")
        return self

    def as_tuple(self) -> tuple[float, float, float, float]:
        """Return ``(importance, recency, semantic, structural)``."""
        return (self.importance, self.recency, self.semantic, self.structural)


class PressureProfile(_ConfigModel):
    """How one pressure state changes retrieval and summarization.

    Attributes:
        weight_multipliers: Multiplied into the purpose/strategy weights (then renormalized).
        compress: Whether packed records are compressed.
        compression_strategy: The text strategy of the compression registry
            (``first_sentence_tags`` or ``ratio_truncate``).
        drop_metadata: Whether compressed records also lose their metadata (but ``flagged``
            and ``source_ref_ids``).
        compression_ratio: Token ratio kept by compression; ``None`` uses
            ``MemoryConfig.throttle_compression_ratio``.
        budget_scale: Fraction of the requested token budget granted (0 < scale <= 1).
        summarization: ``llm``, ``heuristic`` (local summarizer) or ``skip``.
    """

    weight_multipliers: ScoreWeights = ScoreWeights(
        importance=1.0, recency=1.0, semantic=1.0, structural=1.0
    )
    compress: bool = False
    compression_strategy: CompressionStrategy = "first_sentence_tags"
    drop_metadata: bool = False
    compression_ratio: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    budget_scale: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    summarization: SummarizationMode = "llm"


def _w(i: float, r: float, s: float, p: float) -> ScoreWeights:
    return ScoreWeights(importance=i, recency=r, semantic=s, structural=p)


_BALANCED: dict[Purpose, ScoreWeights] = {
    _P.REASONING: _w(0.35, 0.25, 0.30, 0.10),
    _P.DIALOG: _w(0.25, 0.30, 0.30, 0.15),
    _P.NAVIGATION: _w(0.20, 0.40, 0.15, 0.25),
    _P.SUMMARY: _w(0.40, 0.20, 0.25, 0.15),
}
_FAVOURED: dict[Strategy, ScoreWeights] = {
    _S.RECENCY: _w(0.15, 0.65, 0.10, 0.10),
    _S.IMPORTANCE: _w(0.65, 0.15, 0.10, 0.10),
    _S.SEMANTIC: _w(0.15, 0.10, 0.65, 0.10),
}


def default_weight_table() -> dict[Purpose, dict[Strategy, ScoreWeights]]:
    """Weights by purpose x strategy.

    ``balanced`` is the purpose's own mix; the other strategies favour their term.
    """
    return {
        purpose: {_S.BALANCED: _BALANCED[purpose], **_FAVOURED} for purpose in Purpose
    }


def default_layer_policy() -> dict[Purpose, tuple[MemoryLayer, ...]]:
    """Layers each purpose reads (the candidate filter of spec section 9, step 1)."""
    return {
        _P.REASONING: (_L.EPISODIC, _L.SEMANTIC, _L.PROCEDURAL, _L.SOCIAL, _L.SPATIAL, _L.SYSTEM),
        _P.DIALOG: (_L.EPISODIC, _L.SEMANTIC, _L.SOCIAL, _L.SYSTEM),
        _P.NAVIGATION: (_L.EPISODIC, _L.SPATIAL, _L.PROCEDURAL, _L.SEMANTIC, _L.SYSTEM),
        _P.SUMMARY: (_L.EPISODIC, _L.SEMANTIC, _L.SOCIAL, _L.SYSTEM),
    }


def default_layer_weights() -> dict[Purpose, dict[MemoryLayer, float]]:
    """The structural term: how much each layer suits each purpose (0..1)."""
    return {
        _P.REASONING: {_L.EPISODIC: 0.5, _L.SEMANTIC: 0.8, _L.PROCEDURAL: 0.7, _L.SOCIAL: 0.5,
                       _L.SPATIAL: 0.3, _L.SYSTEM: 1.0},
        _P.DIALOG: {_L.EPISODIC: 0.5, _L.SEMANTIC: 0.9, _L.PROCEDURAL: 0.2, _L.SOCIAL: 0.8,
                    _L.SPATIAL: 0.1, _L.SYSTEM: 1.0},
        _P.NAVIGATION: {_L.EPISODIC: 0.4, _L.SEMANTIC: 0.4, _L.PROCEDURAL: 0.7, _L.SOCIAL: 0.1,
                        _L.SPATIAL: 1.0, _L.SYSTEM: 1.0},
        _P.SUMMARY: {_L.EPISODIC: 0.6, _L.SEMANTIC: 0.9, _L.PROCEDURAL: 0.3, _L.SOCIAL: 0.6,
                     _L.SPATIAL: 0.2, _L.SYSTEM: 1.0},
    }


def default_proximity_weights() -> dict[Purpose, float]:
    """The proximity term's weight by purpose: only ``navigation`` blends distance in.

    Applied only to a request with a ``position`` (otherwise its weight is 0 and the other
    weights are exactly the four-term ones), renormalized with the purpose's other weights.
    """
    return {purpose: (0.3 if purpose is _P.NAVIGATION else 0.0) for purpose in Purpose}


def default_pressure_profiles() -> dict[PressureState, PressureProfile]:
    """Graceful degradation by pressure state.

    ``soft`` favours importance, ``throttle`` compresses (first sentence + tags),
    ``exhausted`` also drops metadata, halves the budget and stops LLM summarization.
    """
    return {
        PressureState.NORMAL: PressureProfile(),
        PressureState.SOFT: PressureProfile(
            weight_multipliers=_w(1.25, 1.0, 0.8, 1.0), summarization="llm"
        ),
        PressureState.THROTTLE: PressureProfile(
            weight_multipliers=_w(1.5, 1.0, 0.5, 1.0), compress=True, summarization="heuristic"
        ),
        PressureState.EXHAUSTED: PressureProfile(
            weight_multipliers=_w(2.0, 1.0, 0.25, 1.0),
            compress=True,
            drop_metadata=True,
            budget_scale=0.5,
            summarization="skip",
        ),
    }


class ScoringTables(_ConfigModel):
    """Every table retrieval reads; complete for all purposes, strategies, layers, pressures."""

    weights: dict[Purpose, dict[Strategy, ScoreWeights]] = Field(
        default_factory=default_weight_table
    )
    layer_policy: dict[Purpose, tuple[MemoryLayer, ...]] = Field(
        default_factory=default_layer_policy
    )
    layer_weights: dict[Purpose, dict[MemoryLayer, Annotated[float, Field(ge=0.0, le=1.0)]]] = (
        Field(default_factory=default_layer_weights)
    )
    pressure: dict[PressureState, PressureProfile] = Field(
        default_factory=default_pressure_profiles
    )
    proximity: dict[Purpose, NonNegative] = Field(default_factory=default_proximity_weights)
    """Weight of the proximity term by purpose (requests with a ``position`` only); it is
    renormalized with the purpose's four weights, which the pressure multipliers scale."""

    @model_validator(mode="after")
    def _complete(self) -> ScoringTables:
        for purpose in Purpose:
            missing = [s.value for s in Strategy if s not in self.weights.get(purpose, {})]
            if missing:
                raise ValueError(f"weights[{purpose.value}] lacks strategies {missing}")
            if not self.layer_policy.get(purpose):
                raise ValueError(f"layer_policy[{purpose.value}] must name at least one layer")
            lw = self.layer_weights.get(purpose, {})
            absent = [layer.value for layer in MemoryLayer if layer not in lw]
            if absent:
                raise ValueError(f"layer_weights[{purpose.value}] lacks layers {absent}")
        absent_x = [p.value for p in Purpose if p not in self.proximity]
        if absent_x:
            raise ValueError(f"proximity lacks purposes {absent_x}")
        absent_p = [p.value for p in PressureState if p not in self.pressure]
        if absent_p:
            raise ValueError(f"pressure lacks states {absent_p}")
        return self
