from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import f09_memory

ROOT = Path(f09_memory.__file__).resolve().parent

# Import a sub-package without running f09_memory/__init__.py (which re-exports the engine
# on purpose), so the modules listed are exactly what the sub-package itself pulls in.
PROBE = """
import importlib, json, sys, types
pkg = types.ModuleType("f09_memory")
pkg.__path__ = [sys.argv[1]]
sys.modules["f09_memory"] = pkg
importlib.import_module(sys.argv[2])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("f09_memory"))))
"""


def imported_by(module: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT), module],
        capture_output=True, text=True, check=True, cwd=ROOT.parent,
    )
    loaded: list[str] = json.loads(proc.stdout)
    return loaded


def test_importing_the_testing_doubles_imports_no_engine() -> None:
    loaded = imported_by("f09_memory.testing")
    assert {"f09_memory.testing.doubles", "f09_memory.testing.embedding_server"} <= set(loaded)
    assert "f09_memory.engine" not in loaded
    assert [] == [m for m in loaded if m.startswith(("f09_memory.determinism",
                                                     "f09_memory.evaluation"))]


def test_the_engine_imports_no_outer_ring_package() -> None:
    loaded = imported_by("f09_memory.engine")
    outer = ("f09_memory.determinism", "f09_memory.evaluation", "f09_memory.testing",
             "f09_memory.runtime", "f09_memory.tools", "f09_memory.cli")
    assert [] == [m for m in loaded if m.startswith(outer)]


def test_the_doubles_and_the_embedding_server_are_all_the_testing_package_exports() -> None:
    import f09_memory.testing as testing

    assert {"FailingEmbedder", "FailingLLM", "FakeEmbedder", "ScriptedLLM",
            "ScriptedPressure", "capture_events",
            "DEFAULT_FAULTS", "EmbeddingServer", "Fault", "fault_schedule"} == set(testing.__all__)
