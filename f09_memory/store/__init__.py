"""Store: columnar per-agent storage, no Python object per record.

Modules: ``ring`` (EpisodicRing: O(1) append and overwrite), ``records`` (the value types:
NewRecords, RecordExtra, Removed, ids, claim statuses), ``tags`` (TagTable: interned
tag tuples), ``agent`` (AgentMemory: numpy columns, content by slot, sparse metadata, slot
reuse), ``digests`` (record digests of the incremental state hash), ``store``
(MemoryStore).
"""

from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import NO_DEADLINE, NewRecords, RecordExtra, Removed, record_id
from f09_memory.store.ring import EpisodicRing
from f09_memory.store.store import MemoryStore, split_record_id
from f09_memory.store.tags import TagTable

__all__ = [
    "NO_DEADLINE",
    "AgentMemory",
    "EpisodicRing",
    "MemoryStore",
    "NewRecords",
    "RecordExtra",
    "Removed",
    "TagTable",
    "record_id",
    "split_record_id",
]
