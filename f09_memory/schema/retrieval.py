"""Retrieval request, bundle and diagnostics (spec section 6)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr

from f09_memory.errors import ErrorCode
from f09_memory.schema.base import BoundaryModel
from f09_memory.schema.enums import MemoryLayer, PressureState, Purpose, Strategy
from f09_memory.schema.records import MemoryRecord

__all__ = ["RetrievalDiagnostics", "RetrievalRequest", "RetrievedBundle", "ScoreComponent"]

_MAX_LOGICAL_TIME = 2**62
"""``f09_memory._validate.MAX_LOGICAL_TIME`` (not imported: ``_validate`` imports the schema)."""
_MAX_QUERY_CHARS = 10_000_000
"""The longest query text (the largest ``max_content_chars``)."""
_MAX_FILTER_CHARS = 10_000_000
"""The longest attribute filter key or value (the largest ``max_attribute_chars``)."""
_FilterValue = (Annotated[StrictStr, Field(max_length=_MAX_FILTER_CHARS)] | StrictBool
                | StrictInt | Annotated[StrictFloat, Field(allow_inf_nan=False)])
"""An attribute filter value; a constrained str also rejects lone surrogates."""


class RetrievalRequest(BoundaryModel):
    """What an agent wants from memory now.

    ``max_tokens`` is required at retrieval time unless ``limit`` is set (a missing or
    non-positive budget raises ``MEMORY_TOKEN_BUDGET_UNDEFINED``); a budget above
    ``MemoryConfig.max_context_tokens`` is clamped to it. Filters (``layers``, ``tags_any``,
    ``tags_all``, ``since``/``until`` on the recency anchor, ``attributes``) narrow the
    candidates; ``limit`` caps the records returned. ``pressure_state`` overrides the
    engine's current pressure for this call. ``query`` is free text for the semantic term.
    """

    _field_codes: ClassVar[dict[str, ErrorCode]] = {
        "max_tokens": ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED,
        "maxTokens": ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED,
    }

    agent_id: Annotated[str, Field(min_length=1, max_length=4_096)]
    purpose: Purpose
    max_tokens: Annotated[StrictInt, Field(gt=0)] | None = None
    strategy: Strategy = Strategy.BALANCED
    model: Annotated[str, Field(max_length=256)] | None = None
    pressure_state: PressureState | None = None
    query: Annotated[str, Field(max_length=_MAX_QUERY_CHARS)] | None = None
    statuses: tuple[Literal["active", "superseded", "quarantined"], ...] | None = None
    """Record statuses to consider (``None``: active only). Superseded and quarantined
    claims are excluded unless listed here."""
    limit: Annotated[StrictInt, Field(gt=0, le=100_000)] | None = None
    """At most this many records (the top ``limit`` in score order that fit the budget).
    With ``limit`` set, ``max_tokens`` may be omitted: no token budget then."""
    layers: tuple[MemoryLayer, ...] | None = None
    """Only these layers (instead of the purpose's layer policy)."""
    tags_any: tuple[Annotated[str, Field(min_length=1, max_length=65_536)], ...] | None = None
    """Only records carrying at least one of these tags."""
    tags_all: tuple[Annotated[str, Field(min_length=1, max_length=65_536)], ...] | None = None
    """Only records carrying every one of these tags."""
    since: Annotated[StrictInt, Field(ge=0, lt=_MAX_LOGICAL_TIME)] | None = None
    """Only records whose recency anchor is at or after this logical time."""
    until: Annotated[StrictInt, Field(ge=0, lt=_MAX_LOGICAL_TIME)] | None = None
    """Only records whose recency anchor is before this logical time."""
    attributes: dict[Annotated[str, Field(max_length=_MAX_FILTER_CHARS)],
                     _FilterValue] | None = None
    """Only records whose ``metadata.attributes`` hold every one of these key/value pairs."""
    query_vector: tuple[Annotated[float, Field(allow_inf_nan=False)], ...] | None = Field(
        default=None, min_length=2, max_length=8192)
    """A query embedding computed elsewhere (the host's own model or server), used like the
    embedding of ``query`` (both: their centroid). Finite; its length must be the engine's
    embedding dimension (checked when the request is served, before any bundle is built)."""

    position: tuple[Annotated[float, Field(allow_inf_nan=False)], ...] | None = Field(
        default=None, min_length=2, max_length=3)
    """Where the agent is now (``(x, y)`` or ``(x, y, z)``, finite world coordinates): the
    proximity term scores records with a position by their distance to it (its weight is
    ``ScoringTables.proximity`` for the purpose: ``navigation`` by default). ``None``: no
    proximity term, the same scores as before it existed."""

    def has_filters(self) -> bool:
        """Whether any filter beyond layer policy, TTL and status is set."""
        return (self.layers is not None or self.tags_any is not None
                or self.tags_all is not None or self.since is not None
                or self.until is not None or self.attributes is not None)


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
