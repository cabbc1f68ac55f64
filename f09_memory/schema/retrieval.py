"""Retrieval request, bundle and diagnostics (spec section 6)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, StrictInt

from f09_memory.errors import ErrorCode
from f09_memory.schema.base import BoundaryModel
from f09_memory.schema.enums import PressureState, Purpose, Strategy
from f09_memory.schema.records import MemoryRecord

__all__ = ["RetrievalDiagnostics", "RetrievalRequest", "RetrievedBundle", "ScoreComponent"]


class RetrievalRequest(BoundaryModel):
    """What an agent wants from memory now.

    ``max_tokens`` is required at retrieval time (a missing or non-positive budget raises
    ``MEMORY_TOKEN_BUDGET_UNDEFINED``); a budget above ``MemoryConfig.max_context_tokens`` is
    clamped to it. ``pressure_state`` overrides the engine's current pressure for this call.
    ``query`` is free text for the semantic term.
    """

    _field_codes: ClassVar[dict[str, ErrorCode]] = {
        "max_tokens": ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED,
        "maxTokens": ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED,
    }

    agent_id: Annotated[str, Field(min_length=1)]
    purpose: Purpose
    max_tokens: Annotated[StrictInt, Field(gt=0)] | None = None
    strategy: Strategy = Strategy.BALANCED
    model: str | None = None
    pressure_state: PressureState | None = None
    query: str | None = None
    statuses: tuple[Literal["active", "superseded", "quarantined"], ...] | None = None
    """Record statuses to consider (``None``: active only). Superseded and quarantined
    claims are excluded unless listed here."""


class ScoreComponent(BoundaryModel):
    """One term of the hybrid score and the weight it carried in this retrieval."""

    key: str
    weight: float


class RetrievalDiagnostics(BoundaryModel):
    """How a bundle was built.

    ``candidate_count``: records that passed the candidate filter and were scored;
    ``filtered_count``: the agent's live records the filter excluded (expired TTL or a layer
    the purpose does not read). ``time_ms`` is a perf-counter measurement, excluded from
    every hash. ``semantic_fallback`` names why the semantic term was unavailable (its
    weight was redistributed), ``None`` when it was used.
    """

    candidate_count: int
    filtered_count: int
    scoring_breakdown: list[ScoreComponent]
    time_ms: float
    compression_applied: bool = False
    pressure_state: PressureState = PressureState.NORMAL
    budget: int = 0
    semantic_fallback: str | None = None


class RetrievedBundle(BoundaryModel):
    """The packed context: records in score order, within ``total_tokens`` <= the budget."""

    records: list[MemoryRecord]
    total_tokens: int
    truncated: bool
    strategy_applied: str
    diagnostics: RetrievalDiagnostics
