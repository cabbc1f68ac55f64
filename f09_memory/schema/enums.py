"""Enumerations of the spec's string unions (section 6).

Each enum is a ``StrEnum`` whose values are the spec's literals, so JSON carries the same
strings as the TypeScript interfaces. Integer codes (``code``) index the columnar store.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["MemoryLayer", "PressureState", "Purpose", "Strategy", "TaskStatus"]


class MemoryLayer(StrEnum):
    """The cognitive layer a record lives in."""

    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    SOCIAL = "social"
    SPATIAL = "spatial"
    SYSTEM = "system"

    @property
    def code(self) -> int:
        """Dense integer code used as an index into per-layer tables (0..5, declaration order)."""
        return _LAYER_CODES[self]


_LAYER_CODES = {layer: i for i, layer in enumerate(MemoryLayer)}
LAYERS_BY_CODE: tuple[MemoryLayer, ...] = tuple(MemoryLayer)


class Purpose(StrEnum):
    """Why the agent is retrieving: drives layer policy and weights."""

    REASONING = "reasoning"
    DIALOG = "dialog"
    NAVIGATION = "navigation"
    SUMMARY = "summary"


class Strategy(StrEnum):
    """Which score term a retrieval favours; ``balanced`` uses the purpose's own weights."""

    BALANCED = "balanced"
    RECENCY = "recency"
    IMPORTANCE = "importance"
    SEMANTIC = "semantic"


class PressureState(StrEnum):
    """Rate-governor pressure, from none to fully exhausted."""

    NORMAL = "normal"
    SOFT = "soft"
    THROTTLE = "throttle"
    EXHAUSTED = "exhausted"


class TaskStatus(StrEnum):
    """Lifecycle of a summarization task."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"
