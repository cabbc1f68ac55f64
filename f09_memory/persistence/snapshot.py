r"""The snapshot file: a versioned, checksummed, atomically written container.

Layout (bytes)::

    F09MEMORY-SNAPSHOT\\n
    version <int>\\n
    sha256 <64 hex digits of the payload>\\n
    length <payload bytes>\\n
    <payload: an uncompressed .npz (zip of .npy arrays)>

The payload holds the state's columns as ``.npy`` arrays (one array per column for all
agents together, so the count of arrays does not grow with agents) plus ``manifest``, the
UTF-8 JSON of everything small (config, clock, cursors, per-agent scalars, sparse metadata).
Arrays nested in the manifest are ``{"__ndarray__": <base64>, "dtype": ..., "shape": [...]}``.
Nothing is pickled; the zip is stored uncompressed, so reading cannot expand past the file.
Writing goes to a temporary file in the same folder, is fsynced, then renamed over the
target (and the folder fsynced), so a crash leaves either the old file or the new one.
Reading checks magic, version, length and checksum before parsing anything: a truncated,
corrupted or foreign file is refused with ``MEMORY_SNAPSHOT_INVALID`` naming the problem.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from f09_memory.errors import SnapshotInvalidError

__all__ = [
    "MAGIC",
    "SNAPSHOT_VERSION",
    "Snapshot",
    "decode",
    "dumps",
    "encode",
    "loads",
    "read_snapshot",
    "write_snapshot",
]

MAGIC = b"F09MEMORY-SNAPSHOT\n"
SNAPSHOT_VERSION = 3


def encode(value: Any) -> Any:
    """JSON-safe form of ``value``: numpy arrays and scalars become tagged objects/values."""
    if isinstance(value, np.ndarray):
        arr = np.ascontiguousarray(value)
        return {"__ndarray__": base64.b64encode(arr.tobytes()).decode("ascii"),
                "dtype": arr.dtype.str, "shape": list(arr.shape)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    return value


def decode(value: Any) -> Any:
    """Inverse of :func:`encode` (tuples come back as lists)."""
    if isinstance(value, dict):
        if "__ndarray__" in value:
            raw = base64.b64decode(value["__ndarray__"])
            return np.frombuffer(raw, dtype=np.dtype(value["dtype"])).reshape(
                value["shape"]).copy()
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def dumps(manifest: dict[str, Any], arrays: dict[str, np.ndarray[Any, Any]]) -> bytes:
    """The snapshot bytes of ``manifest`` (JSON-like) and ``arrays`` (name -> array)."""
    body = {name: np.ascontiguousarray(arr) for name, arr in arrays.items()}
    body["manifest"] = np.frombuffer(
        json.dumps(encode(manifest), sort_keys=True, separators=(",", ":"),
                   ensure_ascii=False).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **body)  # type: ignore[arg-type]
    payload = buffer.getvalue()
    return (MAGIC + f"version {SNAPSHOT_VERSION}\n".encode()
            + f"sha256 {hashlib.sha256(payload).hexdigest()}\n".encode()
            + f"length {len(payload)}\n".encode() + payload)


def write_snapshot(path: str | os.PathLike[str], blob: bytes) -> Path:
    """Write snapshot bytes (from :func:`dumps`) to ``path`` atomically.

    Temp file in the same folder, fsync, rename, fsync of the folder.

    Returns:
        The path written.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return target


def _bad(path: Path, problem: str) -> SnapshotInvalidError:
    return SnapshotInvalidError(f"snapshot {str(path)!r} {problem}; nothing was loaded",
                                details={"path": str(path), "problem": problem})


def read_snapshot(path: str | os.PathLike[str]) -> Snapshot:
    """Read and verify a snapshot written by :func:`write_snapshot`.

    Raises:
        SnapshotInvalidError: Missing, foreign, wrong version, truncated or corrupted.
    """
    source = Path(path)
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise _bad(source, f"cannot be read ({exc.strerror})") from exc
    return loads(data, source)


def loads(data: bytes, source: str | os.PathLike[str] = "<bytes>") -> Snapshot:
    """Verify and decode snapshot bytes (``source`` names them in errors).

    Raises:
        SnapshotInvalidError: Foreign, wrong version, truncated or corrupted bytes.
    """
    source = Path(source)
    if not data.startswith(MAGIC):
        raise _bad(source, "is not an f09-memory snapshot (bad magic)")
    lines = data[len(MAGIC):].split(b"\n", 3)
    if len(lines) < 4:
        raise _bad(source, "is truncated inside its header")
    try:
        version = int(lines[0].removeprefix(b"version "))
        digest = lines[1].removeprefix(b"sha256 ").decode("ascii")
        length = int(lines[2].removeprefix(b"length "))
    except (ValueError, UnicodeDecodeError):
        raise _bad(source, "has a malformed header") from None
    if version != SNAPSHOT_VERSION:
        raise _bad(source, f"has format version {version}; this engine reads version "
                           f"{SNAPSHOT_VERSION}")
    payload = lines[3]
    if len(payload) != length:
        raise _bad(source, f"is truncated: payload has {len(payload)} of {length} bytes")
    if hashlib.sha256(payload).hexdigest() != digest:
        raise _bad(source, "is corrupted: checksum mismatch")
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        manifest = json.loads(arrays.pop("manifest").tobytes().decode("utf-8"))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise _bad(source, f"has an unreadable payload ({type(exc).__name__})") from exc
    if not isinstance(manifest, dict):
        raise _bad(source, "has no state object")
    return Snapshot(decode(manifest), arrays)


class Snapshot(NamedTuple):
    """A decoded snapshot: the manifest (JSON-like, arrays decoded) and the named arrays."""

    manifest: dict[str, Any]
    arrays: dict[str, np.ndarray[Any, Any]]
