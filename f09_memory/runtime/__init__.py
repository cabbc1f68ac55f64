"""Agent-runtime helpers from seeds 000 and 003 (key moments, heartbeat, recall, dump).

Parts:

- :mod:`~f09_memory.runtime.categories` — :class:`MomentCategory` (decision, preference,
  fact, commitment, blocker, open_thread, session_snapshot), :func:`normalize_importance`
  (PRD 1-10 scale -> engine ``0..1``) and :func:`storage_category` (blocker -> open_thread).
- :mod:`~f09_memory.runtime.key_moments` — :func:`detect_key_moments`, the deterministic
  trigger-phrase detector returning :class:`KeyMoment` objects; triggers in
  :data:`DEFAULT_TRIGGERS` (:class:`TriggerRule`).
- :mod:`~f09_memory.runtime.topics` — :func:`extract_topic_slug` by keyword frequency with a
  synonym map.
- :mod:`~f09_memory.runtime.turns` — :class:`Turn` and :func:`normalize_turns` (the
  conversation a host passes in), :func:`normalize_text` and :func:`runtime_key` (dedupe
  forms and fingerprints).
- :mod:`~f09_memory.runtime.heartbeat` — :func:`heartbeat_store`, idle capture of the key
  moments of new turns (:class:`HeartbeatResult`); :data:`CATEGORY_LAYERS`.
- :mod:`~f09_memory.runtime.recall` — :func:`contextual_recall`, the blended startup context
  (recency + semantic + importance, greedy value-density packing; :class:`RecallResult`).
- :mod:`~f09_memory.runtime.dump` — :func:`pre_compaction_dump`, structured takeaways and a
  session snapshot before compaction (:class:`DumpResult`, :func:`build_session_snapshot`).

The helpers own no timers, loops or token meters: the host calls them at the right time.
Detection and topics are pure; heartbeat, recall and dump use only the engine's public
methods (``ingest_many``, ``retrieve``, ``records``), take logical time from ``now`` (or the
engine clock), and are idempotent where the PRD asks (no second snapshot, no second dump).
"""

from f09_memory.runtime.categories import (
    IMPORTANCE_SCALE,
    MomentCategory,
    normalize_importance,
    storage_category,
)
from f09_memory.runtime.dump import (
    PRE_COMPACTION_TAG,
    DumpResult,
    build_session_snapshot,
    pre_compaction_dump,
)
from f09_memory.runtime.heartbeat import (
    CATEGORY_LAYERS,
    HEARTBEAT_SOURCE_TAG,
    HeartbeatResult,
    SkipReason,
    heartbeat_store,
)
from f09_memory.runtime.key_moments import (
    DEFAULT_TRIGGERS,
    KeyMoment,
    Role,
    TriggerRule,
    detect_key_moments,
)
from f09_memory.runtime.recall import (
    CHANNELS,
    RecallCandidate,
    RecallResult,
    contextual_recall,
)
from f09_memory.runtime.topics import STOPWORDS, extract_topic_slug, tokenize_topic_words
from f09_memory.runtime.turns import (
    Turn,
    TurnLike,
    TurnRole,
    normalize_text,
    normalize_turns,
    runtime_key,
)

__all__ = [
    "CATEGORY_LAYERS",
    "CHANNELS",
    "DEFAULT_TRIGGERS",
    "DumpResult",
    "HEARTBEAT_SOURCE_TAG",
    "HeartbeatResult",
    "IMPORTANCE_SCALE",
    "KeyMoment",
    "MomentCategory",
    "PRE_COMPACTION_TAG",
    "RecallCandidate",
    "RecallResult",
    "Role",
    "STOPWORDS",
    "SkipReason",
    "TriggerRule",
    "Turn",
    "TurnLike",
    "TurnRole",
    "build_session_snapshot",
    "contextual_recall",
    "detect_key_moments",
    "extract_topic_slug",
    "heartbeat_store",
    "normalize_importance",
    "normalize_text",
    "normalize_turns",
    "pre_compaction_dump",
    "runtime_key",
    "storage_category",
    "tokenize_topic_words",
]
