"""One quantum, quantization and canonical hashing (DESIGN.md rules 3-4): a base-layer module.

Floats never order or hash anything raw: each becomes ``rint(x * quantum)`` (an int), so a
last-bit difference between CPUs or BLAS builds cannot reorder results or change a hash.
:func:`quantize` is the array form, :func:`quantize_scalar` the scalar form; both round half
to even in float64, so the same float gives the same integer either way.

Canonical JSON sorts keys, has no whitespace, keeps non-ASCII as UTF-8 and quantizes every
float; :func:`sha256_hex` is the sha256 of those bytes. Imports only the standard library,
numpy and :mod:`f09_memory.errors`.
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from collections.abc import Mapping
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import InputInvalidError

__all__ = [
    "DEFAULT_QUANTUM",
    "canonical_json",
    "canonicalize",
    "quantize",
    "quantize_scalar",
    "sha256_hex",
    "text_digest64",
]

DEFAULT_QUANTUM = 1_000_000_000
"""The default quantum: scores and similarities are integers of ``1e-9``
(``MemoryConfig.score_quantum``)."""


def quantize(scores: NDArray[np.floating[Any]], quantum: int) -> NDArray[np.int64]:
    """Round floats to integers of ``1 / quantum`` (order and hash these, never raw floats).

    Runtime complexity: ``O(n)``, vectorized.

    Args:
        scores: Scores or similarities (float64; other float dtypes are widened first).
        quantum: The quantum.

    Returns:
        ``rint(scores * quantum)`` as int64, computed in float64 (round half to even).
    """
    wide = np.asarray(scores, dtype=np.float64)
    return np.rint(wide * float(quantum)).astype(np.int64)


def quantize_scalar(value: float, quantum: int) -> int:
    """Round one float to an integer of ``1 / quantum``: :func:`quantize` for a scalar.

    Args:
        value: A finite float.
        quantum: The quantum.

    Returns:
        ``round(value * quantum)`` (float64 product, round half to even), the same integer
        :func:`quantize` gives for ``value`` in a float64 array.
    """
    return round(float(value) * float(quantum))


def canonicalize(value: Any, quantum: int = DEFAULT_QUANTUM) -> Any:
    """Return a JSON-safe copy of ``value`` with every float quantized to an int.

    Tuples become lists, enums their values, mappings get string keys. NaN and infinities
    are encoded as the strings ``"nan"``, ``"inf"``, ``"-inf"``.

    Args:
        value: JSON-like data (str, int, float, bool, None, lists, tuples, mappings, enums,
            numpy scalars).
        quantum: Floats become ``round(x * quantum)``.

    Returns:
        The canonical copy.

    Raises:
        InputInvalidError: ``value`` holds something else (``MEMORY_INPUT_INVALID``).
    """
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return round(value * quantum)
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Enum):
        return canonicalize(value.value, quantum)
    if isinstance(value, Mapping):
        return {str(k): canonicalize(v, quantum) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonicalize(v, quantum) for v in value]
    if hasattr(value, "item"):  # numpy scalar
        return canonicalize(value.item(), quantum)
    raise InputInvalidError(
        f"cannot hash a {type(value).__name__}: use JSON-like values (str, int, float, bool, "
        "None, lists, mappings, enums)",
        details={"type": type(value).__name__},
    )


def canonical_json(value: Any, quantum: int = DEFAULT_QUANTUM) -> bytes:
    """Canonical UTF-8 JSON bytes of ``value`` (sorted keys, compact, quantized floats).

    Args:
        value: JSON-like data (see :func:`canonicalize`).
        quantum: Float quantum.

    Returns:
        The bytes; equal values give equal bytes in every process.
    """
    return json.dumps(
        canonicalize(value, quantum), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8", "surrogatepass")


def sha256_hex(value: Any, quantum: int = DEFAULT_QUANTUM) -> str:
    """sha256 hex digest of :func:`canonical_json`.

    Args:
        value: JSON-like data (see :func:`canonicalize`).
        quantum: Float quantum.

    Returns:
        64 lowercase hex characters.
    """
    return hashlib.sha256(canonical_json(value, quantum)).hexdigest()


def text_digest64(text: str) -> int:
    """A 64-bit digest of ``text``'s UTF-8 bytes: two CRC-32s with different seeds.

    Stable across processes and machines (no ``PYTHONHASHSEED``); for keys the engine
    confirms (dedup fingerprints) or adds up (vocabulary digests), not for security.
    """
    raw = text.encode("utf-8", "surrogatepass")
    return (zlib.crc32(raw, 0x9E3779B9) << 32) | zlib.crc32(raw)
