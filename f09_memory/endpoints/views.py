"""What each route reads from the engine: functions of the engine run on its owner thread.

Every function here is a *job* for :meth:`~f09_memory.endpoints.host.EngineHost.call`: it
runs between two frames of the host, on the thread that owns the engine, and only reads
(introspection and metrics are pure reads: no state change, no event, the state hash is
untouched). ``redact`` is the app's view mode: while it is ON every text that leaves
(content, tags, attribute values, the echoed search query) went through a redactor that is
ON whatever the engine's own redaction mode. The functions need no web framework.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from f09_memory.endpoints.models import (
    AgentList,
    DebugMemory,
    ExplainRequest,
    MetricsPage,
    SearchHit,
    SearchResults,
)
from f09_memory.engine import MemoryEngine
from f09_memory.errors import InputInvalidError
from f09_memory.introspection import Explanation, MemoryDiff
from f09_memory.json_types import JsonValue
from f09_memory.observability import MetricsCollector
from f09_memory.redaction.redactor import Redactor
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.retrieval import RetrievalRequest
from f09_memory.tools.execute import KEYWORD_MATCH_WEIGHT

__all__ = [
    "UnknownAgentError",
    "agent_diff",
    "agent_explain",
    "agent_snapshot",
    "debug_memory",
    "list_agents",
    "memory_page",
    "metrics_page",
    "search_memory",
    "search_score",
]

_TOKEN: Final = re.compile(r"<REDACT:sha256-[0-9a-f]+>|\w+")
"""Tokens of the seed-001 lexical score (``tools.execute``): placeholders stay whole."""


class UnknownAgentError(LookupError):
    """No agent has the requested id (HTTP 404): the id is not repeated in the message."""


def _known(engine: MemoryEngine, agent_id: str) -> None:
    if agent_id not in engine.agents():
        raise UnknownAgentError("no agent has this id: GET /api/agents lists the agents")


def list_agents(engine: MemoryEngine) -> AgentList:
    """``GET /api/agents``: per-agent counts (sorted by agent id), clock and version."""
    stats = engine.introspection.stats()
    return AgentList(agents=stats.per_agent, now=stats.now, version=stats.version)


def agent_snapshot(engine: MemoryEngine, agent_id: str, *, layer: MemoryLayer | None,
                   limit: int | None, offset: int, redact: bool) -> dict[str, JsonValue]:
    """``GET /api/agents/{id}/snapshot``: one agent's records (a capture for ``diff``).

    A ``MemorySnapshot`` in JSON form (``Introspector.snapshot_data``).

    Raises:
        UnknownAgentError: No agent has ``agent_id``.
    """
    _known(engine, agent_id)
    return engine.introspection.snapshot_data(agent_id, layer=layer, limit=limit,
                                              offset=offset, redact=redact)


def agent_diff(engine: MemoryEngine, agent_id: str, *, since: int,
               redact: bool) -> MemoryDiff:
    """``GET /api/agents/{id}/diff?since=``: what changed since the capture ``since``.

    Raises:
        UnknownAgentError: No agent has ``agent_id``.
        InputInvalidError: ``since`` is unknown, of another scope or too old (take a new
            snapshot).
    """
    _known(engine, agent_id)
    return engine.introspection.diff(since, agent_id, redact=redact)


def agent_explain(engine: MemoryEngine, agent_id: str, body: ExplainRequest, *,
                  redact: bool) -> Explanation:
    """``POST /api/agents/{id}/explain``: how a retrieval of ``body`` would rank, now.

    Raises:
        UnknownAgentError: No agent has ``agent_id``.
        InputInvalidError: ``body.agentId`` is given and is not the path's agent.
    """
    _known(engine, agent_id)
    if body.agent_id is not None and body.agent_id != agent_id:
        raise InputInvalidError(
            "agentId in the body must equal the agent of the path, or be left out",
            details={"field": "agentId"})
    values = {name: getattr(body, name) for name in body.model_fields_set}
    values["agent_id"] = agent_id
    request = RetrievalRequest.parse(values)
    return engine.introspection.explain(request, redact=redact)


def memory_page(engine: MemoryEngine, *, agent_id: str | None, limit: int, offset: int,
                redact: bool) -> dict[str, JsonValue]:
    """``GET /api/memory``: a page of every agent's records (or one agent's).

    A ``MemorySnapshot`` in JSON form (``Introspector.snapshot_data``).

    Raises:
        UnknownAgentError: ``agent_id`` is given and no agent has it.
    """
    if agent_id is not None:
        _known(engine, agent_id)
    return engine.introspection.snapshot_data(agent_id, limit=limit, offset=offset,
                                              redact=redact)


def _tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.casefold()))


def search_score(wanted: set[str], content: str, tags: Sequence[str]) -> int:
    """The seed-001 lexical score of a record for the query tokens ``wanted``.

    Distinct query tokens found in the content, plus ``KEYWORD_MATCH_WEIGHT`` times those
    found in the tags (a tag match ranks above a content-only one), as ``memory_search``.
    """
    score = len(wanted & _tokens(content))
    if tags:
        score += KEYWORD_MATCH_WEIGHT * len(wanted & _tokens(" ".join(tags)))
    return score


def search_memory(engine: MemoryEngine, query: str, *, limit: int, agent_id: str | None,
                  redact: bool) -> SearchResults:
    """``GET /api/memory/search?q=``: records by lexical overlap with ``query``.

    With ``redact`` the query and every record's content and tags are redacted before they
    are compared, so a search cannot find (and so reveal) a secret the view hides. Order:
    score descending, then record id. Runtime complexity: O(records searched) redactions
    and tokenizations; only the ``limit`` results become views.

    Raises:
        UnknownAgentError: ``agent_id`` is given and no agent has it.
    """
    if agent_id is not None:
        _known(engine, agent_id)
    clean = Redactor.from_config(engine.config, enabled=True).redact_text if redact else None
    shown = clean(query) if clean is not None else query
    wanted = _tokens(shown)
    scored: list[tuple[int, str]] = []
    if wanted:
        for agent in [agent_id] if agent_id is not None else engine.agents():
            for record in engine.records(agent):
                content: str = record.content
                tags: Sequence[str] = record.metadata.tags
                if clean is not None:
                    content, tags = clean(content), [clean(t) for t in tags]
                score = search_score(wanted, content, tags)
                if score > 0:
                    scored.append((score, record.id))
    scored.sort(key=lambda item: (-item[0], item[1]))
    view = engine.introspection.record_view
    hits = [SearchHit(score=float(score), record=view(rid, redact=redact))
            for score, rid in scored[:limit]]
    return SearchResults(query=shown, results=hits)


def debug_memory(engine: MemoryEngine, collector: MetricsCollector | None) -> DebugMemory:
    """``GET /debug/memory`` (spec section 20): engine stats and metrics, no text at all."""
    return DebugMemory(stats=engine.introspection.stats(),
                       metrics=None if collector is None else collector.snapshot())


def metrics_page(collector: MetricsCollector) -> MetricsPage:
    """``GET /api/metrics``: the metrics now and their per-tick history."""
    return MetricsPage(metrics=collector.snapshot(), series=collector.series())
