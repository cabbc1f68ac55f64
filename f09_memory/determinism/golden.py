"""Golden hashes of the built-in scenarios, committed with the package and checked in CI.

A change that alters what the engine stores or returns for the same inputs changes these
hashes; if the change is meant, run ``f09-memory determinism --update-golden`` and commit
``golden.json`` with it (the commit says why behaviour changed). ``f09-memory determinism
--golden`` and ``tests/determinism/test_golden.py`` recompute them and compare.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from f09_memory.config.config import MemoryConfig
from f09_memory.determinism.scenario import LIFECYCLE_CONFIG, run_village, scripted_village_llm
from f09_memory.engine import MemoryEngine

__all__ = ["GOLDEN_PATH", "GOLDEN_SCENARIOS", "compute_golden", "golden_mismatches",
           "read_golden", "write_golden"]

GOLDEN_PATH = Path(__file__).with_name("golden.json")
"""Where the committed hashes live (inside the package)."""

GOLDEN_SCENARIOS: dict[str, dict[str, Any]] = {
    "village": {"agents": 50, "ticks": 200, "seed": 42},
    "village-lifecycle": {"agents": 8, "ticks": 60, "seed": 7, "lifecycle": True},
}
"""Name -> parameters: the default ``f09-memory simulate`` run, and a short run that
summarizes (scripted LLM and fallback) and compacts."""


def compute_golden(name: str) -> dict[str, str]:
    """Run the named scenario in this process; ``{"retrievalHash", "stateHash"}``."""
    params = GOLDEN_SCENARIOS[name]
    lifecycle = bool(params.get("lifecycle"))
    config = MemoryConfig(**LIFECYCLE_CONFIG) if lifecycle else MemoryConfig()
    result = run_village(MemoryEngine(config, seed=params["seed"]), agents=params["agents"],
                         ticks=params["ticks"], seed=params["seed"],
                         tick_ms=10_000 if lifecycle else 1_000,
                         llm=scripted_village_llm() if lifecycle else None)
    return {"retrievalHash": result.retrieval_hash, "stateHash": result.state_hash}


def read_golden(path: Path | None = None) -> dict[str, dict[str, str]]:
    """The committed hashes by scenario name (from ``path``, default :data:`GOLDEN_PATH`)."""
    data: dict[str, dict[str, str]] = json.loads(
        (path or GOLDEN_PATH).read_text(encoding="utf-8"))
    return data


def write_golden(path: Path | None = None) -> dict[str, dict[str, str]]:
    """Recompute every golden scenario and write the file; return what was written."""
    data = {name: compute_golden(name) for name in GOLDEN_SCENARIOS}
    (path or GOLDEN_PATH).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n",
                                     encoding="utf-8")
    return data


def golden_mismatches(path: Path | None = None) -> list[str]:
    """Recompute every scenario; one line per hash that differs from the file (none: ok)."""
    expected = read_golden(path)
    out = []
    for name in GOLDEN_SCENARIOS:
        got = compute_golden(name)
        for key, value in got.items():
            want = expected.get(name, {}).get(key)
            if want != value:
                out.append(f"{name} {key}: committed {want}, computed {value}")
    return out
