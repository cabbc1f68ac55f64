"""Introspector: snapshots, diffs, explanations and counts of a live engine (pure reads).

``engine.introspection`` is one :class:`Introspector`. Every method reads: no record,
table, clock, counter or cursor of the engine changes, no event is emitted, and
``state_hash()`` is the same before and after. What it keeps is its own: the ring of
captures (``captures.CaptureRing``: the last 16 versions) and caches of derived values
(record digests, as ``state_hash`` computes them; the retrieval's query embeddings and
built records). Like the rest of the facade, it belongs to the engine's owner thread.

Redaction: with ``redact=True`` (the default) every text that leaves (content, tags,
source events, field changes, candidates' contents) is redacted whatever the engine's
``redaction_mode``, so a viewer in redaction mode never receives a raw private value even
from an engine that stores raw text (``redaction_mode=False``: a redactor with the
engine's patterns and key runs on the way out). With ``redaction_mode`` ON the store holds
only text that redactor already redacted at ingest, so it is not run twice.
``redact=False`` returns text as stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from f09_memory._owner import ThreadOwner, owned_by_thread
from f09_memory._validate import check_now, parse_layer
from f09_memory.core.state import EngineState
from f09_memory.errors import InputInvalidError, RecordNotFoundError
from f09_memory.ingestion.validation import validate_agent_id
from f09_memory.introspection.captures import AgentCapture, CaptureRing, capture_agent
from f09_memory.introspection.diff import compare
from f09_memory.introspection.explain import explanation
from f09_memory.introspection.explanation import Explanation
from f09_memory.introspection.models import (
    AgentStats,
    EngineStats,
    MemoryDiff,
    MemorySnapshot,
    RecordView,
)
from f09_memory.introspection.views import (
    RedactionMemo,
    RedactMany,
    ViewFields,
    record_data,
    record_views,
    view_fields,
)
from f09_memory.json_types import JsonValue
from f09_memory.redaction.redactor import Redactor
from f09_memory.retrieval.orchestrator import Retriever
from f09_memory.retrieval.service import RetrievalService
from f09_memory.schema.base import trusted
from f09_memory.schema.enums import LAYERS_BY_CODE, MemoryLayer
from f09_memory.schema.retrieval import RetrievalRequest
from f09_memory.store.store import split_record_id
from f09_memory.summarization.pipeline import Summarizer

__all__ = ["Introspector"]

_LAYER_NAMES = [layer.value for layer in LAYERS_BY_CODE]
_MAX_PAGE = 1_000_000
_MAX_OFFSET = 2**40


@dataclass(frozen=True, slots=True)
class _Page:
    """A snapshot's page: its capture's version and time, its scope, and its rows."""

    version: int
    now: int
    agent_id: str | None
    code: int | None
    """The layer asked for (its code), or ``None``."""
    total: int
    offset: int
    limit: int | None
    rows: list[ViewFields]


def _bool(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise InputInvalidError(f"{field} must be True or False", details={"field": field})
    return value


def _count(value: object, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputInvalidError(f"{field} must be an int in {low}..{high}",
                                details={"field": field})
    return value


@owned_by_thread()
class Introspector:
    """Read-only views of an engine for operators and tools (see the module docstring).

    Args:
        state: The engine state.
        retrieval: The engine's retrieval front door (``trace``).
        retriever: The engine's retriever (layer policy, packing costs).
        summarizer: The engine's summarizer (pending tasks).
        owner: The engine's thread owner (shared: ``bind_thread`` moves both).
    """

    def __init__(self, state: EngineState, retrieval: RetrievalService, retriever: Retriever,
                 summarizer: Summarizer, owner: ThreadOwner) -> None:
        self._owner = owner
        self._state = state
        self._retrieval = retrieval
        self._retriever = retriever
        self._summarizer = summarizer
        config = state.config
        self._quantum = config.score_quantum
        self._half_life = config.decay_half_life_ms
        self._agent_id_max = config.max_agent_id_chars
        # text stored in redaction mode ON was redacted at ingest by these very patterns and
        # key: it leaves as it is; an engine storing raw text is redacted on the way out
        self._outgoing = (None if config.redaction_mode else RedactionMemo(
            Redactor.from_config(config, enabled=True).redact_lines))
        # the ingest redactor's patterns, key and mode, with counts of its own
        self._filters = Redactor.from_config(config)
        self._ring = CaptureRing()

    # ------------------------------------------------------------------ helpers
    def _redact(self, redact: object) -> RedactMany | None:
        wanted = _bool(redact, "redact")  # checked whatever the mode
        return self._outgoing if wanted else None

    def _agent_id(self, agent_id: object) -> str | None:
        return None if agent_id is None else validate_agent_id(agent_id, self._agent_id_max)

    def _scope(self, agent_id: str | None) -> dict[str, AgentCapture]:
        store = self._state.store
        if agent_id is None:
            members = [am for am in store if am.live]
        else:
            am = store.get(agent_id)
            members = [] if am is None or not am.live else [am]
        ring, quantum = self._ring, self._quantum
        return {am.agent_id: ring.agent(am, quantum) for am in members}

    # ------------------------------------------------------------------ reading
    @property
    def version(self) -> int:
        """The latest capture's version (0 before any ``snapshot`` or ``diff``)."""
        return self._ring.version

    def snapshot(self, agent_id: str | None = None, *, layer: MemoryLayer | str | None = None,
                 limit: int | None = None, offset: int = 0,
                 redact: bool = True) -> MemorySnapshot:
        """A page of one agent's (or every agent's) records, under a new capture version.

        The capture covers the whole scope (every live record of the agent, or of all
        agents, whatever ``layer`` and the page), so ``diff(since=snapshot.version)`` is
        exact. Records: agent id ascending, then ``created_at`` descending, then id
        descending. An unknown agent has none.

        Runtime complexity: O(changed records) digests and column copies for the capture
        (an unchanged agent's is reused), O(n log n) numpy to order, O(page) objects.

        Raises:
            InputInvalidError: A malformed agent id, layer, ``limit`` (1..1,000,000),
                ``offset`` (0..2**40) or ``redact`` (state unchanged).
        """
        page = self._page(agent_id, layer, limit, offset, redact)
        now, half_life = page.now, self._half_life
        return trusted(MemorySnapshot, {
            "version": page.version, "now": now, "agent_id": page.agent_id,
            "layer": None if page.code is None else LAYERS_BY_CODE[page.code],
            "total": page.total, "offset": page.offset, "limit": page.limit,
            "records": [view for fields in page.rows
                        for view in record_views(fields, now, half_life)]})

    def snapshot_data(self, agent_id: str | None = None, *,
                      layer: MemoryLayer | str | None = None, limit: int | None = None,
                      offset: int = 0, redact: bool = True) -> dict[str, JsonValue]:
        """:meth:`snapshot` in JSON form, built without the record objects.

        Equal to ``snapshot(...).model_dump(mode="json", by_alias=True)`` (camelCase keys,
        in field order; a new capture version too), at about two thirds of the cost for a
        large page: the form an HTTP answer serializes (``GET /api/agents/{id}/snapshot``).

        Raises:
            InputInvalidError: As :meth:`snapshot` (state unchanged).
        """
        page = self._page(agent_id, layer, limit, offset, redact)
        now, half_life = page.now, self._half_life
        return {
            "version": page.version, "now": now, "agentId": page.agent_id,
            "layer": None if page.code is None else LAYERS_BY_CODE[page.code].value,
            "total": page.total, "offset": page.offset, "limit": page.limit,
            "records": [row for fields in page.rows
                        for row in record_data(fields, now, half_life)]}

    def _page(self, agent_id: str | None, layer: MemoryLayer | str | None, limit: int | None,
              offset: int, redact: bool) -> _Page:
        """A snapshot's page under a new capture (arguments checked as :meth:`snapshot`)."""
        agent = self._agent_id(agent_id)
        code = None if layer is None else parse_layer(layer).code
        size = None if limit is None else _count(limit, "limit", 1, _MAX_PAGE)
        skip = _count(offset, "offset", 0, _MAX_OFFSET)
        redact_many = self._redact(redact)
        capture = self._ring.add(agent, self._state.clock, self._scope(agent))
        total = taken = 0
        pages: list[ViewFields] = []
        want = size if size is not None else _MAX_PAGE
        for cap in capture.agents.values():
            rows = (np.arange(cap.size) if code is None
                    else np.flatnonzero(cap.layer == code))
            n = int(rows.shape[0])
            lo = max(0, skip - total)
            hi = min(n, lo + want - taken)
            total += n
            if lo >= hi:
                continue
            rows = rows[np.lexsort((-cap.key[rows], -cap.created[rows]))][lo:hi]
            pages.append(view_fields(cap, rows, redact_many))
            taken += hi - lo
        return _Page(capture.version, capture.now, agent, code, total, skip, size, pages)

    def diff(self, since: int, agent_id: str | None = None, *,
             redact: bool = True) -> MemoryDiff:
        """What changed since the capture ``since``, under a new capture version.

        ``since`` is a version returned by :meth:`snapshot` or :meth:`diff` of the same
        scope, or of all agents. Records are matched by id and compared by digest; a
        changed record lists its changed fields (``views.COMPARED_FIELDS``).

        Runtime complexity: O(changed records) digests and copies, O(n log n) numpy to
        match, O(added + changed) objects.

        Raises:
            InputInvalidError: ``since`` unknown, of another scope or older than the kept
                history (``details["field"] == "since"``: take a new snapshot), or a
                malformed agent id or ``redact`` (state unchanged).
        """
        agent = self._agent_id(agent_id)
        redact_many = self._redact(redact)
        old = self._ring.find(since, agent)
        capture = self._ring.add(agent, self._state.clock, self._scope(agent))
        added, removed, changed = compare(old.for_agent(agent), capture.agents, redact_many)
        views = [view for fields in added
                 for view in record_views(fields, capture.now, self._half_life)]
        views.sort(key=lambda v: v.id)
        return trusted(MemoryDiff, {
            "since": old.version, "version": capture.version, "now": capture.now,
            "agent_id": agent, "added": views, "removed": removed, "changed": changed})

    def explain(self, request: RetrievalRequest | Mapping[str, object], *,
                now: int | None = None, redact: bool = True) -> Explanation:
        """Why ``engine.retrieve(request, now=now)`` returns what it does.

        The retrieval runs once on the retrieval's own code path, traced and without
        effects; ``bundle_ids`` are exactly ``retrieve``'s records, in order, and every
        scored candidate's quantized score and rank are the ones it ordered by. An
        unknown agent gets an empty explanation (no candidates), as ``retrieve`` gives an
        empty bundle. See :mod:`f09_memory.introspection.explain`.

        Runtime complexity: the retrieval's, plus O(n log n) numpy for n candidates;
        ``Explanation.candidates`` builds its objects on first access.

        Raises:
            TokenBudgetUndefinedError: ``max_tokens`` missing or not positive (no limit).
            InputInvalidError: A malformed request, ``now`` or ``redact`` (the errors
                ``retrieve`` raises for the same request; state unchanged).
        """
        t = self._state.clock if now is None else check_now(now)
        redact_many = self._redact(redact)
        req, pressure, trace = self._retrieval.trace(request, t, self._filters.redact_text)
        return explanation(self._retriever, self._state.store.get(req.agent_id), req,
                           pressure, trace, t, redact_many)

    def stats(self) -> EngineStats:
        """Counts: agents, live records by layer, pending summaries, pressure, version.

        Runtime complexity: O(agents + pending tasks).
        """
        pending: dict[str, int] = {}
        for task in self._summarizer.pending():
            pending[task.agent_id] = pending.get(task.agent_id, 0) + 1
        per_agent = []
        totals = np.zeros(len(LAYERS_BY_CODE), dtype=np.int64)
        for am in self._state.store:
            counts = am.layer_counts
            totals += counts
            per_agent.append(trusted(AgentStats, {
                "agent_id": am.agent_id, "records": am.live,
                "by_layer": dict(zip(_LAYER_NAMES, counts.tolist(), strict=True)),
                "pending_summaries": pending.get(am.agent_id, 0)}))
        return trusted(EngineStats, {
            "now": self._state.clock, "agents": len(per_agent),
            "records": int(totals.sum()),
            "by_layer": dict(zip(_LAYER_NAMES, totals.tolist(), strict=True)),
            "pressure_state": self._state.pressure, "version": self._ring.version,
            "per_agent": per_agent})

    def record_view(self, record_id: str, *, redact: bool = True) -> RecordView:
        """The live record ``record_id`` as a :class:`RecordView` (recency at the clock). O(1).

        Raises:
            RecordNotFoundError: No live record has that id.
            InputInvalidError: ``redact`` is not a bool.
        """
        redact_many = self._redact(redact)
        parts = split_record_id(record_id)
        am = None if parts is None else self._state.store.get(parts[0])
        slot = None if am is None or parts is None else am.slot_of.get(parts[1])
        if am is None or slot is None:
            raise RecordNotFoundError(
                "no live record has that id; it may have expired, been summarized or "
                "forgotten, or never existed (ids look like 'agent:0000000042')",
                details={"field": "record_id"})
        cap = capture_agent(am, self._quantum, np.array([slot], dtype=np.intp))
        return record_views(view_fields(cap, [0], redact_many), self._state.clock,
                            self._half_life)[0]
