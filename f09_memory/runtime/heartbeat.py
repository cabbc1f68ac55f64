"""Heartbeat auto-store: capture the key moments of new turns when the host goes idle.

Seed 000 prompt 2 and PRD section 5. The host (its idle timer, its heartbeat tick) calls
:func:`heartbeat_store` with the conversation and the index of the last turn it already
processed; the helper detects key moments in the new turns, stores each as a tagged
memory, and falls back to one compact ``session_snapshot`` when there is none.

Layers. The engine has no category field, so a category picks a layer (and is kept in the
``category`` attribute). Following the PRD, what must outlive the session goes to the
semantic layer: decisions, preferences and facts (PRD 4.1, 11: "decisions made in-session
appear in the next session") and also open threads (blockers, stored as ``open_thread``)
and commitments, because the PRD's first goal is that decisions, preferences *and open
threads* persist; the episodic ring overwrites its oldest records and the summarizer folds
low-importance episodic ones, which would drop an open loop. A ``session_snapshot`` is an
account of one stretch of one session and goes to the episodic layer, where recency
matters; everything it lists is stored on its own as well. See :data:`CATEGORY_LAYERS`.

Idempotency (PRD 5.2: at most one snapshot per idle period; 8.5: avoid duplicates). Every
record written here carries a fingerprint (:func:`~f09_memory.runtime.turns.runtime_key`)
in the ``runtimeKey`` attribute: for a moment, of its normalized text (agent-wide, shared
with :func:`~f09_memory.runtime.pre_compaction_dump`); for a snapshot, of its session and
the turns it covers. Before storing, the agent's live records (``engine.records``) are
scanned for those fingerprints, and anything already there is reported, not stored again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

from f09_memory.errors import InputInvalidError
from f09_memory.ingestion.validation import validate_agent_id
from f09_memory.runtime.categories import MomentCategory
from f09_memory.runtime.key_moments import KeyMoment, detect_key_moments
from f09_memory.runtime.turns import (
    PROVENANCE_BY_ROLE,
    RUNTIME_KEY_ATTRIBUTE,
    Turn,
    TurnLike,
    check_count,
    check_label,
    check_now,
    normalize_text,
    normalize_turns,
    runtime_key,
)
from f09_memory.schema.enums import MemoryLayer

if TYPE_CHECKING:
    from f09_memory.config.config import MemoryConfig
    from f09_memory.engine import MemoryEngine

__all__ = [
    "CATEGORY_LAYERS",
    "category_layers",
    "DEFAULT_MIN_NEW_TURNS",
    "HEARTBEAT_SNAPSHOT_IMPORTANCE",
    "HEARTBEAT_SOURCE_TAG",
    "HeartbeatResult",
    "SNAPSHOT_MAX_CHARS",
    "SkipReason",
    "SourcedMoment",
    "collect_moments",
    "context_tags",
    "heartbeat_store",
    "moment_key",
    "store_planned",
    "stored_runtime_keys",
    "takeaway_item",
]

CATEGORY_LAYERS: Final[Mapping[MomentCategory, MemoryLayer]] = MappingProxyType(
    {
        MomentCategory.DECISION: MemoryLayer.SEMANTIC,
        MomentCategory.PREFERENCE: MemoryLayer.SEMANTIC,
        MomentCategory.FACT: MemoryLayer.SEMANTIC,
        MomentCategory.COMMITMENT: MemoryLayer.SEMANTIC,
        MomentCategory.BLOCKER: MemoryLayer.SEMANTIC,
        MomentCategory.OPEN_THREAD: MemoryLayer.SEMANTIC,
        MomentCategory.SESSION_SNAPSHOT: MemoryLayer.EPISODIC,
    }
)
"""The layer each (stored) category goes to; see the module docstring for the reasons."""

DEFAULT_MIN_NEW_TURNS: Final[int] = 3
"""Seed 000's ``minNewTurns`` default: fewer new turns than this and the heartbeat skips."""

HEARTBEAT_SNAPSHOT_IMPORTANCE: Final[float] = 0.5
"""Importance of the fallback snapshot (seed 000: ``importance=0.5``)."""

SNAPSHOT_MAX_CHARS: Final[int] = 500
"""Longest fallback snapshot text (seed 000: "truncate to 500 chars")."""

HEARTBEAT_SOURCE_TAG: Final[str] = "source:heartbeat"
"""The tag every heartbeat record carries (besides ``source:<role>`` on moments)."""

_TRIGGER: Final[str] = "idle_heartbeat"  # PRD section 9's trigger names
_ELLIPSIS: Final[str] = "\u2026"

SkipReason = Literal["insufficient_turns", "already_stored"]
"""Why a heartbeat stored nothing: too few new turns, or everything was stored before."""


@dataclass(frozen=True, slots=True)
class SourcedMoment:
    """A key moment with the turn it came from.

    Attributes:
        moment: The detected moment.
        turn_index: Index of its turn in the conversation.
        role: Role of that turn.

    """

    moment: KeyMoment
    turn_index: int
    role: str


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    """What one :func:`heartbeat_store` call did.

    Attributes:
        stored: Records written by this call (0 when skipped or all already stored).
        ids: Ids of the records that hold this call's moments, or its snapshot, in order:
            new ones and ones found already stored (empty when skipped for too few turns).
        last_index: Index of the last processed turn (``last_stored_index`` unchanged when
            skipped for too few turns); pass it back as ``last_stored_index``.
        skipped: ``None`` when something was stored, else the :data:`SkipReason`.
        moments: The key moments detected in the new turns, deduplicated by normalized
            text (highest importance kept), in order of first appearance.

    """

    stored: int
    ids: tuple[str, ...]
    last_index: int
    skipped: SkipReason | None
    moments: tuple[KeyMoment, ...]


def context_tags(
    session_id: str | None, topic_slug: str | None, project_slug: str | None
) -> list[str]:
    """The PRD 4.2 context tags: ``session:<id>``, ``topic:<slug>``, ``project:<slug>``.

    Args:
        session_id: The session, or ``None``.
        topic_slug: The topic slug, or ``None``.
        project_slug: The project slug, or ``None``.

    Returns:
        The tags of the values given, in that order.

    """
    pairs = (("session", session_id), ("topic", topic_slug), ("project", project_slug))
    return [f"{name}:{value}" for name, value in pairs if value is not None]


def collect_moments(turns: Sequence[Turn], start: int = 0) -> list[SourcedMoment]:
    """Detect the key moments of ``turns`` and dedupe them by normalized text.

    Each turn is scanned with its own role (role gating of
    :func:`~f09_memory.runtime.detect_key_moments`). Moments whose
    :func:`~f09_memory.runtime.turns.normalize_text` is equal are one takeaway: the one with
    the highest importance is kept (the first on a tie), at the position of the text's first
    appearance. Runtime complexity: ``O(total text length)``.

    Args:
        turns: The turns to scan.
        start: Index of ``turns[0]`` in the conversation (for ``turn_index``).

    Returns:
        The deduplicated moments in order of first appearance.

    """
    best: dict[str, SourcedMoment] = {}
    for offset, turn in enumerate(turns):
        for moment in detect_key_moments(turn.content, role=turn.role):
            norm = normalize_text(moment.text)
            kept = best.get(norm)
            if kept is None or moment.importance > kept.moment.importance:
                best[norm] = SourcedMoment(moment, start + offset, turn.role)
    return list(best.values())  # dicts keep first-insertion order


def stored_runtime_keys(engine: MemoryEngine, agent_id: str) -> dict[str, str]:
    """The fingerprints already stored for ``agent_id``, mapped to their record ids.

    Scans ``engine.records(agent_id)`` (live records only) for the ``runtimeKey``
    attribute; the oldest record wins if two share a key. Runtime complexity: ``O(n)``.

    Args:
        engine: The engine.
        agent_id: The agent.

    Returns:
        ``{fingerprint: record id}``.

    """
    found: dict[str, str] = {}
    for record in engine.records(agent_id):
        key = record.metadata.attributes.get(RUNTIME_KEY_ATTRIBUTE)
        if isinstance(key, str):
            found.setdefault(key, record.id)
    return found


def category_layers(config: MemoryConfig) -> Mapping[MomentCategory, MemoryLayer]:
    """:data:`CATEGORY_LAYERS` with the overrides of ``MemoryConfig.category_layers``."""
    return {**CATEGORY_LAYERS,
            **{MomentCategory(k): v for k, v in config.category_layers.items()}}


def takeaway_item(
    sourced: SourcedMoment,
    *,
    tags: Sequence[str],
    trigger: str,
    session_id: str | None,
    layers: Mapping[MomentCategory, MemoryLayer] = CATEGORY_LAYERS,
) -> dict[str, Any]:
    """The ``ingest_many`` item that stores one key moment.

    The moment is stored in the layer ``layers`` gives its stored category
    (``blocker`` -> ``open_thread``), with its ``importance_unit``, the given tags plus
    ``source:<role>`` (and ``status:open`` for an open thread), and the attributes
    ``category``, ``provenance`` (:data:`~f09_memory.runtime.turns.PROVENANCE_BY_ROLE`),
    ``sourceRole``, ``turnIndex``, ``trigger``, ``sessionId`` (when given) and
    ``runtimeKey`` (the fingerprint of its normalized text).

    Args:
        sourced: The moment and its turn.
        tags: Context and trigger tags.
        trigger: The PRD section 9 trigger name (``idle_heartbeat``, ``pre_compaction``).
        session_id: The session, or ``None``.
        layers: Layer per category (:func:`category_layers` of the engine's config).

    Returns:
        The item mapping.

    """
    moment = sourced.moment
    category = moment.stored_category
    all_tags = [*tags, f"source:{sourced.role}"]
    if category is MomentCategory.OPEN_THREAD:
        all_tags.append("status:open")
    attributes: dict[str, str | int] = {
        "category": category.value,
        "provenance": PROVENANCE_BY_ROLE[sourced.role],
        "sourceRole": sourced.role,
        "turnIndex": sourced.turn_index,
        "trigger": trigger,
        RUNTIME_KEY_ATTRIBUTE: moment_key(moment),
    }
    if session_id is not None:
        attributes["sessionId"] = session_id
    return {
        "content": moment.text,
        "layer": layers[category],
        "importance": moment.importance_unit,
        "tags": all_tags,
        "metadata": {"attributes": attributes},
    }


def moment_key(moment: KeyMoment) -> str:
    """The fingerprint of a moment: of its normalized text, whatever helper stores it."""
    return runtime_key("moment", normalize_text(moment.text))


def _clip_words(text: str, limit: int) -> str:
    """``text`` with whitespace collapsed, cut at a word boundary to at most ``limit`` chars.

    Words are never split, so a truncated snapshot cannot hold half an e-mail address that
    redaction would no longer recognize; a word longer than the room left is dropped.
    """
    words = text.split()
    joined = " ".join(words)
    if len(joined) <= limit:
        return joined
    out: list[str] = []
    used = 0
    room = limit - len(_ELLIPSIS)
    for word in words:
        extra = len(word) + (1 if out else 0)
        if used + extra > room:
            break
        out.append(word)
        used += extra
    return " ".join(out) + _ELLIPSIS


def _snapshot_text(turns: Sequence[Turn], start: int, session_id: str | None) -> str:
    where = f"session {session_id}, " if session_id is not None else ""
    head = f"Session snapshot ({where}turns {start}-{start + len(turns) - 1}):"
    body = " | ".join(f"{t.role}: {t.content}" for t in turns if t.content.strip())
    return _clip_words(f"{head} {body or '(no text)'}", SNAPSHOT_MAX_CHARS)


def _check_index(value: object, count: int) -> int:
    index = check_count(value, "last_stored_index", -1)
    if index > count - 1:
        raise InputInvalidError(
            f"last_stored_index={index} is past the last turn (index {count - 1}); pass the "
            "last_index a previous call returned, or -1 to start from the first turn",
            details={"field": "last_stored_index", "turns": count},
        )
    return index


def heartbeat_store(
    engine: MemoryEngine,
    agent_id: str,
    turns: Sequence[TurnLike],
    *,
    session_id: str | None = None,
    topic_slug: str | None = None,
    project_slug: str | None = None,
    min_new_turns: int = DEFAULT_MIN_NEW_TURNS,
    last_stored_index: int = -1,
    now: int | None = None,
) -> HeartbeatResult:
    """Store the key moments of the turns after ``last_stored_index`` (seed 000 prompt 2).

    Steps: take the new turns (``turns[last_stored_index + 1:]``); if there are fewer than
    ``min_new_turns``, store nothing and return ``skipped="insufficient_turns"``. Otherwise
    detect key moments in each new turn with its role, dedupe them by normalized text, and
    store each (see :func:`takeaway_item`: layer by :data:`CATEGORY_LAYERS`, importance
    ``importance_unit``, tags ``session:``/``topic:``/``project:`` as given,
    ``source:<role>`` and ``source:heartbeat``, provenance attributes). With no moment at
    all, store one ``session_snapshot`` instead: the new turns as ``role: content`` text,
    cut at a word boundary to :data:`SNAPSHOT_MAX_CHARS`, importance
    :data:`HEARTBEAT_SNAPSHOT_IMPORTANCE`, episodic layer, tags as above plus
    ``source:system``.

    Idempotent: a moment whose text is already stored for the agent (by an earlier
    heartbeat or dump) and a snapshot of the same session and turns are not stored again;
    calling twice with the same turns and ``last_stored_index`` stores nothing the second
    time (``skipped="already_stored"``, same ``ids``). Everything new is stored in one
    all-or-nothing ``engine.ingest_many`` at logical time ``now`` (the engine clock if
    ``None``); redaction applies as for any ingest.
    Runtime complexity: ``O(text of the new turns + records of the agent)``.

    Args:
        engine: The engine to store into.
        agent_id: The agent.
        turns: The whole conversation so far, oldest first (:class:`Turn` objects or
            ``{"role", "content", "timestamp"?}`` mappings).
        session_id: Tags memories ``session:<id>`` and sets their ``sessionId`` attribute.
        topic_slug: Tags memories ``topic:<slug>``.
        project_slug: Tags memories ``project:<slug>``.
        min_new_turns: Minimum new turns worth processing (seed default 3; >= 1).
        last_stored_index: Index of the last turn already processed (-1: none).
        now: Logical time of the writes.

    Returns:
        A :class:`HeartbeatResult`.

    Raises:
        InputInvalidError: A bad argument (agent id, turns, labels, ``min_new_turns`` < 1,
            ``last_stored_index`` < -1 or past the last turn, ``now``); nothing is stored.
        CapacityExceededError: The agent is at ``max_records_per_agent``; nothing is
            stored.

    Example:
        >>> from f09_memory import MemoryEngine
        >>> engine = MemoryEngine()
        >>> turns = [{"role": "user", "content": "Which database?"},
        ...          {"role": "assistant", "content": "Decision: use Postgres."},
        ...          {"role": "user", "content": "Great."}]
        >>> result = heartbeat_store(engine, "agent", turns, session_id="s1", now=10)
        >>> (result.stored, result.last_index, engine.get(result.ids[0]).content)
        (1, 2, 'Decision: use Postgres.')

    """
    agent_id = validate_agent_id(agent_id)
    conversation = normalize_turns(turns)
    session_id = check_label(session_id, "session_id")
    topic_slug = check_label(topic_slug, "topic_slug")
    project_slug = check_label(project_slug, "project_slug")
    minimum = check_count(min_new_turns, "min_new_turns", 1)
    last = _check_index(last_stored_index, len(conversation))
    now = check_now(now)
    start = last + 1
    new_turns = conversation[start:]
    if len(new_turns) < minimum:
        return HeartbeatResult(0, (), last, "insufficient_turns", ())

    sourced = collect_moments(new_turns, start)
    tags = [*context_tags(session_id, topic_slug, project_slug), HEARTBEAT_SOURCE_TAG]
    planned: list[tuple[str, dict[str, Any]]] = []
    for entry in sourced:
        item = takeaway_item(entry, tags=tags, trigger=_TRIGGER, session_id=session_id,
                             layers=category_layers(engine.config))
        planned.append((moment_key(entry.moment), item))
    if not planned:
        text = _snapshot_text(new_turns, start, session_id)
        covered = (f"{t.role}:{t.content}" for t in new_turns)
        key = runtime_key("heartbeat-snapshot", session_id or "", str(start), *covered)
        attributes: dict[str, str | int] = {
            "category": MomentCategory.SESSION_SNAPSHOT.value,
            "provenance": "system",
            "trigger": _TRIGGER,
            RUNTIME_KEY_ATTRIBUTE: key,
        }
        if session_id is not None:
            attributes["sessionId"] = session_id
        planned.append((key, {
            "content": text,
            "layer": category_layers(engine.config)[MomentCategory.SESSION_SNAPSHOT],
            "importance": HEARTBEAT_SNAPSHOT_IMPORTANCE,
            "tags": [*tags, "source:system"],
            "metadata": {"attributes": attributes},
        }))

    ids, stored = store_planned(engine, agent_id, planned, now)
    return HeartbeatResult(
        stored=stored,
        ids=ids,
        last_index=len(conversation) - 1,
        skipped=None if stored else "already_stored",
        moments=tuple(entry.moment for entry in sourced),
    )


def store_planned(
    engine: MemoryEngine,
    agent_id: str,
    planned: Sequence[tuple[str, Mapping[str, Any]]],
    now: int | None,
) -> tuple[tuple[str, ...], int]:
    """Store the planned items whose fingerprint is not stored yet, all or nothing.

    Args:
        engine: The engine.
        agent_id: The agent.
        planned: ``(fingerprint, ingest_many item)`` pairs, in order.
        now: Logical time of the writes (``None``: the engine clock).

    Returns:
        The record id of every planned item (existing or new), in order, and the number of
        records written.

    Raises:
        InputInvalidError: An item is malformed; nothing is stored.
        CapacityExceededError: The agent is at its record ceiling; nothing is stored.

    """
    existing = stored_runtime_keys(engine, agent_id)
    fresh: list[Mapping[str, Any]] = []
    fresh_keys: list[str] = []
    for key, item in planned:
        if key not in existing and key not in fresh_keys:
            fresh.append(item)
            fresh_keys.append(key)
    records = engine.ingest_many(agent_id, fresh, now=now) if fresh else []
    existing.update((key, record.id) for key, record in zip(fresh_keys, records, strict=True))
    return tuple(existing[key] for key, _ in planned), len(records)
