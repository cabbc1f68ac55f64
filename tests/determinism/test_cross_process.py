"""Determinism is proven in separate processes with different PYTHONHASHSEED values."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.determinism import run_isolated, run_village
from f09_memory.determinism.scenario import LIFECYCLE_CONFIG, scripted_village_llm


def test_village_hashes_are_identical_across_processes_and_hash_seeds() -> None:
    runs = [run_isolated(agents=6, ticks=40, seed=11, hash_seed=h, episodic_max=30)
            for h in (0, 1, 12345)]
    assert runs[0] == runs[1] == runs[2]
    local = run_village(MemoryEngine(MemoryConfig(episodic_max=30), seed=11), agents=6,
                        ticks=40, seed=11)
    assert runs[0] == local.hashes()


def test_different_seeds_give_different_hashes() -> None:
    a = run_village(MemoryEngine(MemoryConfig(), seed=1), agents=4, ticks=20, seed=1)
    b = run_village(MemoryEngine(MemoryConfig(), seed=2), agents=4, ticks=20, seed=2)
    assert a.state_hash != b.state_hash
    assert a.retrieval_hash != b.retrieval_hash


def test_scenario_exercises_every_event_kind_of_the_core_path() -> None:
    result = run_village(MemoryEngine(MemoryConfig(episodic_max=30), seed=3), agents=6,
                         ticks=100, seed=3)
    for name in ["memory:record:created", "memory:record:expired", "memory:record:redacted",
                 "memory:retrieval", "memory:decay:applied", "memory:pressure:changed"]:
        assert result.events.get(name, 0) > 0, name


def test_village_with_summarization_and_compaction_is_identical_across_processes() -> None:
    runs = [run_isolated(agents=5, ticks=60, seed=4, hash_seed=h, lifecycle=True)
            for h in (0, 777)]
    assert runs[0] == runs[1]
    engine = MemoryEngine(MemoryConfig(**LIFECYCLE_CONFIG), seed=4)
    local = run_village(engine, agents=5, ticks=60, seed=4, tick_ms=10_000,
                        llm=scripted_village_llm())
    assert runs[0] == local.hashes()
    for name in ["memory:summarization:queued", "memory:summarization:completed",
                 "memory:compaction"]:
        assert local.events.get(name, 0) > 0, name


_GRID = """
from f09_memory.determinism.gridworld import GridWorld, grid_engine, host_loop
from f09_memory.determinism.hashing import bundle_hash
engine = grid_engine(seed=9, retention_policy={"semantic_max": 12, "social_max": 10,
                                               "procedural_max": 5, "protected_min": 3})
hashes = []
for step in host_loop(engine, GridWorld(agents=30, seed=9), 40, budget_ms=0.3,
                      summarize_every=10):
    hashes.extend(bundle_hash(b) for b in step.bundles[::7])
print(engine.state_hash(), len(hashes), hashes[-1])
"""


def test_grid_world_with_budgeted_ticks_is_identical_across_processes() -> None:
    outs = [subprocess.run([sys.executable, "-c", _GRID], capture_output=True, text=True,
                           check=True, env=dict(os.environ, PYTHONHASHSEED=str(h))).stdout
            for h in (0, 4242)]
    assert outs[0] == outs[1] and len(outs[0].split()) == 3


_LAYERS_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "grid_layers.py"


def test_the_game_layers_example_is_identical_across_processes_and_hash_seeds() -> None:
    """Engine events, the social ledger, spatial memory and the miner, end to end."""
    outs = [subprocess.run([sys.executable, str(_LAYERS_EXAMPLE), "--steps", "120"],
                           capture_output=True, text=True, check=True, timeout=120,
                           env=dict(os.environ, PYTHONHASHSEED=str(h))).stdout
            for h in (0, 12345)]
    assert outs[0] == outs[1]
    text = outs[0]
    for shown in ("food it remembers: Berry bushes", "trusts villager-", "when hungry: ",
                  "navigating, it recalls: ", "'procedural': "):
        assert shown in text, shown
    assert re.search(r"^final state hash: [0-9a-f]{64}$", text, re.MULTILINE)
