"""Executing ``memory_write`` / ``memory_search`` against a :class:`MemoryEngine` (seed 001).

:func:`execute_tool` is the tool executor of seed 001 (sections 4.5-4.7, 5.3): it validates
a model's arguments, runs the tool on the engine's public API and returns the seed's JSON
payload. It never raises to the model: a taxonomy error becomes ``{"ok": false, "error":
{"code", "message"}}``, and any other exception the code :data:`TOOL_INTERNAL_ERROR` with a
fixed, content-free message.

Storage design (engine records are immutable and there is no update or delete API):

- A ``memory_write`` entry is one record of the agent in :data:`TOOL_MEMORY_LAYER`, with
  ``source_event`` :data:`TOOL_SOURCE_EVENT`, one tag ``kw:<keyword>`` per keyword and the
  :class:`ToolContext` metadata as attributes (``sessionId``, ``traceId``, ``stepIndex``,
  ``callId``, plus ``memoryVersion``). The engine redacts content, tags and attributes.
- Entries are identified by their dedupe key: the stored (redacted) content, casefolded with
  whitespace collapsed. A write whose key matches an entry returns that entry's id. If it
  brings new keywords, the merge is persisted as a *new version*: a record with the same
  content, the union of keywords, ``memoryVersion + 1`` and the entry's importance. Readers
  (:func:`memory_entries`, search, bootstrap) group records by key, show the latest version
  and report the id of the oldest live one, so the id the model saw stays stable. A repeated
  write with no new keyword stores nothing. Older versions stay in the engine (retention
  may drop them) and remain visible to ``engine.records``/``engine.retrieve``.
- ``memory_search`` scores each entry by lexical overlap (seed 001, 4.7): distinct query
  tokens found in the content plus :data:`KEYWORD_MATCH_WEIGHT` times those found in the
  keywords, so a keyword match ranks above a content-only one; entries scoring 0 are left
  out. Ties are broken by the engine's
  hybrid ranking (``engine.retrieve`` with the query, strategy ``semantic``), then by id.
  The query is redacted like stored text first, so an e-mail address finds its placeholder.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from f09_memory._validate import check_now, is_text, not_text
from f09_memory.engine import MemoryEngine
from f09_memory.errors import InputInvalidError, MemoryEngineError
from f09_memory.redaction.redactor import Redactor
from f09_memory.schema.enums import MemoryLayer, Purpose, Strategy
from f09_memory.schema.records import AttributeValue, MemoryRecord
from f09_memory.schema.retrieval import RetrievalRequest
from f09_memory.tools.definitions import (
    KEYWORD_TAG_PREFIX,
    MEMORY_WRITE,
    MEMORY_WRITE_MAX_KEYWORDS,
    TOOL_NAMES,
    ToolLimits,
    validate_tool_arguments,
)

__all__ = [
    "DEFAULT_TOOL_AGENT_ID",
    "KEYWORD_MATCH_WEIGHT",
    "KEYWORD_TAG_PREFIX",
    "MEMORY_VERSION_ATTRIBUTE",
    "TOOL_INTERNAL_ERROR",
    "TOOL_MEMORY_LAYER",
    "TOOL_SOURCE_EVENT",
    "MemoryEntry",
    "ToolContext",
    "dedupe_key",
    "execute_tool",
    "execute_tool_json",
    "memory_entries",
]

logger = logging.getLogger("f09_memory")

TOOL_SOURCE_EVENT: Final = "tool:memory_write"
"""``source_event`` of every record written by ``memory_write``; marks the tool's entries."""

KEYWORD_MATCH_WEIGHT: Final = 2
"""Search score of a query token found in an entry's keywords (one in the content scores 1)."""

MEMORY_VERSION_ATTRIBUTE: Final = "memoryVersion"
"""Attribute numbering an entry's versions (1 for the first write, +1 per keyword merge)."""

TOOL_MEMORY_LAYER: Final = MemoryLayer.SEMANTIC
"""Layer of the tool's entries: durable facts, outside the overwriting episodic ring."""

DEFAULT_TOOL_AGENT_ID: Final = "default"
"""Agent whose memory the tools use when :func:`execute_tool` gets no context."""

TOOL_INTERNAL_ERROR: Final = "MEMORY_TOOL_INTERNAL_ERROR"
"""Error code for an unexpected exception (not a taxonomy code: nothing the model caused)."""

_INTERNAL_MESSAGE: Final = (
    "the memory tool failed unexpectedly; the call was not completed, continue without it"
)
_TOKEN = re.compile(r"<REDACT:sha256-[0-9a-f]+>|\w+")


def _check_optional(value: object, kind: type, field: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, kind):
        raise InputInvalidError(
            f"ToolContext.{field} must be {kind.__name__} or None, got {type(value).__name__}",
            details={"field": field},
        )
    if isinstance(value, str) and not is_text(value):
        raise not_text(f"ToolContext.{field}")


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who is calling a tool and from where (seed 001, 4.4: the dispatcher's context).

    The source fields are stored with a written entry as attributes ``sessionId``,
    ``traceId``, ``stepIndex`` and ``callId`` (``None`` ones are left out).

    Attributes:
        agent_id: The agent whose memory the tool reads and writes.
        session_id: The chat session of the call.
        trace_id: The run's trace id.
        step_index: The loop step of the call (>= 0).
        now: Logical time of the call (the engine clock when ``None``).
        call_id: The model's tool-call id.

    Raises:
        InputInvalidError: A field has the wrong type, or ``now`` is not logical time
            (checked on construction).
    """

    agent_id: str
    session_id: str | None = None
    trace_id: str | None = None
    step_index: int | None = None
    now: int | None = None
    call_id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.agent_id, str) or not self.agent_id:
            raise InputInvalidError(
                "ToolContext.agent_id must be a non-empty string", details={"field": "agent_id"}
            )
        if not is_text(self.agent_id):
            raise not_text("ToolContext.agent_id")
        _check_optional(self.session_id, str, "session_id")
        _check_optional(self.trace_id, str, "trace_id")
        _check_optional(self.call_id, str, "call_id")
        _check_optional(self.step_index, int, "step_index")
        if self.step_index is not None and not 0 <= self.step_index < 2**62:
            raise InputInvalidError(
                "ToolContext.step_index must be in 0..2**62-1", details={"field": "step_index"}
            )
        if self.now is not None:
            check_now(self.now, "ToolContext.now")

    def attributes(self) -> dict[str, AttributeValue]:
        """Return the source metadata stored with a written entry (``None`` fields left out)."""
        pairs: tuple[tuple[str, AttributeValue | None], ...] = (
            ("sessionId", self.session_id),
            ("traceId", self.trace_id),
            ("stepIndex", self.step_index),
            ("callId", self.call_id),
        )
        return {key: value for key, value in pairs if value is not None}


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One long-term memory entry written through ``memory_write``: its latest version.

    Attributes:
        id: The entry's stable id: the record id of its oldest live version.
        record: The latest version (content, keywords in tags, source attributes).
        keywords: The latest version's keywords, in stored order.
        version: The latest version's ``memoryVersion``.
    """

    id: str
    record: MemoryRecord
    keywords: tuple[str, ...]
    version: int

    @property
    def content(self) -> str:
        """The stored (redacted) content."""
        return self.record.content

    @property
    def updated_at(self) -> int:
        """Logical time of the latest version."""
        return self.record.created_at

    def to_item(self) -> dict[str, Any]:
        """Return the seed's JSON item: ``{"id", "content", "keywords", "updated_at"}``."""
        return {
            "id": self.id,
            "content": self.content,
            "keywords": list(self.keywords),
            "updated_at": self.updated_at,
        }


def dedupe_key(content: str) -> str:
    """Return the dedupe key of stored content: casefolded, whitespace runs collapsed.

    Args:
        content: Stored (already redacted) content.

    Returns:
        The key; two entries with the same key are one memory.
    """
    return " ".join(content.casefold().split())


def _normalize_keyword(keyword: str) -> str:
    return " ".join(keyword.casefold().split())


def _keywords_of(record: MemoryRecord) -> tuple[str, ...]:
    n = len(KEYWORD_TAG_PREFIX)
    return tuple(t[n:] for t in record.metadata.tags if t.startswith(KEYWORD_TAG_PREFIX))


def _version_of(record: MemoryRecord) -> int:
    value = record.metadata.attributes.get(MEMORY_VERSION_ATTRIBUTE)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return 1


def memory_entries(
    engine: MemoryEngine, agent_id: str, *, now: int | None = None
) -> list[MemoryEntry]:
    """List an agent's ``memory_write`` entries, newest first (seed 001 ``listEntries``).

    Records with ``source_event == TOOL_SOURCE_EVENT`` are grouped by :func:`dedupe_key`;
    each group is one entry showing its latest version (highest ``memoryVersion``, then
    ``created_at``, then record id). Ordering guarantee: ``updated_at`` descending, then
    latest record id descending. Runtime complexity: ``O(n log n)`` for the agent's ``n``
    live records.

    Args:
        engine: The engine.
        agent_id: The agent.
        now: If given, records whose TTL has run out by ``now`` are skipped.

    Returns:
        The entries (empty for an unknown agent).

    Raises:
        InputInvalidError: ``agent_id`` is not a valid agent id.
    """
    groups: dict[str, list[MemoryRecord]] = {}
    for record in engine.records(agent_id):
        if record.metadata.source_event != TOOL_SOURCE_EVENT:
            continue
        if now is not None and record.ttl is not None and record.created_at + record.ttl <= now:
            continue
        groups.setdefault(dedupe_key(record.content), []).append(record)
    entries = []
    for versions in groups.values():
        versions.sort(key=lambda r: (_version_of(r), r.created_at, r.id))
        latest = versions[-1]
        entries.append(
            MemoryEntry(versions[0].id, latest, _keywords_of(latest), _version_of(latest))
        )
    entries.sort(key=lambda e: (e.record.created_at, e.record.id), reverse=True)
    return entries


def _redactor(engine: MemoryEngine) -> Redactor:
    """A redactor equal to the engine's ingestion redactor (same patterns, key and mode)."""
    return Redactor.from_config(engine.config)


def _context(context: object) -> ToolContext:
    if context is None:
        return ToolContext(DEFAULT_TOOL_AGENT_ID)
    if not isinstance(context, ToolContext):
        raise InputInvalidError(
            f"context must be a ToolContext or None, got {type(context).__name__}",
            details={"field": "context"},
        )
    return context


def _write(engine: MemoryEngine, args: Mapping[str, Any], ctx: ToolContext) -> dict[str, Any]:
    redact = _redactor(engine).redact_text
    content: str = args["content"].strip()
    keywords = list(dict.fromkeys(_normalize_keyword(k) for k in args["keywords"]))
    longest = ToolLimits.of(engine.config).keyword_chars
    if any(len(k) > longest for k in keywords):  # casefolding can lengthen one ("ß" -> "ss")
        raise InputInvalidError(
            f"{MEMORY_WRITE}: argument `keywords` must hold keywords of at most {longest:,} "
            "characters once casefolded",
            details={"tool": MEMORY_WRITE, "field": "keywords"},
        )
    key = dedupe_key(redact(content))
    existing = next(
        (e for e in memory_entries(engine, ctx.agent_id, now=ctx.now)
         if dedupe_key(e.content) == key),
        None,
    )
    if existing is None:
        attributes: dict[str, AttributeValue] = {**ctx.attributes(), MEMORY_VERSION_ATTRIBUTE: 1}
        record = engine.ingest(
            ctx.agent_id,
            content,
            layer=TOOL_MEMORY_LAYER,
            tags=[KEYWORD_TAG_PREFIX + k for k in keywords],
            metadata={"attributes": attributes},
            source_event=TOOL_SOURCE_EVENT,
            now=ctx.now,
        )
        return {"ok": True, "id": record.id, "content": record.content,
                "keywords": list(_keywords_of(record))}
    n = len(KEYWORD_TAG_PREFIX)
    stored_new = [redact(KEYWORD_TAG_PREFIX + k)[n:] for k in keywords]
    merged = list(dict.fromkeys((*existing.keywords, *stored_new)))[:MEMORY_WRITE_MAX_KEYWORDS]
    if len(merged) > len(existing.keywords):
        old = existing.record
        attributes = {
            **old.metadata.attributes,
            **ctx.attributes(),
            MEMORY_VERSION_ATTRIBUTE: existing.version + 1,
        }
        engine.ingest(
            ctx.agent_id,
            old.content,
            layer=old.layer,
            importance=old.importance,
            tags=[KEYWORD_TAG_PREFIX + k for k in merged],
            metadata={"attributes": attributes},
            source_event=TOOL_SOURCE_EVENT,
            now=ctx.now,
        )
    return {"ok": True, "id": existing.id, "content": existing.content, "keywords": merged}


def _tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.casefold()))


def _search(engine: MemoryEngine, args: Mapping[str, Any], ctx: ToolContext) -> dict[str, Any]:
    query: str = _redactor(engine).redact_text(args["query"])
    limit: int = args["limit"]
    entries = memory_entries(engine, ctx.agent_id, now=ctx.now)
    wanted = _tokens(query)
    scored: list[tuple[int, MemoryEntry]] = []
    for entry in entries:
        keyword_tokens = _tokens(" ".join(entry.keywords))
        score = len(wanted & _tokens(entry.content)) + KEYWORD_MATCH_WEIGHT * len(
            wanted & keyword_tokens
        )
        if score > 0:
            scored.append((score, entry))
    if not scored:
        return {"ok": True, "total": 0, "items": []}
    bundle = engine.retrieve(
        RetrievalRequest(
            agent_id=ctx.agent_id,
            purpose=Purpose.REASONING,
            max_tokens=engine.config.max_context_tokens,
            strategy=Strategy.SEMANTIC,
            query=query,
        ),
        now=ctx.now,
    )
    rank = {record.id: i for i, record in enumerate(bundle.records)}
    unranked = len(rank)
    scored.sort(key=lambda se: (-se[0], rank.get(se[1].record.id, unranked), se[1].id))
    items = [{**entry.to_item(), "score": score} for score, entry in scored[:limit]]
    return {"ok": True, "total": len(items), "items": items}


def execute_tool(
    engine: MemoryEngine,
    name: str,
    arguments: Mapping[str, Any] | str | None,
    context: ToolContext | None = None,
) -> dict[str, Any]:
    """Run one memory tool call and return its JSON payload. Never raises an ``Exception``.

    Payloads (seed 001, 5.3), all JSON-serializable:

    - ``memory_write``: ``{"ok": true, "id", "content", "keywords"}`` — the stored
      (redacted) content and normalized keywords (casefolded, whitespace collapsed, first
      occurrence kept). A duplicate (same :func:`dedupe_key`) returns the existing id and
      the merged keywords (see the module docstring for how a merge is persisted).
    - ``memory_search``: ``{"ok": true, "total", "items"}``; each item ``{"id",
      "content", "keywords", "updated_at", "score"}`` (``score``: the lexical overlap,
      content hits plus :data:`KEYWORD_MATCH_WEIGHT` per keyword hit), best first, at most
      ``limit``; ``total`` is the number of items returned.
    - A failure: ``{"ok": false, "error": {"code", "message"}}`` with the taxonomy code of
      the :class:`MemoryEngineError` (``MEMORY_INPUT_INVALID`` for bad arguments or an
      unknown tool, ``MEMORY_CAPACITY_EXCEEDED`` for a full agent, ...) or
      :data:`TOOL_INTERNAL_ERROR`. A rejected call stores nothing.

    Runtime complexity: ``O(n log n)`` for the agent's ``n`` live records (plus one
    ``engine.retrieve`` for a search with matches).

    Args:
        engine: The engine holding the memories.
        name: The tool name from the model's call.
        arguments: The arguments, as a mapping or a JSON object string, checked against
            the engine's size limits (:func:`validate_tool_arguments` with its config); a
            ``null`` optional argument means absent (OpenAI strict mode sends them).
        context: The caller; ``None`` uses agent :data:`DEFAULT_TOOL_AGENT_ID` and the
            engine clock.

    Returns:
        The payload dict.
    """
    shown = name if name in TOOL_NAMES else "(unknown tool)"  # a model's name is not logged
    try:
        args = validate_tool_arguments(name, arguments, config=engine.config)
        ctx = _context(context)
        payload = _write(engine, args, ctx) if name == MEMORY_WRITE else _search(engine, args, ctx)
    except MemoryEngineError as exc:
        logger.debug("[MEM][TOOL] %s rejected: %s", shown, exc.code.value)
        return {"ok": False, "error": {"code": exc.code.value, "message": exc.message}}
    except Exception as exc:  # the model must never see an exception
        logger.error("[MEM][TOOL] %s failed unexpectedly (%s)", shown, type(exc).__name__)
        return {"ok": False, "error": {"code": TOOL_INTERNAL_ERROR, "message": _INTERNAL_MESSAGE}}
    logger.debug("[MEM][TOOL] %s ok", shown)
    return payload


def execute_tool_json(
    engine: MemoryEngine,
    name: str,
    arguments: Mapping[str, Any] | str | None,
    context: ToolContext | None = None,
) -> str:
    """Run :func:`execute_tool` and return the payload as the tool-result text (JSON).

    Args:
        engine: The engine holding the memories.
        name: The tool name from the model's call.
        arguments: The arguments, as a mapping or a JSON object string.
        context: The caller (see :func:`execute_tool`).

    Returns:
        Compact JSON (non-ASCII kept), keys in payload order.
    """
    return json.dumps(
        execute_tool(engine, name, arguments, context),
        ensure_ascii=False,
        separators=(",", ":"),
    )
