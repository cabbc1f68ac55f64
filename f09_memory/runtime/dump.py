"""Pre-compaction dump: persist structured takeaways before context is summarized away.

Seed 000 prompt 4 and PRD section 7. When the host's token meter nears its compaction
threshold it calls :func:`pre_compaction_dump` with the whole conversation; the helper
stores each key moment as its own small memory (PRD 7.2: many small structured memories
retrieve better than one blob) and one structured ``session_snapshot`` listing them, so
"what did we decide?" stays answerable after compaction (PRD 11).

Idempotent (PRD 10, phase 3: "don't dump twice"): takeaways share the agent-wide
fingerprint of their normalized text with :func:`~f09_memory.runtime.heartbeat_store`
(a decision the heartbeat already stored is reported, not stored twice), and the snapshot's
fingerprint is that of its session and text; see :mod:`~f09_memory.runtime.heartbeat`.
Layers follow :data:`~f09_memory.runtime.heartbeat.CATEGORY_LAYERS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from f09_memory.errors import InputInvalidError
from f09_memory.ingestion.validation import validate_agent_id
from f09_memory.runtime.categories import MomentCategory
from f09_memory.runtime.heartbeat import (
    category_layers,
    collect_moments,
    context_tags,
    moment_key,
    store_planned,
    takeaway_item,
)
from f09_memory.runtime.key_moments import KeyMoment
from f09_memory.runtime.turns import (
    RUNTIME_KEY_ATTRIBUTE,
    TurnLike,
    check_count,
    check_label,
    check_now,
    normalize_turns,
    runtime_key,
)

if TYPE_CHECKING:
    from f09_memory.engine import MemoryEngine

__all__ = [
    "DEFAULT_MAX_TAKEAWAYS",
    "DUMP_SNAPSHOT_IMPORTANCE",
    "DumpResult",
    "PRE_COMPACTION_TAG",
    "SNAPSHOT_SECTIONS",
    "build_session_snapshot",
    "pre_compaction_dump",
]

DEFAULT_MAX_TAKEAWAYS: Final[int] = 10
"""Seed 000 ``maxTakeaways``: the most individual memories one dump stores."""

DUMP_SNAPSHOT_IMPORTANCE: Final[float] = 0.7
"""Importance of the dump's snapshot (seed 000 ``0.7``; PRD 4.3 "session_snapshot: 7")."""

PRE_COMPACTION_TAG: Final[str] = "trigger:pre-compaction"
"""The tag on every record a dump writes."""

SNAPSHOT_SECTIONS: Final[tuple[tuple[str, MomentCategory], ...]] = (
    ("Decisions", MomentCategory.DECISION),
    ("Open threads", MomentCategory.OPEN_THREAD),
    ("Commitments", MomentCategory.COMMITMENT),
    ("Preferences", MomentCategory.PREFERENCE),
    ("Facts", MomentCategory.FACT),
)
"""Snapshot lines: seed 000's four, then ``Facts`` (PRD 4.1), by stored category."""

_TRIGGER: Final[str] = "pre_compaction"  # PRD section 9's trigger name


@dataclass(frozen=True, slots=True)
class DumpResult:
    """What one :func:`pre_compaction_dump` call did.

    Attributes:
        stored: Records written by this call (takeaways new to the agent, plus the snapshot
            unless it was already stored); 0 when the same dump ran before.
        takeaways: Number of takeaways (deduplicated, capped moments) the dump covers.
        ids: Record ids of those takeaways (new or already stored), in takeaway order.
        snapshot_id: Record id of the session snapshot (new or already stored).
        moments: The takeaways, highest importance first (then first appearance).
        snapshot: The snapshot text as built (the stored content is redacted).

    """

    stored: int
    takeaways: int
    ids: tuple[str, ...]
    snapshot_id: str
    moments: tuple[KeyMoment, ...]
    snapshot: str


def build_session_snapshot(moments: Sequence[KeyMoment]) -> str:
    """Format takeaways as seed 000's structured session snapshot.

    ``"## Session Snapshot"`` then one line per :data:`SNAPSHOT_SECTIONS` entry,
    ``"**Decisions:** a; b"``, listing the texts of the moments stored under that category
    in the given order (blockers under "Open threads"), or ``none``.

    Args:
        moments: The takeaways.

    Returns:
        The snapshot text.

    Example:
        >>> from f09_memory.runtime import detect_key_moments
        >>> print(build_session_snapshot(detect_key_moments("Decision: use Postgres.")))
        ## Session Snapshot
        **Decisions:** Decision: use Postgres.
        **Open threads:** none
        **Commitments:** none
        **Preferences:** none
        **Facts:** none

    """
    lines = ["## Session Snapshot"]
    for title, category in SNAPSHOT_SECTIONS:
        texts = [m.text for m in moments if m.stored_category is category]
        lines.append(f"**{title}:** {'; '.join(texts) if texts else 'none'}")
    return "\n".join(lines)


def pre_compaction_dump(
    engine: MemoryEngine,
    agent_id: str,
    turns: Sequence[TurnLike],
    *,
    session_id: str,
    topic_slug: str | None = None,
    project_slug: str | None = None,
    max_takeaways: int = DEFAULT_MAX_TAKEAWAYS,
    now: int | None = None,
) -> DumpResult:
    """Store the conversation's takeaways and a structured snapshot (seed 000 prompt 4).

    Steps: detect key moments in ALL turns (each with its role); dedupe them by normalized
    text keeping the highest importance; order by importance (highest first, then first
    appearance) and keep ``max_takeaways``; store each (see
    :func:`~f09_memory.runtime.heartbeat.takeaway_item`: layer by category, importance
    ``importance_unit``, tags ``session:``/``topic:``/``project:``,
    ``trigger:pre-compaction`` and ``source:<role>``, provenance attributes); then store
    :func:`build_session_snapshot` of the takeaways as a ``session_snapshot`` (episodic,
    importance :data:`DUMP_SNAPSHOT_IMPORTANCE`, tags as above plus ``source:system``).

    Idempotent: takeaways already stored for the agent and a snapshot already stored for
    this session with the same text are not stored again; their ids are returned. All new
    records are written in one all-or-nothing ``engine.ingest_many`` at logical time
    ``now`` (the engine clock if ``None``); redaction applies as for any ingest.
    Runtime complexity: ``O(text of the turns + records of the agent)``.

    Args:
        engine: The engine to store into.
        agent_id: The agent.
        turns: The whole conversation, oldest first (:class:`~f09_memory.runtime.Turn`
            objects or ``{"role", "content", "timestamp"?}`` mappings).
        session_id: The session (tag ``session:<id>``, attribute ``sessionId``); part of
            the snapshot's fingerprint.
        topic_slug: Tags memories ``topic:<slug>``.
        project_slug: Tags memories ``project:<slug>``.
        max_takeaways: The most individual takeaways to store (>= 0).
        now: Logical time of the writes.

    Returns:
        A :class:`DumpResult`.

    Raises:
        InputInvalidError: A bad argument (agent id, turns, a blank ``session_id``, a
            label, a negative ``max_takeaways``, ``now``); nothing is stored.
        CapacityExceededError: The agent is at ``max_records_per_agent``; nothing is
            stored.

    Example:
        >>> from f09_memory import MemoryEngine
        >>> engine = MemoryEngine()
        >>> turns = [{"role": "assistant", "content": "Decision: use Postgres."},
        ...          {"role": "assistant", "content": "Blocked by RLS permissions."}]
        >>> result = pre_compaction_dump(engine, "agent", turns, session_id="s1", now=5)
        >>> (result.stored, result.takeaways, engine.count("agent"))
        (3, 2, 3)
        >>> pre_compaction_dump(engine, "agent", turns, session_id="s1", now=6).stored
        0

    """
    agent_id = validate_agent_id(agent_id)
    conversation = normalize_turns(turns)
    session = check_label(session_id, "session_id")
    if session is None:
        raise InputInvalidError(
            "session_id is required: pass the host's session identifier (a non-blank string)",
            details={"field": "session_id"},
        )
    topic_slug = check_label(topic_slug, "topic_slug")
    project_slug = check_label(project_slug, "project_slug")
    cap = check_count(max_takeaways, "max_takeaways", 0)
    now = check_now(now)

    collected = collect_moments(conversation)
    order = sorted(range(len(collected)), key=lambda i: (-collected[i].moment.importance, i))
    kept = [collected[i] for i in order[:cap]]
    moments = tuple(entry.moment for entry in kept)
    tags = [*context_tags(session, topic_slug, project_slug), PRE_COMPACTION_TAG]

    planned: list[tuple[str, dict[str, Any]]] = [
        (moment_key(entry.moment),
         takeaway_item(entry, tags=tags, trigger=_TRIGGER, session_id=session,
                       layers=category_layers(engine.config)))
        for entry in kept
    ]
    snapshot = build_session_snapshot(moments)
    snapshot_key = runtime_key("pre-compaction-snapshot", session, snapshot)
    planned.append((snapshot_key, {
        "content": snapshot,
        "layer": category_layers(engine.config)[MomentCategory.SESSION_SNAPSHOT],
        "importance": DUMP_SNAPSHOT_IMPORTANCE,
        "tags": [*tags, "source:system"],
        "metadata": {"attributes": {
            "category": MomentCategory.SESSION_SNAPSHOT.value,
            "provenance": "system",
            "trigger": _TRIGGER,
            "sessionId": session,
            "takeaways": len(kept),
            RUNTIME_KEY_ATTRIBUTE: snapshot_key,
        }},
    }))

    ids, stored = store_planned(engine, agent_id, planned, now)
    return DumpResult(
        stored=stored,
        takeaways=len(kept),
        ids=ids[:-1],
        snapshot_id=ids[-1],
        moments=moments,
        snapshot=snapshot,
    )
