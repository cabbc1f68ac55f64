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
Writing goes to a temporary file in the same folder, is fsynced, then renamed over the
target (and the folder fsynced), so a crash leaves either the old file or the new one.

Reading trusts nothing, so that a damaged or forged file (the checksum only catches
accidents: anyone can recompute it) costs memory in proportion to its size and fails with
``MEMORY_SNAPSHOT_INVALID`` naming the problem, never another exception:

- magic, version, length and checksum are checked before anything is parsed; a file or
  payload above ``max_bytes`` (default :data:`DEFAULT_MAX_BYTES`) is refused unread;
- every zip member must be stored uncompressed (the writer never compresses), so nothing
  is ever inflated, and the members together must fit in the payload (no member read twice);
- each ``.npy`` header must declare a plain numeric dtype (no objects, nothing pickled) and
  a shape whose size is exactly the member's data, checked before the array is allocated;
- the manifest's bracket nesting is measured before ``json.loads`` (at most
  :data:`MAX_DEPTH`), and each nested array's dtype and shape must match its bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import math
import os
import tempfile
import zipfile
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import InputInvalidError, SnapshotInvalidError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAGIC",
    "MAX_DEPTH",
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
"""The first bytes of every snapshot file."""
SNAPSHOT_VERSION = 3
"""The snapshot format written (3: columns in an uncompressed npz plus a JSON manifest)."""
DEFAULT_MAX_BYTES = 4 * 2**30
"""The largest snapshot payload read by default (4 GiB); pass ``max_bytes`` for more."""
MAX_DEPTH = 64
"""The deepest bracket nesting accepted in a manifest (an engine writes fewer than 12)."""
_HEADER_MAX = 256  # magic plus the three header lines
_CHUNK = 1 << 24  # array data is copied from the zip in slices of 16 MiB
_NUMERIC = frozenset("biuf")
_DEPTH_STEP = np.zeros(256, dtype=np.int8)
_DEPTH_STEP[[ord("["), ord("{")]] = 1
_DEPTH_STEP[[ord("]"), ord("}")]] = -1


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


class _Malformed(ValueError):
    """A payload problem found by our own checks (its message names it, quoting no data)."""


def _plain_dtype(spec: object) -> np.dtype[Any]:
    """``spec`` as a plain numeric dtype (bool, int, uint, float; no objects or records)."""
    try:
        dtype: np.dtype[Any] = np.dtype(spec)  # type: ignore[call-overload]
    except (TypeError, ValueError) as exc:
        raise _Malformed("an array has an unknown dtype") from exc
    if dtype.kind not in _NUMERIC or dtype.fields is not None or dtype.subdtype is not None:
        raise _Malformed("an array has a dtype that is not plain numeric")
    return dtype


def _shape(spec: object) -> tuple[int, ...]:
    if not isinstance(spec, list | tuple) or len(spec) > 32 or not all(
            type(n) is int and n >= 0 for n in spec):
        raise _Malformed("an array has a malformed shape")
    return tuple(spec)


def decode(value: Any) -> Any:
    """Inverse of :func:`encode` (tuples come back as lists).

    Raises:
        ValueError: A tagged array is malformed: an unknown or non-numeric dtype, a bad
            shape, invalid base64, or bytes that do not fill the shape exactly.
    """
    if isinstance(value, dict):
        if "__ndarray__" in value:
            data = value["__ndarray__"]
            if set(value) != {"__ndarray__", "dtype", "shape"} or not isinstance(data, str):
                raise _Malformed("a tagged array has unexpected fields")
            dtype, shape = _plain_dtype(value["dtype"]), _shape(value["shape"])
            if len(data) > 4 * (math.prod(shape) * dtype.itemsize + 2) // 3 + 4:
                raise _Malformed("a tagged array holds more bytes than its shape")
            try:
                raw = base64.b64decode(data, validate=True)
            except binascii.Error as exc:
                raise _Malformed("a tagged array is not valid base64") from exc
            if len(raw) != math.prod(shape) * dtype.itemsize:
                raise _Malformed("a tagged array's bytes do not match its shape")
            return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
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


def _check_limit(max_bytes: object) -> int:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise InputInvalidError("max_bytes must be a positive integer (bytes)",
                                details={"field": "max_bytes"})
    return max_bytes


def read_snapshot(path: str | os.PathLike[str], *,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> Snapshot:
    """Read and verify a snapshot written by :func:`write_snapshot`.

    Memory used is a small multiple of the file size (nothing is decompressed), and a file
    whose payload would pass ``max_bytes`` is refused before it is read.

    Args:
        path: The file.
        max_bytes: The largest payload accepted (default :data:`DEFAULT_MAX_BYTES`).

    Raises:
        SnapshotInvalidError: Missing, too large, foreign, wrong version, truncated,
            corrupted or malformed (the message names the problem).
        InputInvalidError: ``max_bytes`` is not a positive integer.
    """
    limit = _check_limit(max_bytes)
    source = Path(path)
    try:
        with source.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit + _HEADER_MAX:
                raise _bad(source, f"is {size} bytes, above the limit of {limit}: pass a "
                                   "larger max_bytes if the file is trusted")
            data = fh.read(size + 1)
            if len(data) > limit + _HEADER_MAX:
                raise _bad(source, f"grew above the limit of {limit} bytes while read")
    except OSError as exc:
        raise _bad(source, f"cannot be read ({exc.strerror})") from exc
    return loads(data, source, max_bytes=limit)


def loads(data: bytes, source: str | os.PathLike[str] = "<bytes>", *,
          max_bytes: int = DEFAULT_MAX_BYTES) -> Snapshot:
    """Verify and decode snapshot bytes (``source`` names them in errors).

    Args:
        data: The snapshot bytes (from :func:`dumps`).
        source: What to call them in error messages.
        max_bytes: The largest payload accepted (default :data:`DEFAULT_MAX_BYTES`).

    Raises:
        SnapshotInvalidError: Too large, foreign, wrong version, truncated, corrupted or
            malformed bytes (the message names the problem).
        InputInvalidError: ``max_bytes`` is not a positive integer.
    """
    limit = _check_limit(max_bytes)
    source = Path(source)
    if not data.startswith(MAGIC):
        raise _bad(source, "is not an f09-memory snapshot (bad magic)")
    lines = data[len(MAGIC):len(MAGIC) + _HEADER_MAX].split(b"\n", 3)
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
    if length > limit:
        raise _bad(source, f"has a payload of {length} bytes, above the limit of {limit}: "
                           "pass a larger max_bytes if the file is trusted")
    payload = data[len(MAGIC) + sum(len(line) + 1 for line in lines[:3]):]
    if len(payload) != length:
        raise _bad(source, f"is truncated: payload has {len(payload)} of {length} bytes")
    if hashlib.sha256(payload).hexdigest() != digest:
        raise _bad(source, "is corrupted: checksum mismatch")
    try:
        arrays = _read_members(payload)
        if "manifest" not in arrays:
            raise _Malformed("it has no manifest")
        manifest = _parse_manifest(arrays.pop("manifest"))
    except MemoryError:
        raise _bad(source, "needs more memory than is available") from None
    except _Malformed as exc:
        raise _bad(source, f"has a malformed payload: {exc}") from exc
    except Exception as exc:  # zipfile, numpy and json errors may quote the bytes: name only
        raise _bad(source, f"has an unreadable payload ({type(exc).__name__})") from exc
    return Snapshot(manifest, arrays)


def _read_members(payload: bytes) -> dict[str, NDArray[Any]]:
    """The ``.npy`` members of the payload's zip, checked before anything is allocated."""
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        infos = archive.infolist()
        names = [info.filename for info in infos]
        if len(set(names)) != len(names):
            raise _Malformed("a zip member name repeats")
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED or info.compress_size != (
                    info.file_size):
                raise _Malformed("a zip member is compressed (snapshots store them as is)")
            if not info.filename.endswith(".npy") or info.is_dir():
                raise _Malformed("a zip member is not a .npy array")
        if sum(info.file_size for info in infos) > len(payload):
            raise _Malformed("the zip members are larger than the payload (they overlap)")
        arrays: dict[str, NDArray[Any]] = {}
        for info in infos:
            with archive.open(info) as fh:
                arrays[info.filename[:-4]] = _read_npy(fh, info.file_size)
    return arrays


def _read_npy(fh: IO[bytes], size: int) -> NDArray[Any]:
    """One ``.npy`` array of ``size`` bytes: plain dtype, and a shape its data fills."""
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    else:
        raise _Malformed("an array has an unsupported .npy version")
    dtype, shape = _plain_dtype(dtype), _shape(shape)
    count = math.prod(shape)
    if count * dtype.itemsize != size - fh.tell():
        raise _Malformed("an array's data does not match its declared shape")
    flat = np.empty(count, dtype=dtype)
    raw = flat.view(np.uint8)
    for start in range(0, raw.shape[0], _CHUNK):
        chunk = fh.read(min(_CHUNK, raw.shape[0] - start))
        if len(chunk) != min(_CHUNK, raw.shape[0] - start):
            raise _Malformed("an array's data is truncated")
        raw[start:start + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
    return flat.reshape(shape, order="F" if fortran else "C")


def _json_depth(text: NDArray[np.uint8]) -> int:
    """The deepest ``[``/``{`` nesting of JSON ``text`` (UTF-8 bytes), brackets in strings aside.

    Vectorized: one pass per byte class, plus work in proportion to the quotes and
    backslashes. Runtime complexity: O(len(text)).
    """
    steps = _DEPTH_STEP[text]
    brackets = np.flatnonzero(steps)
    if brackets.shape[0] == 0:
        return 0
    quotes = np.flatnonzero(text == ord('"'))
    slashes = np.flatnonzero(text == ord("\\"))
    if quotes.shape[0] and slashes.shape[0]:  # a quote after an odd run of '\\' is escaped
        starts = np.ones(slashes.shape[0], dtype=bool)
        starts[1:] = np.diff(slashes) != 1
        run_start = np.maximum.accumulate(np.where(starts, slashes, 0))
        at = np.searchsorted(slashes, quotes - 1)
        found = (at < slashes.shape[0]) & (slashes[np.minimum(at, slashes.shape[0] - 1)]
                                           == quotes - 1)
        runs = np.zeros(quotes.shape[0], dtype=np.int64)
        runs[found] = quotes[found] - run_start[at[found]]
        quotes = quotes[runs % 2 == 0]
    outside = np.searchsorted(quotes, brackets) % 2 == 0
    return int(np.cumsum(steps[brackets[outside]], dtype=np.int64).max(initial=0))


def _parse_manifest(raw: NDArray[Any]) -> dict[str, Any]:
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise _Malformed("the manifest is not UTF-8 bytes")
    if _json_depth(raw) > MAX_DEPTH:
        raise _Malformed(f"the manifest nests deeper than {MAX_DEPTH} levels")
    manifest = json.loads(raw.tobytes().decode("utf-8", "surrogatepass"))
    if not isinstance(manifest, dict):
        raise _Malformed("the manifest is not a JSON object")
    decoded: dict[str, Any] = decode(manifest)
    return decoded


class Snapshot(NamedTuple):
    """A decoded snapshot: the manifest (JSON-like, arrays decoded) and the named arrays."""

    manifest: dict[str, Any]
    arrays: dict[str, np.ndarray[Any, Any]]
