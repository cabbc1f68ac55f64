"""The introspection models: what an operator sees of the memory (JSON in camelCase).

Every model is a :class:`~f09_memory.schema.base.BoundaryModel` (frozen, camelCase
aliases), so ``model_dump(by_alias=True, mode="json")`` is the wire format of the
``/api/...`` endpoints and of the Memory Viewer.

- :class:`RecordView`: one record as stored (or redacted), with its recency now and its
  digest; :class:`MemorySnapshot` a page of them under a capture version;
- :class:`FieldChange`, :class:`RecordChange`, :class:`MemoryDiff`: what changed since a
  capture;
- :class:`AgentStats`, :class:`EngineStats`: counts.

The explanation models live in :mod:`f09_memory.introspection.explanation`.
"""

from __future__ import annotations

from typing import Any, Literal

from f09_memory.schema.base import BoundaryModel
from f09_memory.schema.enums import MemoryLayer, PressureState

__all__ = [
    "AgentStats",
    "EngineStats",
    "FieldChange",
    "MemoryDiff",
    "MemorySnapshot",
    "RecordChange",
    "RecordStatus",
    "RecordView",
]

RecordStatus = Literal["active", "superseded", "quarantined"]
"""A record's claim status (``RetrievalRequest.statuses``)."""


class RecordView(BoundaryModel):
    """One live record as an operator sees it.

    Text (``content``, ``tags``, ``source_event``) is as stored, or passed through an
    enabled redactor when the view was asked with ``redact=True`` (the default).
    ``recency`` is ``exp(-(now - recency_anchor) / decay_half_life_ms)`` at the view's
    ``now``; ``digest`` (32 hex digits) is the record's digest in the state hash: it
    changes iff the stored record does.
    """

    id: str
    agent_id: str
    layer: MemoryLayer
    content: str
    importance: float
    recency: float
    created_at: int
    recency_anchor: int
    ttl: int | None
    """Time to live from ``created_at`` (``None``: no expiry)."""
    expires_at: int | None
    """``created_at + ttl`` (``None``: no expiry)."""
    tags: list[str]
    status: RecordStatus
    tokens_estimate: int
    redacted: bool
    """Whether the engine replaced private data in it at ingest."""
    source_event: str | None
    digest: str


class MemorySnapshot(BoundaryModel):
    """A page of records under a capture version (``Introspector.snapshot``).

    ``records`` are ordered by agent id ascending, then ``created_at`` descending, then id
    descending (newest first; stable). ``total`` counts the records matching the scope and
    layer before paging. ``version`` names the capture of the whole scope (all of its
    records, whatever the page) to pass as ``diff(since=version)``.
    """

    version: int
    now: int
    agent_id: str | None
    layer: MemoryLayer | None
    total: int
    offset: int
    limit: int | None
    records: list[RecordView]


class FieldChange(BoundaryModel):
    """One field of a record, before and after (JSON values, as in :class:`RecordView`)."""

    field: str
    """The field's JSON name (``content``, ``importance``, ``tags``, ``digest``, ...)."""
    before: Any
    after: Any


class RecordChange(BoundaryModel):
    """A record present in both captures whose digest changed; ``changes`` sorted by field."""

    id: str
    changes: list[FieldChange]


class MemoryDiff(BoundaryModel):
    """What changed between the capture ``since`` and now (``Introspector.diff``).

    ``version`` is the new capture (pass it as the next ``since``). ``added`` are records
    live now and not at ``since``, ``removed`` the ids live then and not now, ``changed``
    the records whose digest changed; each list sorted by id.
    """

    since: int
    version: int
    now: int
    agent_id: str | None
    added: list[RecordView]
    removed: list[str]
    changed: list[RecordChange]


class AgentStats(BoundaryModel):
    """One agent's counts: live records, by layer, and summarization tasks not done."""

    agent_id: str
    records: int
    by_layer: dict[str, int]
    """Live records per layer name, every layer listed (in layer order)."""
    pending_summaries: int
    """Summarization tasks of the agent queued or running (``summarization.pending``)."""


class EngineStats(BoundaryModel):
    """The engine's counts (``Introspector.stats``); ``per_agent`` sorted by agent id."""

    now: int
    agents: int
    records: int
    by_layer: dict[str, int]
    pressure_state: PressureState
    version: int
    """The introspector's latest capture version (0 before any)."""
    per_agent: list[AgentStats]
