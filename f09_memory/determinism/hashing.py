"""Canonical hashing (DESIGN.md rules 3-4): sha256 over canonical, quantized JSON.

Floats are never hashed raw: each becomes ``round(x * quantum)`` (an int), so a last-bit
difference between CPUs or BLAS builds cannot change a hash. Keys are sorted, separators
have no whitespace, and non-ASCII is kept as UTF-8.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from enum import Enum
from typing import Any

from f09_memory.errors import InputInvalidError
from f09_memory.schema.retrieval import RetrievedBundle

__all__ = ["DEFAULT_QUANTUM", "bundle_hash", "canonical_json", "canonicalize", "sha256_hex"]

DEFAULT_QUANTUM = 1_000_000_000


def canonicalize(value: Any, quantum: int = DEFAULT_QUANTUM) -> Any:
    """Return a JSON-safe copy of ``value`` with every float quantized to an int.

    Tuples become lists, enums their values, mappings get string keys. NaN and infinities
    are encoded as the strings ``"nan"``, ``"inf"``, ``"-inf"``.
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
    ).encode("utf-8")


def sha256_hex(value: Any, quantum: int = DEFAULT_QUANTUM) -> str:
    """sha256 hex digest of :func:`canonical_json`."""
    return hashlib.sha256(canonical_json(value, quantum)).hexdigest()


def bundle_hash(bundle: RetrievedBundle) -> str:
    """Deterministic hash of a retrieval result.

    Covers records, totals, flags and diagnostics: everything but the measured ``timeMs``.
    """
    data = bundle.to_json_dict()
    data["diagnostics"].pop("timeMs", None)
    return sha256_hex(data)
