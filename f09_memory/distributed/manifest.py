"""The manifest of a saved sharded engine: its name, format, and reading it back.

``ShardedMemoryEngine.save`` writes one snapshot per shard and ``manifest.json`` naming them
with their sha256; :func:`read_saved` reads that folder (or a single ``MemoryEngine``
snapshot file) back, checking kind, version, routing, file names and checksums.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from f09_memory.config.config import MemoryConfig
from f09_memory.errors import MemoryEngineError, SnapshotInvalidError

__all__ = ["MANIFEST_KIND", "MANIFEST_NAME", "MANIFEST_VERSION", "ROUTING", "config_of",
           "manifest_of", "read_saved", "seed_of"]

MANIFEST_NAME = "manifest.json"
"""The file of a saved sharded engine that names its shard snapshots."""
MANIFEST_KIND = "f09-memory-shards"
"""The ``kind`` of a sharded-engine manifest."""
MANIFEST_VERSION = 1
"""The manifest format version."""
ROUTING = "jump-blake2b-64"
"""The routing a manifest names (``distributed.routing``)."""


def read_saved(source: Path) -> tuple[list[bytes], int, str | None]:
    """Snapshot bytes, saved shard count and state hash of a folder or a single file."""
    if source.is_file():
        return [source.read_bytes()], 1, None
    manifest_path = source / MANIFEST_NAME
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SnapshotInvalidError(f"{str(source)!r} has no readable {MANIFEST_NAME} (save a "
                                   "sharded engine there, or name a MemoryEngine snapshot "
                                   "file)", details={"path": str(source)}) from exc
    if not isinstance(manifest, dict) or manifest.get("kind") != MANIFEST_KIND or (
            manifest.get("version") != MANIFEST_VERSION):
        raise SnapshotInvalidError(f"{str(manifest_path)!r} is not a sharded-engine manifest "
                                   f"of version {MANIFEST_VERSION}",
                                   details={"path": str(manifest_path)})
    if manifest.get("routing") != ROUTING:
        raise SnapshotInvalidError(f"unknown shard routing {manifest.get('routing')!r:.40}",
                                   details={"path": str(manifest_path)})
    blobs = []
    for entry in manifest.get("files", []):
        name = str(entry.get("name", ""))
        file = source / name
        if Path(name).name != name or not file.is_file():
            raise SnapshotInvalidError(f"the manifest names a missing shard file {name!r:.60}",
                                       details={"path": str(file)})
        blob = file.read_bytes()
        if hashlib.sha256(blob).hexdigest() != entry.get("sha256"):
            raise SnapshotInvalidError(f"{name!r} does not match its checksum in the "
                                       "manifest (damaged or replaced)",
                                       details={"path": str(file)})
        blobs.append(blob)
    if not blobs or len(blobs) != manifest.get("shards"):
        raise SnapshotInvalidError("the manifest's files do not match its shard count",
                                   details={"path": str(manifest_path)})
    expect = manifest.get("stateHash")
    return blobs, len(blobs), expect if isinstance(expect, str) else None


def manifest_of(blob: bytes) -> dict[str, Any]:
    """The manifest of a snapshot's bytes (a shard's or a single engine's)."""
    from f09_memory.persistence import snapshot

    try:
        return snapshot.loads(blob).manifest
    except MemoryEngineError:
        raise
    except Exception as exc:  # pragma: no cover - snapshot.loads raises its own errors
        raise SnapshotInvalidError("a shard snapshot cannot be read",
                                   details={}) from exc


def config_of(blob: bytes) -> MemoryConfig:
    """The config a snapshot was saved with."""
    return MemoryConfig.parse(manifest_of(blob)["config"])


def seed_of(blob: bytes) -> int:
    """The seed a snapshot was saved with."""
    return int(manifest_of(blob)["seed"])
