"""Store: columnar per-agent storage.

Modules: ``ring`` (EpisodicRing: O(1) append and overwrite), ``agent`` (AgentMemory: numpy
columns, slot reuse, per-layer time-ordered SortedLists), ``store`` (MemoryStore).
"""

from f09_memory.store.agent import NO_DEADLINE, AgentMemory, record_id
from f09_memory.store.ring import EpisodicRing
from f09_memory.store.store import MemoryStore, split_record_id

__all__ = [
    "NO_DEADLINE",
    "AgentMemory",
    "EpisodicRing",
    "MemoryStore",
    "record_id",
    "split_record_id",
]
