"""Introspection (index 17): snapshots, diffs, explanations and counts of a live engine.

``engine.introspection`` is an :class:`Introspector` (``service``); every method is a
pure read (no state change, no event, the same ``state_hash``). Parts:

- ``models``: RecordView, MemorySnapshot, FieldChange, RecordChange, MemoryDiff,
  AgentStats, EngineStats;
- ``explanation``: ScoreTerm, CandidateExplanation, Explanation (candidates built on
  first access from a CandidateTable);
- ``captures``: the versioned captures (columns and digests) in a bounded ring;
- ``views``: record views from a capture's columns, redacted on the way out;
- ``diff``: comparing two captures; ``explain``: an explanation from a traced retrieval.
"""

from f09_memory.introspection.captures import CAPTURES_KEPT
from f09_memory.introspection.explanation import (
    CandidateExplanation,
    ExclusionReason,
    Explanation,
    ScoreTerm,
    TermKey,
)
from f09_memory.introspection.models import (
    AgentStats,
    EngineStats,
    FieldChange,
    MemoryDiff,
    MemorySnapshot,
    RecordChange,
    RecordStatus,
    RecordView,
)
from f09_memory.introspection.service import Introspector

__all__ = [
    "CAPTURES_KEPT",
    "AgentStats",
    "CandidateExplanation",
    "EngineStats",
    "ExclusionReason",
    "Explanation",
    "FieldChange",
    "Introspector",
    "MemoryDiff",
    "MemorySnapshot",
    "RecordChange",
    "RecordStatus",
    "RecordView",
    "ScoreTerm",
    "TermKey",
]
