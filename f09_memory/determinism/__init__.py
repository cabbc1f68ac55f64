"""Determinism (index 19): canonical hashing, the village scenario, the process harness.

Modules: ``hashing`` (canonical_json, sha256_hex, bundle_hash), ``scenario`` (run_village,
VillageResult), ``harness`` (run_isolated). ``scenario`` and ``harness`` use the engine, so
they load on first access (the engine itself imports ``hashing``).
"""

from typing import Any

from f09_memory.determinism.hashing import (
    DEFAULT_QUANTUM,
    bundle_hash,
    canonical_json,
    canonicalize,
    sha256_hex,
)

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

_LAZY = {"VillageResult": "scenario", "run_village": "scenario", "run_isolated": "harness"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module = importlib.import_module(f"f09_memory.determinism.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(name)
