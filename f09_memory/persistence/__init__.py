"""Persistence: snapshots of a whole engine, written atomically and verified on load.

Modules: ``snapshot`` (the versioned, checksummed binary file: write_snapshot,
read_snapshot, dumps, loads; reading is bounded by ``max_bytes`` and never inflates),
``validate`` (validate_state: every invariant of a decoded engine state, checked before it
is restored), ``journal`` (``journaled``: where a durable call begins and ends), and, above
the services (imported by module path): ``state`` (get_state, set_state: the engine state
as columns and its exact restoration), ``durable`` (DurableLog: the SQLite snapshot +
journal of effects; DurableSession), ``recording`` (EffectRecorder: what a call changed,
recorded as it happens), ``effects`` (the effect registry and Replay) and ``engine_io``
(EngineParts: save, load and open of an engine through its explicit parts) and
``facade`` (PersistenceFacade: the engine's ``save`` / ``load`` / ``open`` / ``close``).
``MemoryEngine.save`` / ``load`` (files) and ``MemoryEngine.open`` (durable) are the entry
points.
"""

from f09_memory.persistence.journal import Journaled, journaled
from f09_memory.persistence.snapshot import (
    DEFAULT_MAX_BYTES,
    MAGIC,
    SNAPSHOT_VERSION,
    Snapshot,
    dumps,
    loads,
    read_snapshot,
    write_snapshot,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAGIC",
    "Journaled",
    "SNAPSHOT_VERSION",
    "Snapshot",
    "dumps",
    "journaled",
    "loads",
    "read_snapshot",
    "write_snapshot",
]
