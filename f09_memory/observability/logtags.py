"""The spec section 20 log tags: one tagged line per engine event, ids and counts only.

The engine already logs some tags itself: ``[MEM][CREATE]``, ``[MEM][REDACT]`` and
``[MEM][EXPIRE]`` at DEBUG for every record event (``core.writer``), ``[MEM][RETRIEVE]`` at
DEBUG per retrieval (``retrieval.service``) and ``[MEM][ERROR]`` when a bus handler raises
(``bus``). :func:`attach_log_tags` adds the rest, at a level of the host's choosing, from
the bus: ``[MEM][SUMMARY]`` (queued, completed, failed, timeout, late), ``[MEM][COMPACT]``
and ``[MEM][ERROR]`` for an embedding failure, plus CREATE, REDACT and RETRIEVE lines, so
one logger carries every tag.

Privacy: a line names ids, layers, purposes, pressure states, counts and pattern labels;
never a record's content, a query, a failure reason (the host's or an adapter's text) or
any other text that came from outside.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from f09_memory.bus import (
    EmbeddingFailed,
    MemoryCompaction,
    RecordCreated,
    RecordRedacted,
    RetrievalPerformed,
    SummarizationCompleted,
    SummarizationFailed,
    SummarizationLate,
    SummarizationQueued,
    SummarizationTimedOut,
)
from f09_memory.engine import MemoryEngine
from f09_memory.errors import InputInvalidError

__all__ = ["LOG_TAGS", "attach_log_tags"]

LOG_TAGS: dict[str, str] = {
    RecordCreated.name: "[MEM][CREATE]",
    RecordRedacted.name: "[MEM][REDACT]",
    RetrievalPerformed.name: "[MEM][RETRIEVE]",
    SummarizationQueued.name: "[MEM][SUMMARY]",
    SummarizationCompleted.name: "[MEM][SUMMARY]",
    SummarizationFailed.name: "[MEM][SUMMARY]",
    SummarizationTimedOut.name: "[MEM][SUMMARY]",
    SummarizationLate.name: "[MEM][SUMMARY]",
    MemoryCompaction.name: "[MEM][COMPACT]",
    EmbeddingFailed.name: "[MEM][ERROR]",
}
"""Event name -> the tag :func:`attach_log_tags` logs it under."""

_Line = tuple[str, tuple[Any, ...]]


def _created(ev: RecordCreated) -> _Line:
    return ("id=%s agent=%s layer=%s importance=%.3f",
            (ev.id, ev.agent_id, ev.layer, ev.importance))


def _redacted(ev: RecordRedacted) -> _Line:
    return "id=%s patterns=%s", (ev.id, ",".join(ev.patterns))


def _retrieval(ev: RetrievalPerformed) -> _Line:
    return ("agent=%s purpose=%s candidates=%d used=%d truncated=%s pressure=%s "
            "compressed=%s ms=%.3f",
            (ev.agent_id, ev.purpose, ev.candidate_count, ev.used, ev.truncated,
             ev.pressure_state, ev.compression_applied, ev.time_ms))


def _queued(ev: SummarizationQueued) -> _Line:
    return "queued task=%s agent=%s sources=%d", (ev.task_id, ev.agent_id, ev.source_count)


def _completed(ev: SummarizationCompleted) -> _Line:
    return ("completed task=%s summary=%s reduction=%.3f",
            (ev.task_id, ev.summary_record_id, ev.reduction_ratio))


def _failed(ev: SummarizationFailed) -> _Line:
    return "failed task=%s (sources kept)", (ev.task_id,)  # the reason may be host text


def _timeout(ev: SummarizationTimedOut) -> _Line:
    return ("timeout task=%s agent=%s after=%dms (heuristic summary)",
            (ev.task_id, ev.agent_id, ev.timeout_ms))


def _late(ev: SummarizationLate) -> _Line:
    return "late answer ignored task=%s", (ev.task_id,)


def _compaction(ev: MemoryCompaction) -> _Line:
    return "agent=%s removed=%d remaining=%d", (ev.agent_id, ev.removed, ev.remaining)


def _embedding_failed(ev: EmbeddingFailed) -> _Line:
    # The reason is an adapter's exception text: it may quote what it was given.
    return ("embedding failed agent=%s records=%d (stored un-embedded, retried by tick)",
            (ev.agent_id, len(ev.record_ids)))


_LINES: dict[str, Callable[[Any], _Line]] = {
    RecordCreated.name: _created,
    RecordRedacted.name: _redacted,
    RetrievalPerformed.name: _retrieval,
    SummarizationQueued.name: _queued,
    SummarizationCompleted.name: _completed,
    SummarizationFailed.name: _failed,
    SummarizationTimedOut.name: _timeout,
    SummarizationLate.name: _late,
    MemoryCompaction.name: _compaction,
    EmbeddingFailed.name: _embedding_failed,
}


def attach_log_tags(engine: MemoryEngine, *, logger: logging.Logger | None = None,
                    level: int = logging.INFO) -> Callable[[], None]:
    """Log one ``[MEM][...]`` line per engine event until the returned function is called.

    Lines go to ``logger`` (default ``f09_memory.observability``) at ``level``; the
    ``[MEM][ERROR]`` lines at ``level`` or WARNING, whichever is higher. Each event of
    :data:`LOG_TAGS` is logged as ``<tag> <fields>`` with ids, layers and counts only.
    Subscribing makes the engine build those events (record creations included), so this
    is for debugging and operations, not for a crowd at full speed.

    Args:
        engine: The engine whose bus is listened to.
        logger: Where the lines go.
        level: A ``logging`` level (an int) for the lines.

    Returns:
        A function that stops the logging (idempotent).

    Raises:
        InputInvalidError: ``engine`` is not a ``MemoryEngine``, ``logger`` not a
            ``logging.Logger`` or ``level`` not an int.
    """
    if not isinstance(engine, MemoryEngine):
        raise InputInvalidError("engine must be a MemoryEngine", details={"field": "engine"})
    if logger is None:
        logger = logging.getLogger("f09_memory.observability")
    elif not isinstance(logger, logging.Logger):
        raise InputInvalidError("logger must be a logging.Logger", details={"field": "logger"})
    if isinstance(level, bool) or not isinstance(level, int) or level < 0:
        raise InputInvalidError("level must be a logging level (an int >= 0, e.g. "
                                "logging.INFO)", details={"field": "level"})
    out = logger

    def handler(name: str) -> Callable[[Any], None]:
        tag = LOG_TAGS[name]
        line = _LINES[name]
        at = max(level, logging.WARNING) if tag == "[MEM][ERROR]" else level

        def log(ev: Any) -> None:
            if out.isEnabledFor(at):
                fmt, args = line(ev)
                out.log(at, f"{tag} {fmt}", *args)

        return log

    unsubscribes = [engine.bus.subscribe(name, handler(name)) for name in LOG_TAGS]

    def detach() -> None:
        for unsubscribe in unsubscribes:
            unsubscribe()

    return detach
