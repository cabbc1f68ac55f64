"""Core: the engine's explicit state and the services that change it.

Modules: ``state`` (EngineState: store, clock, pressure, cursors, vocabularies), ``writer``
(Writer: the write path, crowd batches, update, forget), ``dedup`` (IngestDedup: a
repeat within the dedup window reinforces its record), ``frames``
(group_frame: an ``ingest_batch`` frame validated and grouped by agent), ``claims``
(ingest_claim: reinforcement, supersession, quarantine), ``records`` (RecordReader,
IngestedRecords: records built at the boundary), ``digest`` (the incremental state hash, split into
additive per-agent parts: HashParts, hash_parts, merge_parts, combine_parts).
"""

from f09_memory.core.claims import ingest_claim
from f09_memory.core.digest import (
    HashParts,
    combine_parts,
    config_fingerprint,
    hash_parts,
    merge_parts,
    state_hash,
)
from f09_memory.core.records import IngestedRecords, RecordReader
from f09_memory.core.state import EngineState
from f09_memory.core.writer import Writer

__all__ = [
    "EngineState",
    "HashParts",
    "IngestedRecords",
    "RecordReader",
    "Writer",
    "combine_parts",
    "config_fingerprint",
    "hash_parts",
    "ingest_claim",
    "merge_parts",
    "state_hash",
]
