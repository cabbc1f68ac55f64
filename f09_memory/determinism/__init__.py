"""Determinism (index 19): canonical hashing, the village scenario, the process harness.

Modules: ``hashing`` (bundle_hash; re-exports canonical_json, sha256_hex and friends from
:mod:`f09_memory.canonical`), ``scenario`` (Village, run_village, VillageResult),
``harness`` (run_isolated), ``checker`` (check_determinism, assert_deterministic: a user's
scenario across processes and a save/load, naming the first divergent tick, agent, record
and field), ``plugin`` (the pytest plugin: ``pytest -p f09_memory.determinism.plugin``),
``golden`` (the built-in scenarios' committed hashes). This is an outer-ring package: it
uses the engine, and nothing below the engine imports it.
"""

from f09_memory.determinism.checker import (
    DeterminismError,
    DeterminismReport,
    Divergence,
    assert_deterministic,
    check_determinism,
)
from f09_memory.determinism.harness import run_isolated
from f09_memory.determinism.hashing import (
    DEFAULT_QUANTUM,
    bundle_hash,
    canonical_json,
    canonicalize,
    sha256_hex,
)
from f09_memory.determinism.scenario import Village, VillageResult, run_village

__all__ = [
    "DEFAULT_QUANTUM",
    "DeterminismError",
    "DeterminismReport",
    "Divergence",
    "Village",
    "VillageResult",
    "assert_deterministic",
    "bundle_hash",
    "canonical_json",
    "canonicalize",
    "check_determinism",
    "run_isolated",
    "run_village",
    "sha256_hex",
]
