"""The files of a sharded engine: the saved folder's manifest and the durable layout.

``ShardedMemoryEngine.save`` writes one snapshot per shard and ``manifest.json`` naming them
with their sha256 (:func:`write_saved`); :func:`read_saved` reads that folder (or a single
``MemoryEngine`` snapshot file) back, checking kind, version, routing, file names and
checksums. A folder of durable shards carries ``shards.json`` (:func:`check_layout`): it is
reopened only with the shard count, routing, seed and config it was made with.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from f09_memory.config.config import MemoryConfig
from f09_memory.core.digest import config_fingerprint
from f09_memory.errors import MemoryEngineError, SnapshotInvalidError, StorageFailedError
from f09_memory.persistence.snapshot import write_snapshot

__all__ = ["LAYOUT_NAME", "MANIFEST_KIND", "MANIFEST_NAME", "MANIFEST_VERSION", "ROUTING",
           "check_layout", "config_of", "manifest_of", "read_saved", "seed_of", "write_saved"]

MANIFEST_NAME = "manifest.json"
"""The file of a saved sharded engine that names its shard snapshots."""
MANIFEST_KIND = "f09-memory-shards"
"""The ``kind`` of a sharded-engine manifest."""
MANIFEST_VERSION = 1
"""The manifest format version."""
ROUTING = "jump-blake2b-64"
"""The routing a manifest names (``distributed.routing``)."""
LAYOUT_NAME = "shards.json"
"""The file of a durable shards folder naming its layout."""


def check_layout(folder: Path, shards: int, seed: int, config: MemoryConfig) -> None:
    """Make ``folder`` a durable shards folder of this layout, or check that it is one.

    Raises:
        SnapshotInvalidError: ``folder`` holds durable shards of another shard count, seed
            or config.
    """
    folder.mkdir(parents=True, exist_ok=True)
    layout = folder / LAYOUT_NAME
    want = {"kind": MANIFEST_KIND, "shards": shards, "routing": ROUTING,
            "seed": seed, "config": config_fingerprint(config)}
    if layout.exists():
        have = json.loads(layout.read_text(encoding="utf-8"))
        if have != want:
            raise SnapshotInvalidError(
                f"{str(folder)!r} holds durable shards of another layout "
                f"({have.get('shards')} shards, seed {have.get('seed')}); open it with "
                "the same shards, config and seed, or save and load it onto another "
                "shard count", details={"path": str(folder)})
    else:
        layout.write_text(json.dumps(want, sort_keys=True), encoding="utf-8")


def write_saved(root: Path, blobs: Sequence[bytes], *, seed: int, config: MemoryConfig,
                state_hash: str) -> Path:
    """Write the shards' snapshots ``shard-NNNN.f09`` and the manifest into ``root``.

    The manifest is written last, atomically (a reader never sees one naming missing
    files). Runtime complexity: O(total bytes) (one sha256 pass).

    Returns:
        The manifest's path.

    Raises:
        StorageFailedError: A file could not be written.
    """
    try:
        root.mkdir(parents=True, exist_ok=True)
        files = []
        for i, blob in enumerate(blobs):
            name = f"shard-{i:04d}.f09"
            write_snapshot(root / name, blob)
            files.append({"name": name, "bytes": len(blob),
                          "sha256": hashlib.sha256(blob).hexdigest()})
        manifest = {"kind": MANIFEST_KIND, "version": MANIFEST_VERSION,
                    "shards": len(blobs), "routing": ROUTING, "seed": seed,
                    "config": config_fingerprint(config), "stateHash": state_hash,
                    "files": files}
        target = root / MANIFEST_NAME
        tmp = root / (MANIFEST_NAME + ".tmp")
        tmp.write_text(json.dumps(manifest, sort_keys=True, indent=1), encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        raise StorageFailedError(f"the sharded snapshot could not be written to "
                                 f"{str(root)!r} ({exc.strerror or type(exc).__name__})",
                                 details={"path": str(root)}) from exc
    return target


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
