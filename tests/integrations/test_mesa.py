"""Mesa models with memory: the step as time, the model's seed, per-agent views of one engine,
determinism across processes (the example model), bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.integrations.mesa import (
    MemoryAgentMixin,
    ModelMemory,
    attach_memory,
    engine_seed,
    step_config,
)

pytest.importorskip("mesa")

import mesa

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mesa_foragers.py"


class Walker(MemoryAgentMixin, mesa.Agent):  # type: ignore[misc]
    def step(self) -> None:
        self.memory.observe(f"Step {self.model.steps}: walker {self.unique_id} saw "
                            f"{self.model.random.choice(['a fox', 'a deer', 'rain'])}.")


class Meadow(mesa.Model):  # type: ignore[misc]
    def __init__(self, seed: int, walkers: int = 4, **config: object) -> None:
        super().__init__(seed=seed)
        attach_memory(self, step_config(**config) if config else None)
        Walker.create_agents(self, walkers)

    def step(self) -> None:
        self.agents.shuffle_do("step")
        self.memory.tick(budget_ms=1.0)


def run(seed: int, steps: int = 12) -> Meadow:
    model = Meadow(seed)
    for _ in range(steps):
        model.step()
    return model


def test_the_step_is_the_time_and_each_agent_has_its_own_view() -> None:
    model = Meadow(seed=3)
    first = sorted(model.agents, key=lambda a: a.unique_id)[0]
    at_init = first.memory.observe("Born in the meadow.")
    assert 0 == at_init.created_at and "agent-1" == at_init.agent_id
    model.step()
    model.step()
    assert 2 == model.memory.now == model.memory.engine.now
    newest = first.memory.recent(1)[0]
    assert 2 == newest.created_at and newest.content.startswith("Step 2:")
    assert 3 == first.memory.count() and first.memory is first.memory
    assert ["agent-1", "agent-2", "agent-3", "agent-4"] == model.memory.engine.agents()
    assert all(r.agent_id == "agent-1" for r in first.memory.records())
    assert first.memory.recall("fox deer rain", k=2)
    assert 2 == len(first.memory.recall(k=2))


def test_the_engine_seed_is_the_models_seed() -> None:
    model = Meadow(seed=1234)
    assert 1234 == model.memory.engine.seed
    assert 99 == ModelMemory(model, seed=99).engine.seed
    assert 5 == engine_seed(SimpleNamespace(_seed=5.0))
    assert 2**63 - 1 == engine_seed(SimpleNamespace(_seed=-1))
    text_seed = engine_seed(SimpleNamespace(_seed="village"))
    assert text_seed == engine_seed(SimpleNamespace(_seed="village"))
    assert 0 <= text_seed < 2**63 and text_seed != engine_seed(SimpleNamespace(_seed="other"))


def test_same_seed_same_state_and_another_seed_another() -> None:
    a, b, c = run(seed=7), run(seed=7), run(seed=8)
    assert a.memory.engine.state_hash() == b.memory.engine.state_hash()
    assert a.memory.engine.state_hash() != c.memory.engine.state_hash()


def test_step_config_counts_in_steps_and_takes_changes() -> None:
    config = step_config(decay_half_life_ms=20, procedural={"window_ms": 2})
    assert 20 == config.decay_half_life_ms and 2 == config.procedural.window_ms
    assert 50 == config.episodic_window
    assert 100 == step_config().decay_half_life_ms
    with pytest.raises(MemoryEngineError) as err:
        step_config(decay_half_life_ms=0)
    assert ErrorCode.MEMORY_CONFIG_INVALID == err.value.code


def test_ttl_and_summaries_run_in_steps() -> None:
    model = Meadow(seed=2, walkers=1, summarization_batch_size=4, summarization_keep_recent=2,
                   episodic_window=3, summarization_min_interval_ms=2)
    walker = next(iter(model.agents))
    walker.memory.observe("A fleeting smell.", ttl=2)
    for _ in range(12):
        model.step()
    contents = [r.content for r in walker.memory.records()]
    assert "A fleeting smell." not in contents
    assert walker.memory.records("semantic"), "old episodic steps were summarized"


def test_an_agent_leaving_forgets_and_views_are_per_agent_id() -> None:
    model = run(seed=4, steps=3)
    walker = sorted(model.agents, key=lambda a: a.unique_id)[1]
    assert 3 == walker.memory.forget()
    assert 0 == walker.memory.forget() == walker.memory.count()
    assert model.memory.view(walker) is model.memory.view(walker.unique_id)
    assert "agent-2" == model.memory.agent_id(2)


def test_memory_without_a_model_memory_and_bad_arguments_raise() -> None:
    class Bare(mesa.Model):  # type: ignore[misc]
        pass

    bare = Bare(seed=1)
    lost = Walker(bare)
    with pytest.raises(MemoryEngineError) as err:
        lost.memory.observe("x")
    assert ErrorCode.MEMORY_INPUT_INVALID == err.value.code
    attach_memory(bare)
    with pytest.raises(MemoryEngineError):
        attach_memory(bare)  # once per model
    for bad in (lambda: ModelMemory(object()), lambda: ModelMemory(bare, agent_prefix=3),
                lambda: bare.memory.view("x"), lambda: bare.memory.view(True),
                lambda: engine_seed(SimpleNamespace(steps=0)),
                lambda: ModelMemory(SimpleNamespace(steps=0))):
        with pytest.raises(MemoryEngineError) as err:
            bad()  # type: ignore[no-untyped-call]
        assert ErrorCode.MEMORY_INPUT_INVALID == err.value.code


def test_a_given_config_and_embedder_are_used() -> None:
    model = SimpleNamespace(steps=0, _seed=3)
    memory = ModelMemory(model, MemoryConfig(episodic_max=2), embedder=None)
    view = memory.view(1)
    for i in range(3):
        model.steps = i
        view.observe(f"memory {i}")
    assert ["memory 1", "memory 2"] == [r.content for r in view.records()]
    assert memory.engine.embedder is None
    assert isinstance(memory.engine, MemoryEngine)


def _example(hash_seed: int, steps: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(EXAMPLE), "--steps", str(steps)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONHASHSEED=str(hash_seed)))


def test_the_example_model_is_identical_across_processes_and_hash_seeds() -> None:
    runs = [_example(h, 25) for h in (0, 4242)]  # in parallel
    outs: list[Any] = [p.communicate(timeout=180) for p in runs]
    assert all(0 == p.returncode for p in runs), outs[0][1][-2000:]
    assert outs[0][0] == outs[1][0]
    assert "state hash: " in outs[0][0] and "Berries grow at" in outs[0][0]
