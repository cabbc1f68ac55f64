"""EngineBus: declared events, typed payloads, synchronous dispatch in subscription order.

Events (spec section 10, plus ``memory:pressure:changed`` and ``memory:embedding:failed``)::

    memory:record:created          {id, layer, agentId, importance}
    memory:record:expired          {id, layer, reason}
    memory:record:redacted         {id, patterns}
    memory:summarization:queued    {taskId, agentId, sourceCount}
    memory:summarization:completed {taskId, summaryRecordId, reductionRatio}
    memory:summarization:failed    {taskId, reason}
    memory:summarization:timeout   {taskId, agentId, timeoutMs}
    memory:summarization:late      {taskId}
    memory:retrieval               {agentId, purpose, candidateCount, used, truncated,
                                    pressureState, compressionApplied, timeMs}
    memory:compaction              {agentId, removed, remaining}
    memory:decay:applied           {agentId, affected}
    memory:pressure:changed        {previous, current}
    memory:embedding:failed        {agentId, recordIds, reason}
    memory:tick:behind             {ticks, agentsDue, overSoftCaps, pendingSummaries,
                                    embeddingRetries, indexWork}
    memory:tick                    {now, tickMs, usedUnits, records}
    memory:social:changed          {agentId, otherAgentId, change, trust, recordId}

``timeMs`` and ``tickMs`` are wall-clock durations (a perf counter) for metrics: no hash
includes an event, and the two vary from run to run. Every other field is deterministic.

A pattern is an event name, a prefix ending in ``:*`` (``memory:summarization:*``) or
``*``; one that matches no declared event raises. Every event is emitted after the state
change it reports is complete, so a handler always sees a consistent engine.

Handler errors: with ``handler_errors="isolate"`` (the default) an exception in a handler is
logged under ``[MEM][ERROR]``, kept in :attr:`EngineBus.handler_errors`, and dispatch goes on
to the next handler. With ``"propagate"`` the first exception is re-raised once every handler
has run; the engine state is already complete and consistent at that point.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

from f09_memory.errors import InputInvalidError

__all__ = [
    "EVENT_NAMES",
    "DecayApplied",
    "EmbeddingFailed",
    "EngineBus",
    "Event",
    "EventLog",
    "Handler",
    "MemoryCompaction",
    "PressureChanged",
    "RecordCreated",
    "RecordExpired",
    "RecordRedacted",
    "RecordUpdated",
    "RetrievalPerformed",
    "SocialChanged",
    "SummarizationCompleted",
    "SummarizationFailed",
    "SummarizationLate",
    "SummarizationQueued",
    "SummarizationTimedOut",
    "TickBehind",
    "TickCompleted",
]

logger = logging.getLogger("f09_memory")


@dataclass(frozen=True, slots=True)
class _Payload:
    name: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the spec-shaped payload (camelCase keys)."""
        return {_camel(k): v for k, v in asdict(self).items()}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@dataclass(frozen=True, slots=True)
class RecordCreated(_Payload):
    """A record was stored."""

    name: ClassVar[str] = "memory:record:created"
    id: str
    layer: str
    agent_id: str
    importance: float


@dataclass(frozen=True, slots=True)
class RecordExpired(_Payload):
    """A record left memory.

    ``reason`` is ``ttl``, ``overflow`` (ring full), ``retention``, ``summarized`` or
    ``forgotten`` (``engine.forget``).
    """

    name: ClassVar[str] = "memory:record:expired"
    id: str
    layer: str
    reason: str = "ttl"


@dataclass(frozen=True, slots=True)
class RecordUpdated(_Payload):
    """A record was changed in place.

    ``fields`` names what changed; ``reason`` is ``update`` (``engine.update``), ``dedup``
    (the same content again reinforced it) or ``procedural`` (the pattern miner reinforced
    a procedural record).
    """

    name: ClassVar[str] = "memory:record:updated"
    id: str
    fields: tuple[str, ...] = ()
    reason: str = "update"


@dataclass(frozen=True, slots=True)
class RecordRedacted(_Payload):
    """A record had private data replaced; ``patterns`` are the labels that matched."""

    name: ClassVar[str] = "memory:record:redacted"
    id: str
    patterns: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SummarizationQueued(_Payload):
    """A summarization task was queued."""

    name: ClassVar[str] = "memory:summarization:queued"
    task_id: str
    agent_id: str
    source_count: int


@dataclass(frozen=True, slots=True)
class SummarizationCompleted(_Payload):
    """A summary record replaced its sources."""

    name: ClassVar[str] = "memory:summarization:completed"
    task_id: str
    summary_record_id: str
    reduction_ratio: float


@dataclass(frozen=True, slots=True)
class SummarizationFailed(_Payload):
    """A summarization task failed; its sources are kept."""

    name: ClassVar[str] = "memory:summarization:failed"
    task_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class SummarizationTimedOut(_Payload):
    """The LLM did not answer a task in time; the heuristic summary replaces its answer."""

    name: ClassVar[str] = "memory:summarization:timeout"
    task_id: str
    agent_id: str
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class SummarizationLate(_Payload):
    """An answer came for a task that had timed out; it was ignored."""

    name: ClassVar[str] = "memory:summarization:late"
    task_id: str


@dataclass(frozen=True, slots=True)
class TickBehind(_Payload):
    """The tick backlog grew ``ticks`` ticks in a row: the budget does not keep up."""

    name: ClassVar[str] = "memory:tick:behind"
    ticks: int
    agents_due: int
    over_soft_caps: int
    pending_summaries: int
    embedding_retries: int
    index_work: int


@dataclass(frozen=True, slots=True)
class TickCompleted(_Payload):
    """A ``tick`` finished (``memory:tick``), after the events of its work.

    ``tick_ms`` is the tick's wall time in ms (a perf counter: metrics only, never hashed);
    ``used_units`` the work units it spent; ``records`` the live records of every agent
    after it.
    """

    name: ClassVar[str] = "memory:tick"
    now: int
    tick_ms: float
    used_units: int
    records: int


@dataclass(frozen=True, slots=True)
class RetrievalPerformed(_Payload):
    """A bundle was built (``memory:retrieval``)."""

    name: ClassVar[str] = "memory:retrieval"
    agent_id: str
    purpose: str
    candidate_count: int
    used: int
    truncated: bool
    pressure_state: str
    compression_applied: bool = False
    time_ms: float = 0.0
    """Wall time of the retrieval in ms (the bundle's ``diagnostics.time_ms``; never hashed)."""


@dataclass(frozen=True, slots=True)
class MemoryCompaction(_Payload):
    """Records of an agent were pruned by the retention policy (reason ``retention``).

    By a tick's compaction slice, or at ingest when a layer passed its cap plus the slack;
    ``remaining`` is the agent's live records after it.
    """

    name: ClassVar[str] = "memory:compaction"
    agent_id: str
    removed: int
    remaining: int


@dataclass(frozen=True, slots=True)
class DecayApplied(_Payload):
    """An agent's live records were aged at a tick (decay is lazy: a function of ``now``)."""

    name: ClassVar[str] = "memory:decay:applied"
    agent_id: str
    affected: int


@dataclass(frozen=True, slots=True)
class PressureChanged(_Payload):
    """The engine's pressure state changed."""

    name: ClassVar[str] = "memory:pressure:changed"
    previous: str
    current: str


@dataclass(frozen=True, slots=True)
class EmbeddingFailed(_Payload):
    """The embedding provider failed; the records are stored un-embedded and retried later."""

    name: ClassVar[str] = "memory:embedding:failed"
    agent_id: str
    record_ids: tuple[str, ...] = ()
    reason: str = ""


@dataclass(frozen=True, slots=True)
class SocialChanged(_Payload):
    """A notable change in an agent's view of another (the social ledger, index 15).

    ``change`` is ``first-meeting``, ``trust-flip``, ``betrayal`` or ``hearsay``; ``trust``
    is the agent's trust in the other after it; ``record_id`` the social record created
    (``None`` with ``social.records`` off). Ids and numbers only, never text.
    """

    name: ClassVar[str] = "memory:social:changed"
    agent_id: str
    other_agent_id: str
    change: str
    trust: float
    record_id: str | None = None


Event = (
    RecordCreated | RecordExpired | RecordUpdated | RecordRedacted | SummarizationQueued
    | SummarizationCompleted | SummarizationFailed | SummarizationTimedOut | SummarizationLate
    | RetrievalPerformed | MemoryCompaction | DecayApplied | PressureChanged | EmbeddingFailed
    | TickBehind | TickCompleted | SocialChanged
)
Handler = Callable[[Any], None]

_PAYLOADS: tuple[type[_Payload], ...] = (
    RecordCreated, RecordExpired, RecordUpdated, RecordRedacted, SummarizationQueued,
    SummarizationCompleted,
    SummarizationFailed, SummarizationTimedOut, SummarizationLate, RetrievalPerformed,
    MemoryCompaction, DecayApplied, PressureChanged, EmbeddingFailed, TickBehind,
    TickCompleted, SocialChanged,
)
EVENT_NAMES: tuple[str, ...] = tuple(p.name for p in _PAYLOADS)


def _matches(pattern: str, name: str) -> bool:
    if pattern == "*":
        return True
    if pattern.endswith(":*"):
        return name.startswith(pattern[:-1])
    return pattern == name


@dataclass
class EngineBus:
    """Publish/subscribe over the declared events.

    Runtime complexity: ``emit`` is O(handlers of that event); ``wants`` is O(1), so hot paths
    skip building a payload nobody listens to. ``subscribe`` is O(events).
    """

    handler_errors: Literal["isolate", "propagate"] = "isolate"
    errors_kept: int = 100
    _subs: list[tuple[int, str, Handler]] = field(default_factory=list)
    _routes: dict[str, tuple[Handler, ...]] = field(default_factory=dict)
    _next: int = 0
    errors: deque[tuple[str, str]] = field(init=False)

    def __post_init__(self) -> None:
        self.errors = deque(maxlen=self.errors_kept)

    def subscribe(self, pattern: str, handler: Handler) -> Callable[[], None]:
        """Call ``handler(payload)`` for every event matching ``pattern``.

        Args:
            pattern: An event name, a ``prefix:*`` wildcard, or ``*``.
            handler: Called synchronously with the typed payload.

        Returns:
            A function that removes this subscription (idempotent).

        Raises:
            InputInvalidError: ``pattern`` matches no declared event, or ``handler`` is not
                callable.
        """
        if not callable(handler):
            raise InputInvalidError("handler must be callable", details={"pattern": pattern})
        if not isinstance(pattern, str) or not any(_matches(pattern, n) for n in EVENT_NAMES):
            raise InputInvalidError(
                f"unknown event pattern {pattern!r}; subscribe to one of {list(EVENT_NAMES)}, "
                "a 'prefix:*' wildcard of them, or '*'",
                details={"pattern": pattern, "events": list(EVENT_NAMES)},
            )
        token = self._next
        self._next += 1
        self._subs.append((token, pattern, handler))
        self._rebuild()

        def unsubscribe() -> None:
            before = len(self._subs)
            self._subs = [s for s in self._subs if s[0] != token]
            if len(self._subs) != before:
                self._rebuild()

        return unsubscribe

    def _rebuild(self) -> None:
        self._routes = {
            name: tuple(h for _, p, h in self._subs if _matches(p, name)) for name in EVENT_NAMES
        }
        self._routes = {k: v for k, v in self._routes.items() if v}

    def wants(self, name: str) -> bool:
        """Whether any handler listens to event ``name``."""
        return name in self._routes

    def emit(self, payload: Event) -> None:
        """Dispatch ``payload`` to its handlers in subscription order."""
        handlers = self._routes.get(payload.name)
        if not handlers:
            return
        first: BaseException | None = None
        for handler in handlers:
            try:
                handler(payload)
            except Exception as exc:
                # The exception text may carry a handler's own data; log only its type.
                self.errors.append((payload.name, type(exc).__name__))
                logger.error(
                    "[MEM][ERROR] handler %r raised %s on %s",
                    getattr(handler, "__qualname__", handler),
                    type(exc).__name__,
                    payload.name,
                )
                if first is None:
                    first = exc
        if first is not None and self.handler_errors == "propagate":
            raise first

    @property
    def handler_errors_seen(self) -> list[tuple[str, str]]:
        """The last ``errors_kept`` isolated handler failures as ``(event, exception type)``."""
        return list(self.errors)


class EventLog:
    """Records every payload matching ``pattern`` (a bounded list when ``maxlen`` is set)."""

    def __init__(self, bus: EngineBus, pattern: str = "*", *, maxlen: int | None = None) -> None:
        self.events: deque[Event] = deque(maxlen=maxlen)
        self._unsubscribe = bus.subscribe(pattern, self.events.append)

    def names(self) -> list[str]:
        """Event names in emission order."""
        return [e.name for e in self.events]

    def of(self, name: str) -> list[Event]:
        """The recorded payloads of one event name."""
        return [e for e in self.events if e.name == name]

    def close(self) -> None:
        """Stop recording."""
        self._unsubscribe()

    @contextmanager
    def recording(self) -> Iterator[EventLog]:
        """Use as ``with log.recording(): ...``; stops recording on exit."""
        try:
            yield self
        finally:
            self.close()
