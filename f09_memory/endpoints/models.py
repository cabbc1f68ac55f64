"""The HTTP app's own JSON bodies (camelCase ``BoundaryModel``s).

They wrap the introspection and metrics models: the agent list, search results, the metrics
page, ``/debug/memory``, the redaction mode, and the explain request (a ``RetrievalRequest``
whose ``agentId`` may be left to the path).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, StrictBool

from f09_memory.introspection import AgentStats, EngineStats, RecordView
from f09_memory.observability import MetricsSnapshot, TickPoint
from f09_memory.schema.base import BoundaryModel
from f09_memory.schema.retrieval import RetrievalRequest

_AgentId = Annotated[str, Field(min_length=1, max_length=4_096)]

__all__ = [
    "AgentList",
    "DebugMemory",
    "ExplainRequest",
    "MetricsPage",
    "RedactionMode",
    "SearchHit",
    "SearchResults",
]


class AgentList(BoundaryModel):
    """``GET /api/agents``: every agent's counts (sorted by agent id), the clock, the version.

    ``version`` is the introspection version (the latest capture); ``now`` the engine clock.
    """

    agents: list[AgentStats]
    now: int
    version: int


class SearchHit(BoundaryModel):
    """One result of ``GET /api/memory/search``: the lexical score and the record."""

    score: float
    record: RecordView


class SearchResults(BoundaryModel):
    """``GET /api/memory/search``: the query as matched, and the results.

    ``query`` is redacted while redaction is ON; ``results`` are best score first, ties by
    record id.
    """

    query: str
    results: list[SearchHit]


class MetricsPage(BoundaryModel):
    """``GET /api/metrics``: the metrics now and the per-tick history (for the page's plot)."""

    metrics: MetricsSnapshot
    series: list[TickPoint]


class DebugMemory(BoundaryModel):
    """``GET /debug/memory`` (spec section 20): sanitized engine stats and metrics.

    ``metrics`` is ``None`` when the host was built without a metrics collector.
    """

    stats: EngineStats
    metrics: MetricsSnapshot | None


class RedactionMode(BoundaryModel):
    """``GET`` / ``POST /api/redaction``: whether responses are redacted (the view mode)."""

    redaction: StrictBool


class ExplainRequest(RetrievalRequest):
    """``POST /api/agents/{id}/explain``: a ``RetrievalRequest`` for the path's agent.

    ``agentId`` may be omitted (the path names the agent); when given it must equal the
    path's.
    """

    # Built now: FastAPI's adapter over a request body whose model defers its build (as
    # BoundaryModels do) builds it again itself, and pydantic then warns about the alias.
    model_config = ConfigDict(defer_build=False)

    agent_id: _AgentId | None = None  # type: ignore[assignment]
