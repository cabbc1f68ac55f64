"""Core: the engine's explicit state and the services that change it.

Modules: ``state`` (EngineState: store, clock, pressure, cursors, vocabularies), ``writer``
(Writer: the write path, crowd batches, update, forget, ingest dedup), ``frames``
(group_frame: an ``ingest_batch`` frame validated and grouped by agent), ``claims``
(ingest_claim: reinforcement, supersession, quarantine), ``records`` (RecordReader,
IngestedRecords: records built at the boundary), ``digest`` (the incremental state hash).
"""

from f09_memory.core.claims import ingest_claim
from f09_memory.core.digest import config_fingerprint, state_hash
from f09_memory.core.records import IngestedRecords, RecordReader
from f09_memory.core.state import EngineState
from f09_memory.core.writer import Writer

__all__ = [
    "EngineState",
    "IngestedRecords",
    "RecordReader",
    "Writer",
    "config_fingerprint",
    "ingest_claim",
    "state_hash",
]
