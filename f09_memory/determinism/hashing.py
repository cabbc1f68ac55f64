"""Canonical hashing (DESIGN.md rules 3-4): the determinism package's view of it.

Re-exports the primitives of :mod:`f09_memory.canonical` (``DEFAULT_QUANTUM``,
``canonicalize``, ``canonical_json``, ``sha256_hex``) and the bundle hash of
:mod:`f09_memory.retrieval.digest` (``bundle_hash``, ``BundleHasher``, ``record_digest``),
which the engine itself computes for ``retrieve_many(..., hashes=True)``.
"""

from __future__ import annotations

from f09_memory.canonical import DEFAULT_QUANTUM, canonical_json, canonicalize, sha256_hex
from f09_memory.retrieval.digest import BundleHasher, bundle_hash, record_digest

__all__ = [
    "DEFAULT_QUANTUM",
    "BundleHasher",
    "bundle_hash",
    "canonical_json",
    "canonicalize",
    "record_digest",
    "sha256_hex",
]
