"""Persistence: snapshots of a whole engine, written atomically and verified on load.

Modules: ``snapshot`` (the versioned, checksummed binary file: write_snapshot,
read_snapshot, dumps, loads), ``state`` (get_state, set_state: the engine state as columns
and its exact restoration; imported as ``f09_memory.persistence.state``, it sits above the
services), ``durable`` (DurableLog: the SQLite snapshot + journal; DurableSession; replay),
``journal`` (journaled: the call recording; to_journal / from_journal).
``MemoryEngine.save`` / ``load`` (files) and ``MemoryEngine.open`` (durable) are the entry
points.
"""

from f09_memory.persistence.durable import CommitMode, DurableLog, DurableSession, replay
from f09_memory.persistence.journal import Journaled, from_journal, journaled, to_journal
from f09_memory.persistence.snapshot import (
    MAGIC,
    SNAPSHOT_VERSION,
    Snapshot,
    dumps,
    loads,
    read_snapshot,
    write_snapshot,
)

__all__ = [
    "MAGIC",
    "CommitMode",
    "DurableLog",
    "DurableSession",
    "Journaled",
    "SNAPSHOT_VERSION",
    "Snapshot",
    "dumps",
    "from_journal",
    "journaled",
    "loads",
    "read_snapshot",
    "replay",
    "to_journal",
    "write_snapshot",
]
