"""Determinism (index 19): canonical hashing, the village scenario, the process harness.

Modules: ``hashing`` (bundle_hash; re-exports canonical_json, sha256_hex and friends from
:mod:`f09_memory.canonical`), ``scenario`` (run_village, VillageResult), ``harness``
(run_isolated). This is an outer-ring package: it uses the engine, and nothing below the
engine imports it.
"""

from f09_memory.determinism.harness import run_isolated
from f09_memory.determinism.hashing import (
    DEFAULT_QUANTUM,
    bundle_hash,
    canonical_json,
    canonicalize,
    sha256_hex,
)
from f09_memory.determinism.scenario import VillageResult, run_village

__all__ = [
    "DEFAULT_QUANTUM",
    "VillageResult",
    "bundle_hash",
    "canonical_json",
    "canonicalize",
    "run_isolated",
    "run_village",
    "sha256_hex",
]
