"""Agent-runtime helpers from seeds 000 and 003 (key moments, topics, categories).

Parts:

- :mod:`~f09_memory.runtime.categories` — :class:`MomentCategory` (decision, preference,
  fact, commitment, blocker, open_thread, session_snapshot), :func:`normalize_importance`
  (PRD 1-10 scale -> engine ``0..1``) and :func:`storage_category` (blocker -> open_thread).
- :mod:`~f09_memory.runtime.key_moments` — :func:`detect_key_moments`, the deterministic
  trigger-phrase detector returning :class:`KeyMoment` objects; triggers in
  :data:`DEFAULT_TRIGGERS` (:class:`TriggerRule`).
- :mod:`~f09_memory.runtime.topics` — :func:`extract_topic_slug` by keyword frequency with a
  synonym map.

These helpers are pure: they own no timers, loops or token meters and touch no engine.
"""

from f09_memory.runtime.categories import (
    IMPORTANCE_SCALE,
    MomentCategory,
    normalize_importance,
    storage_category,
)
from f09_memory.runtime.key_moments import (
    DEFAULT_TRIGGERS,
    KeyMoment,
    Role,
    TriggerRule,
    detect_key_moments,
)
from f09_memory.runtime.topics import STOPWORDS, extract_topic_slug, tokenize_topic_words

__all__ = [
    "DEFAULT_TRIGGERS",
    "IMPORTANCE_SCALE",
    "KeyMoment",
    "MomentCategory",
    "Role",
    "STOPWORDS",
    "TriggerRule",
    "detect_key_moments",
    "extract_topic_slug",
    "normalize_importance",
    "storage_category",
    "tokenize_topic_words",
]
