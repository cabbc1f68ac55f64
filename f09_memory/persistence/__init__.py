"""Persistence: snapshots of a whole engine, written atomically and verified on load.

Modules: ``snapshot`` (the versioned, checksummed file: write_snapshot, read_snapshot),
``state`` (engine_state, restore: the complete engine state and its exact restoration).
``MemoryEngine.save(path)`` and ``MemoryEngine.load(path)`` are the entry points.
"""

from f09_memory.persistence.snapshot import (
    MAGIC,
    SNAPSHOT_VERSION,
    read_snapshot,
    write_snapshot,
)
from f09_memory.persistence.state import STATE_KIND, engine_state, restore

__all__ = [
    "MAGIC",
    "SNAPSHOT_VERSION",
    "STATE_KIND",
    "engine_state",
    "read_snapshot",
    "restore",
    "write_snapshot",
]
