"""The seeded grid world: a host loop as a game or agent-based simulation runs one.

Agents walk a torus grid; each step every agent observes the agents near it (episodic
sightings, some repeated while nobody moves, some flagged fights), trades now and then
(social) and learns where resources are (semantic). The host loop around the engine is
what a Mesa model's ``step`` does, in the order a frame does it:

1. ``world.step()``: the world's own work (moves, neighbourhoods), no memory involved;
2. ``engine.ingest_batch``: the whole crowd's observations in one call;
3. ``engine.retrieve_many``: one context per agent (a query for every fourth agent);
4. every ``summarize_every`` steps: ``summarization.request`` for each agent without a
   pending task, and ``summarize_pending`` with a fast LLM double;
5. ``engine.tick(now, budget_ms=B)``.

Everything comes from one ``numpy.random.Generator`` seeded by ``seed``; the world's state
lives in numpy arrays so its own work stays small beside the engine's. The benchmark
(``benchmarks/bench_hostloop.py``) times each part with ``time.perf_counter``; the engine
itself never reads a clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import numpy as np

from f09_memory.config.config import MemoryConfig
from f09_memory.engine import DEFAULT_EMBEDDER, DefaultEmbedder, MemoryEngine
from f09_memory.errors import SummaryLockedError
from f09_memory.protocols import EmbeddingProvider
from f09_memory.schema.enums import Purpose
from f09_memory.schema.retrieval import RetrievalRequest, RetrievedBundle
from f09_memory.testing.doubles import ScriptedLLM

__all__ = ["GRID_CONFIG", "GridWorld", "HostStep", "grid_engine", "host_loop"]

STEP_MS = 1_000
"""Logical milliseconds per world step."""

GRID_CONFIG: dict[str, Any] = {
    "episodic_max": 400,
    "episodic_window": 20 * STEP_MS,
    "summarization_min_interval_ms": 25 * STEP_MS,
    "summarization_keep_recent": 40,
    "summarization_max_importance": 0.6,
    "dedup_window_ms": 10 * STEP_MS,
    "retention_policy": {"semantic_max": 120, "social_max": 100, "procedural_max": 50,
                         "protected_min": 10},
}
"""Config of the grid world's engine: windows in world steps, caps a long run reaches."""

_FEATURES = ("well", "berry bush", "oak", "stream", "cave", "ruin", "field", "camp")
_GOODS = ("berries", "flint", "wood", "fish", "hides", "salt")


class GridWorld:
    """Agents on a ``size`` x ``size`` torus, each step moving and observing neighbours.

    Args:
        agents: How many agents.
        seed: Seeds every draw.
        size: Grid side (the default puts about six agents within two cells of each one).
        radius: How far (Chebyshev) an agent sees.
        max_seen: Sightings per agent per step, at most.
    """

    def __init__(self, agents: int = 200, seed: int = 42, *, size: int | None = None,
                 radius: int = 2, max_seen: int = 5) -> None:
        self.rng = np.random.default_rng(seed)
        self.n = agents
        self.size = size if size is not None else max(4, round((agents * 4.2) ** 0.5))
        self.radius = radius
        self.max_seen = max_seen
        self.ids = [f"agent-{i:04d}" for i in range(agents)]
        self.pos = self.rng.integers(0, self.size, size=(agents, 2))
        self.step_no = 0

    def step(self) -> list[dict[str, Any]]:
        """Move every agent and return this step's observations as ``ingest_batch`` items."""
        rng, n, size = self.rng, self.n, self.size
        moving = rng.random(n) < 0.3  # most stay put: their sightings repeat (dedup)
        steps = rng.integers(-1, 2, size=(int(moving.sum()), 2))
        self.pos[moving] = (self.pos[moving] + steps) % size
        d = np.abs(self.pos[:, None, :] - self.pos[None, :, :])
        d = np.minimum(d, size - d).max(axis=2)
        near = (d <= self.radius) & ~np.eye(n, dtype=bool)
        roll = rng.random((n, 4))
        items: list[dict[str, Any]] = []
        step = self.step_no
        for i in range(n):
            me = self.ids[i]
            x, y = int(self.pos[i, 0]), int(self.pos[i, 1])
            feature = _FEATURES[(x * 7 + y * 3) % len(_FEATURES)]
            for j in np.flatnonzero(near[i])[: self.max_seen].tolist():
                items.append({"agent_id": me, "content": f"Saw {self.ids[j]} by the {feature} "
                              f"at ({x},{y}).", "layer": "episodic", "importance": 0.2,
                              "tags": ["sighting"]})
            if roll[i, 0] < 0.02:
                items.append({"agent_id": me, "content": f"Was attacked near the {feature} "
                              f"at ({x},{y}) on step {step}!", "layer": "episodic",
                              "importance": 0.9, "flagged": True, "tags": ["danger"]})
            if roll[i, 1] < 0.3:
                good = _GOODS[int(roll[i, 2] * len(_GOODS))]
                other = self.ids[(i + 1 + int(roll[i, 3] * (n - 1))) % n]
                items.append({"agent_id": me, "content": f"Traded {good} with {other} on "
                              f"step {step}.", "layer": "social", "importance": 0.4,
                              "tags": ["trade", good],
                              "metadata": {"attributes": {"with": other}}})
            if roll[i, 2] < 0.15:
                good = _GOODS[(x + y + step) % len(_GOODS)]
                items.append({"agent_id": me, "content": f"The {feature} at ({x},{y}) had "
                              f"{good} on step {step}.", "layer": "semantic",
                              "importance": 0.5, "tags": ["resource", good]})
        self.step_no += 1
        return items


def grid_engine(seed: int = 42, *,
                embedder: EmbeddingProvider | DefaultEmbedder | None = DEFAULT_EMBEDDER,
                **overrides: Any) -> MemoryEngine:
    """An engine as a host makes one: :data:`GRID_CONFIG` plus ``overrides``.

    ``embedder`` defaults to the engine's (the hashing embedder); pass a real model (e.g.
    ``SentenceTransformerEmbedder()`` with ``embedding_mode="async"``) to run the loop with
    it in the frame.
    """
    return MemoryEngine(MemoryConfig(**{**GRID_CONFIG, **overrides}), seed=seed,
                        embedder=embedder)


@dataclass(frozen=True, slots=True)
class HostStep:
    """One step of :func:`host_loop` (the caller times the parts it needs).

    Attributes:
        step: Step number (0-based).
        now: The step's logical time.
        items: Observations ingested this step.
        bundles: Retrieved this step, one per agent in id order.
    """

    step: int
    now: int
    items: int
    bundles: list[RetrievedBundle]


def _llm() -> ScriptedLLM:
    return ScriptedLLM(["Agents met by the well and the camp, trading berries, flint and "
                        "wood; one fight near the cave."])


def host_loop(engine: MemoryEngine, world: GridWorld, steps: int, *,
              budget_ms: float | None, summarize_every: int = 25,
              timer: Any = None, start: int = 0) -> Iterator[HostStep]:
    """Run ``steps`` world steps with the engine in the loop; yield after each tick.

    ``start`` is the first step's number (to go on after a save and load).

    ``timer``, if given, is called as ``timer(part)`` around each part (``"world"``,
    ``"ingest"``, ``"retrieve"``, ``"summarize"``, ``"tick"``) — a context-manager factory
    the benchmark uses to time them; ``None`` runs untimed.
    """
    llm = _llm()
    for step in range(start, start + steps):
        now = (step + 1) * STEP_MS
        with _part(timer, "world"):
            items = world.step()
        with _part(timer, "ingest"):
            engine.ingest_batch(items, now=now)
        requests = [RetrievalRequest(agent_id=a, purpose=Purpose.REASONING, max_tokens=300,
                                     query=("danger" if k % 4 == 0 else None), limit=12)
                    for k, a in enumerate(world.ids)]
        with _part(timer, "retrieve"):
            bundles = engine.retrieve_many(requests, now=now)
        if summarize_every and step % summarize_every == summarize_every - 1:
            with _part(timer, "summarize"):
                for agent_id in world.ids:
                    with suppress(SummaryLockedError):
                        engine.summarization.request(agent_id, now)
                engine.summarize_pending(llm, now=now)
        with _part(timer, "tick"):
            engine.tick(now, budget_ms=budget_ms)
        yield HostStep(step, now, len(items), bundles)


class _NoTimer:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_TIMER = _NoTimer()


def _part(timer: Any, name: str) -> Any:
    return _NO_TIMER if timer is None else timer(name)
