"""Persistence: snapshots of a whole engine, written atomically and verified on load.

Modules: ``snapshot`` (the versioned, checksummed file: write_snapshot, read_snapshot,
dumps, loads), ``state`` (engine_state, restore: the complete engine state and its exact
restoration), ``durable`` (DurableLog: the SQLite snapshot + journal of durable mode),
``journal`` (journaled: the call recording; to_journal / from_journal).
``MemoryEngine.save`` / ``load`` (files) and ``MemoryEngine.open`` (durable) are the entry
points.
"""

from f09_memory.persistence.durable import CommitMode, DurableLog
from f09_memory.persistence.journal import from_journal, journaled, to_journal
from f09_memory.persistence.snapshot import (
    MAGIC,
    SNAPSHOT_VERSION,
    dumps,
    loads,
    read_snapshot,
    write_snapshot,
)
from f09_memory.persistence.state import STATE_KIND, engine_state, restore

__all__ = [
    "MAGIC",
    "CommitMode",
    "DurableLog",
    "SNAPSHOT_VERSION",
    "STATE_KIND",
    "dumps",
    "engine_state",
    "from_journal",
    "journaled",
    "loads",
    "read_snapshot",
    "restore",
    "to_journal",
    "write_snapshot",
]
