"""Memory for Mesa agents (extra ``[mesa]``, mesa 3.x): one engine per model, a view per agent.

A Mesa model owns one :class:`~f09_memory.MemoryEngine` through :class:`ModelMemory`
(``attach_memory(model)`` sets ``model.memory``); the model's step counter
(``model.steps``) is the engine's logical time and the model's seed is the engine's seed,
so a seeded model remembers and recalls the same way in every run and process. An agent
class that mixes in :class:`MemoryAgentMixin` gets ``self.memory``, a :class:`MemoryView`
of that one engine scoped to the agent (engine agent id ``f"agent-{unique_id}"``)::

    class Forager(MemoryAgentMixin, CellAgent):
        def step(self) -> None:
            self.memory.observe("Berries by the river.", tags=["food"])
            hits = self.memory.recall("where is food", k=3)

    class Valley(mesa.Model):
        def __init__(self, seed: int) -> None:
            super().__init__(seed=seed)
            attach_memory(self)                       # step_config() unless one is given
            Forager.create_agents(self, 20)

        def step(self) -> None:
            self.agents.shuffle_do("step")
            self.memory.tick()                        # maintenance at the model's step

**Time is in steps.** Every ``_ms`` setting of :class:`~f09_memory.MemoryConfig`
(``decay_half_life_ms``, ``episodic_window``, ``summarization_min_interval_ms``, TTLs, ...)
then counts steps: :func:`step_config` gives step-sized defaults, and any field can be
changed there. Nothing here imports Mesa: models and agents are duck-typed (``model.steps``,
the seed Mesa 3 keeps as ``model._seed``, ``agent.unique_id``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

from f09_memory.config import MemoryConfig
from f09_memory.engine import DEFAULT_EMBEDDER, DefaultEmbedder, MemoryEngine, TickReport
from f09_memory.errors import InputInvalidError
from f09_memory.protocols import EmbeddingProvider
from f09_memory.schema import (
    MemoryLayer,
    MemoryRecord,
    Purpose,
    RetrievalRequest,
    Strategy,
)

__all__ = [
    "MemoryAgentMixin",
    "MemoryView",
    "ModelMemory",
    "attach_memory",
    "engine_seed",
    "step_config",
]

class _Model(Protocol):
    """What the helpers read of a Mesa model."""

    steps: int


def engine_seed(model: object) -> int:
    """The engine seed of ``model``: the seed Mesa 3 drew or was given (``model._seed``).

    An int in ``0..2**63-1`` is used as is (another int modulo ``2**63``, an integral float
    as its int); any other seed (a str, a fractional float) maps to the first 63 bits of the
    sha256 of its ``repr``, the same in every process.

    Raises:
        InputInvalidError: The model keeps no seed: pass ``seed=`` to :class:`ModelMemory`.
    """
    seed = getattr(model, "_seed", None)
    if seed is None:
        raise InputInvalidError(
            "the model keeps no seed (Mesa 3 stores it as model._seed): seed the model with "
            "Model(seed=...) or pass seed= to ModelMemory", details={"field": "seed"})
    if isinstance(seed, float) and math.isfinite(seed) and seed.is_integer():
        seed = int(seed)
    if isinstance(seed, int) and not isinstance(seed, bool):
        return seed % 2**63
    digest = hashlib.sha256(repr(seed).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def step_config(**changes: object) -> MemoryConfig:
    """A config whose durations are steps, with step-sized defaults, plus ``changes``.

    The defaults: ``decay_half_life_ms=100`` (recency falls to 1/e in 100 steps),
    ``episodic_window=50`` (older episodic records may be summarized),
    ``summarization_min_interval_ms=10`` (an agent is checked every 10 steps at most),
    ``summarization_grouping_gap_ms=5``, ``summarization_timeout_ms=5`` (an LLM summary
    not completed within 5 steps of its poll takes the heuristic summary) and
    ``procedural.window_ms=5`` (an action extends a procedure within 5 steps). ``changes``
    are ``MemoryConfig`` fields (snake_case or camelCase) and win over these; a nested
    group replaces the default's whole group (``procedural={"window_ms": 3}``).

    Raises:
        ConfigInvalidError: A change is out of range (the message names the field).
    """
    defaults: dict[str, object] = {
        "decay_half_life_ms": 100, "episodic_window": 50, "summarization_min_interval_ms": 10,
        "summarization_grouping_gap_ms": 5, "summarization_timeout_ms": 5,
        "procedural": {"window_ms": 5}}
    return MemoryConfig.parse({**defaults, **changes})


class ModelMemory:
    """One engine for a Mesa model: its step is the logical time, its seed the engine seed.

    Args:
        model: The Mesa model (anything with ``steps``; the seed is read by
            :func:`engine_seed` unless ``seed`` is given).
        config: Settings; default :func:`step_config` (durations in steps).
        seed: The engine seed; default the model's.
        embedder: The embedding provider (default: the seeded hashing embedder).
        agent_prefix: Engine agent ids are ``f"{agent_prefix}{unique_id}"``.

    Raises:
        InputInvalidError: ``model`` has no integer ``steps``, no seed can be found, or a
            bad prefix.
    """

    def __init__(self, model: object, config: MemoryConfig | None = None, *,
                 seed: int | None = None,
                 embedder: EmbeddingProvider | DefaultEmbedder | None = DEFAULT_EMBEDDER,
                 agent_prefix: str = "agent-") -> None:
        steps = getattr(model, "steps", None)
        if isinstance(steps, bool) or not isinstance(steps, int):
            raise InputInvalidError("model must be a Mesa model (an int `steps` counter)",
                                    details={"field": "model"})
        if not isinstance(agent_prefix, str):
            raise InputInvalidError("agent_prefix must be a str",
                                    details={"field": "agent_prefix"})
        self._model = cast(_Model, model)
        self._prefix = agent_prefix
        self._engine = MemoryEngine(step_config() if config is None else config,
                                    seed=engine_seed(model) if seed is None else seed,
                                    embedder=embedder)
        self._views: dict[str, MemoryView] = {}

    @property
    def engine(self) -> MemoryEngine:
        """The shared engine (all agents' memories; ``engine.state_hash()`` and the rest)."""
        return self._engine

    @property
    def now(self) -> int:
        """The logical time: the model's ``steps`` (1 during the first ``step()``)."""
        return int(self._model.steps)

    def agent_id(self, agent: object) -> str:
        """The engine agent id of ``agent`` (a Mesa agent, or its ``unique_id``).

        Raises:
            InputInvalidError: ``agent`` has no integer ``unique_id``.
        """
        uid = agent if isinstance(agent, int) else getattr(agent, "unique_id", None)
        if isinstance(uid, bool) or not isinstance(uid, int):
            raise InputInvalidError("agent must be a Mesa agent or its int unique_id",
                                    details={"field": "agent"})
        return f"{self._prefix}{uid}"

    def view(self, agent: object) -> MemoryView:
        """The memory of ``agent`` (created on first use, then the same object). O(1).

        Raises:
            InputInvalidError: See :meth:`agent_id`.
        """
        agent_id = self.agent_id(agent)
        view = self._views.get(agent_id)
        if view is None:
            view = self._views[agent_id] = MemoryView(self, agent_id)
        return view

    def tick(self, budget_ms: float | None = None) -> TickReport:
        """``engine.tick`` at the model's step: maintenance (expiry, summaries, compaction).

        Raises:
            InputInvalidError: A bad budget.
        """
        return self._engine.tick(self.now, budget_ms)


class MemoryView:
    """One agent's memory: the shared engine's calls with its agent id and the model's step.

    Made by :meth:`ModelMemory.view` (or ``agent.memory``). Records are
    :class:`~f09_memory.MemoryRecord` objects; errors are the engine's.
    """

    __slots__ = ("_memory", "agent_id")

    def __init__(self, memory: ModelMemory, agent_id: str) -> None:
        self._memory = memory
        self.agent_id = agent_id
        """The engine agent id of this view."""

    @property
    def engine(self) -> MemoryEngine:
        """The shared engine."""
        return self._memory.engine

    def observe(self, content: str, *, layer: MemoryLayer | str = MemoryLayer.EPISODIC,
                importance: float | None = None, tags: Sequence[str] | None = None,
                metadata: Mapping[str, Any] | None = None, ttl: int | None = None,
                flagged: bool = False) -> MemoryRecord:
        """Store a memory now (``engine.ingest`` at the model's step). Amortized O(1).

        ``ttl`` counts steps; ``importance`` defaults to the heuristic estimate.
        """
        return self.engine.ingest(self.agent_id, content, layer=layer, importance=importance,
                                  tags=tags, metadata=metadata, ttl=ttl, flagged=flagged,
                                  now=self._memory.now)

    def recall(self, query: str | None = None, *, k: int = 5,
               purpose: Purpose | str = Purpose.REASONING,
               strategy: Strategy | str | None = None,
               tags_any: Sequence[str] | None = None,
               position: Sequence[float] | None = None) -> list[MemoryRecord]:
        """The agent's ``k`` best memories now, best first (``RetrievalRequest(limit=k)``).

        ``strategy`` defaults to ``semantic`` with a query and ``balanced`` without;
        ``position`` adds the proximity term (the ``navigation`` purpose weighs it).
        Ordering: quantized score descending, then id. O(n) numpy plus O(k log k).
        """
        if strategy is None:
            strategy = Strategy.BALANCED if query is None else Strategy.SEMANTIC
        request = RetrievalRequest.parse({
            "agent_id": self.agent_id, "purpose": purpose, "strategy": strategy, "limit": k,
            "query": query, "tags_any": None if tags_any is None else tuple(tags_any),
            "position": None if position is None else tuple(position)})
        return self.engine.retrieve(request, now=self._memory.now).records

    def recent(self, k: int, layer: MemoryLayer | str | None = None) -> list[MemoryRecord]:
        """The ``k`` newest memories, newest first (``engine.recent``)."""
        return self.engine.recent(self.agent_id, k, layer)

    def records(self, layer: MemoryLayer | str | None = None) -> list[MemoryRecord]:
        """Every live memory, oldest first (``engine.records``)."""
        return self.engine.records(self.agent_id, layer)

    def count(self, layer: MemoryLayer | str | None = None) -> int:
        """How many live memories (``engine.count``). O(1) per agent."""
        return self.engine.count(self.agent_id, layer)

    def forget(self) -> int:
        """Drop all of the agent's memories (when it leaves the model); returns how many."""
        if not self.count():
            return 0
        return self.engine.forget(agent_id=self.agent_id)


class MemoryAgentMixin:
    """Gives a Mesa agent ``self.memory``: its :class:`MemoryView` of ``self.model.memory``.

    Put it before the Mesa base class (``class Forager(MemoryAgentMixin, CellAgent)``); the
    model must have called :func:`attach_memory` (or set ``model.memory`` to a
    :class:`ModelMemory`) before an agent uses its memory.
    """

    __slots__ = ()

    @property
    def memory(self) -> MemoryView:
        """This agent's memory.

        Raises:
            InputInvalidError: The model has no ``ModelMemory`` as ``model.memory``.
        """
        shared = getattr(getattr(self, "model", None), "memory", None)
        if not isinstance(shared, ModelMemory):
            raise InputInvalidError(
                "the agent's model has no memory: call attach_memory(self) in the model's "
                "__init__ before agents use self.memory", details={"field": "model.memory"})
        return shared.view(self)


def attach_memory(model: object, config: MemoryConfig | None = None, *,
                  seed: int | None = None,
                  embedder: EmbeddingProvider | DefaultEmbedder | None = DEFAULT_EMBEDDER,
                  agent_prefix: str = "agent-") -> ModelMemory:
    """Create the model's :class:`ModelMemory` and set it as ``model.memory``.

    Arguments as :class:`ModelMemory`'s.

    Returns:
        The new ``ModelMemory``.

    Raises:
        InputInvalidError: See :class:`ModelMemory`; or ``model.memory`` is already set.
    """
    if getattr(model, "memory", None) is not None:
        raise InputInvalidError("model.memory is already set: attach memory once per model",
                                details={"field": "model.memory"})
    memory = ModelMemory(model, config, seed=seed, embedder=embedder, agent_prefix=agent_prefix)
    model.memory = memory  # type: ignore[attr-defined]
    return memory
