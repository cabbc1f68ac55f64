"""Canonical forms (DESIGN.md rules 3-4): one quantum, quantization, canonical JSON, sha256.

Floats are never hashed raw: each becomes ``round(x * quantum)`` (an int), so a last-bit
difference between CPUs or BLAS builds cannot change a hash. Keys are sorted, separators
have no whitespace, and non-ASCII is kept as UTF-8. Base layer: imports only the errors.
"""

from __future__ import annotations

import hashlib
import json
import math
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
]

DEFAULT_QUANTUM = 1_000_000_000
"""Scores and floats become integers of ``1/DEFAULT_QUANTUM`` before ordering or hashing."""


def quantize(scores: NDArray[np.float64], quantum: int = DEFAULT_QUANTUM) -> NDArray[np.int64]:
    """Round scores to integers of ``1/quantum`` (order and hash these, never raw floats)."""
    return np.rint(scores * quantum).astype(np.int64)


def quantize_scalar(value: float, quantum: int = DEFAULT_QUANTUM) -> int:
    """The scalar form of :func:`quantize` (same rounding: half to even)."""
    return int(np.rint(value * quantum))


def canonicalize(value: Any, quantum: int = DEFAULT_QUANTUM) -> Any:
    """Return a JSON-safe copy of ``value`` with every float quantized to an int.

    Tuples become lists, enums their values, mappings get string keys. NaN and infinities
    are encoded as the strings ``"nan"``, ``"inf"``, ``"-inf"``.

    Raises:
        InputInvalidError: A value that is not JSON-like.
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
    """Canonical UTF-8 JSON bytes of ``value`` (sorted keys, compact, quantized floats)."""
    return json.dumps(
        canonicalize(value, quantum), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8", "surrogatepass")


def sha256_hex(value: Any, quantum: int = DEFAULT_QUANTUM) -> str:
    """sha256 hex digest of :func:`canonical_json`."""
    return hashlib.sha256(canonical_json(value, quantum)).hexdigest()
