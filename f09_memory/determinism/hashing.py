"""Canonical hashing (DESIGN.md rules 3-4): sha256 over canonical, quantized JSON.

The primitives (``DEFAULT_QUANTUM``, ``canonicalize``, ``canonical_json``, ``sha256_hex``)
live in the base-layer module :mod:`f09_memory.canonical` and are re-exported here;
this module adds :func:`bundle_hash`, the hash of a retrieval result.
"""

from __future__ import annotations

from f09_memory.canonical import DEFAULT_QUANTUM, canonical_json, canonicalize, sha256_hex
from f09_memory.schema.retrieval import RetrievedBundle

__all__ = ["DEFAULT_QUANTUM", "bundle_hash", "canonical_json", "canonicalize", "sha256_hex"]


def bundle_hash(bundle: RetrievedBundle) -> str:
    """Deterministic hash of a retrieval result.

    Covers records, totals, flags and diagnostics: everything but the measured ``timeMs``.
    """
    data = bundle.to_json_dict()
    data["diagnostics"].pop("timeMs", None)
    return sha256_hex(data)
