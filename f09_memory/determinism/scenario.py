"""The seeded "village" scenario: many agents living through ticks of events and retrievals.

Everything is drawn from one ``numpy.random.Generator`` seeded by ``seed``, so a scenario is
fully determined by ``(agents, ticks, seed)``. It exercises every layer, redaction (some
events carry an e-mail address or a card number), flagged records, TTLs, the ring overflow,
pressure changes (throttle and exhausted windows) and the tick budget.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from f09_memory.bus import EngineBus
from f09_memory.determinism.hashing import BundleHasher
from f09_memory.engine import MemoryEngine
from f09_memory.protocols import LLMClient
from f09_memory.schema.enums import PressureState, Purpose, Strategy
from f09_memory.schema.retrieval import RetrievalRequest, RetrievedBundle
from f09_memory.testing.doubles import ScriptedLLM

__all__ = [
    "LIFECYCLE_CONFIG",
    "Village",
    "VillageEngine",
    "VillageResult",
    "agent_names",
    "run_village",
    "scripted_village_llm",
    "village_frame",
    "village_items",
]

LIFECYCLE_CONFIG: dict[str, Any] = {
    "episodic_window": 60_000,
    "summarization_min_interval_ms": 30_000,
    "summarization_batch_size": 10,
    "summarization_keep_recent": 10,
    "summarization_max_importance": 0.9,
    "retention_policy": {"semantic_max": 8, "social_max": 5, "procedural_max": 4,
                         "protected_min": 3},
}
"""Config overrides that make a short village run summarize and compact (ticks of 10 s)."""


class VillageEngine(Protocol):
    """What the village needs of an engine: a ``MemoryEngine`` or a ``ShardedMemoryEngine``.

    ``retrieve_many(..., hashes=True)``'s result may carry ``hashes`` (each bundle's
    ``bundle_hash``, computed where the bundles were made, from the record digests kept
    there): the run uses them instead of hashing the bundles again.
    """

    @property
    def bus(self) -> EngineBus:
        """The engine's event bus."""

    def set_pressure(self, state: PressureState | str) -> None:
        """Set the pressure state."""

    def ingest_batch(self, items: Iterable[Mapping[str, object]], *,
                     now: int | None = None) -> Sized:
        """Store a crowd frame."""

    def retrieve_many(self, requests: Iterable[RetrievalRequest | Mapping[str, object]], *,
                      now: int | None = None, hashes: bool = False) -> Sequence[RetrievedBundle]:
        """Serve a crowd frame."""

    def tick(self, now: int, budget_ms: float | None = None) -> object:
        """Run a maintenance slice."""

    def state_hash(self) -> str:
        """The state hash."""


def scripted_village_llm() -> ScriptedLLM:
    """A deterministic LLM double for village summaries.

    One good reply, then garbage, so both the LLM path and the heuristic fallback run.
    """
    return ScriptedLLM([
        "Villager 001 and Villager 002 traded at the market and the well; rumours spread.",
        "As an AI language model I cannot summarize this.",
    ])

_PLACES = ("well", "market", "smithy", "tavern", "chapel", "mill", "gate", "river", "farm")
_ITEMS = ("bread", "iron nails", "a sword", "wool", "ale", "a horse", "herbs", "gold coins")
_EPISODIC = (
    "Saw {other} at the {place}.",
    "Traded {item} with {other} at the {place}.",
    "{other} told me the {place} was closed today. I went home instead.",
    "Heard a rumour at the {place} that {other} owes money to the smith.",
    "{other} attacked a stranger near the {place}! Guards came running.",
    "Helped {other} carry {item} to the {place}. They thanked me.",
    "It rained all morning, so I stayed near the {place}.",
)
_SEMANTIC = (
    "{other} works at the {place}.",
    "The {place} opens at dawn and closes at dusk.",
    "{item} costs three silver at the {place}.",
)
_PROCEDURAL = ("To reach the {place}, take the road past the mill and turn left.",)
_PRIVATE = (
    "{other} wrote to me from {other_lower}@village.example about the debt.",
    "{other} paid with card 4111 1111 1111 {n4} at the {place}.",
)


def agent_names(agents: int) -> list[str]:
    """Agent ids of a village of ``agents`` (``npc-000`` ...)."""
    return [f"npc-{i:03d}" for i in range(agents)]


def village_frame(rng: np.random.Generator, names: Sequence[str],
                  agents: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """Draw one tick's ingest items for ``agents`` (indexes into ``names``; default all).

    Each agent observes 0-3 items; each item names its agent (``agent_id``), so the frame
    goes to ``ingest_batch`` as it is. The random values are drawn in bulk, one array per
    kind of value for the whole frame (so a frame costs a few numpy calls, not a dozen per
    item): a pure function of the generator's state and the arguments.
    """
    who = range(len(names)) if agents is None else agents
    counts = rng.integers(0, 4, size=len(who))
    owners = np.repeat(np.asarray(who, dtype=np.intp), counts).tolist()
    n = len(owners)
    if not n:
        return []
    others = rng.integers(0, len(names), size=n).tolist()
    places = rng.integers(0, len(_PLACES), size=n).tolist()
    goods = rng.integers(0, len(_ITEMS), size=n).tolist()
    digits = rng.integers(0, 10_000, size=n).tolist()
    templates = rng.integers(0, _TEMPLATE_DRAW, size=n).tolist()  # taken modulo each list
    rolls = rng.random(n).tolist()
    rates = rng.random(n).round(3).tolist()
    sentiments = rng.uniform(-1, 1, size=n).round(3).tolist()
    xs = rng.uniform(0, 100, size=n).round(2).tolist()
    ys = rng.uniform(0, 100, size=n).round(2).tolist()
    given = (rng.random(n) < 0.5).tolist()
    importances = rng.random(n).round(3).tolist()
    flags = (rng.random(n) < 0.02).tolist()
    items: list[dict[str, Any]] = []
    for j, me in enumerate(owners):
        other = names[others[j]]
        place = _PLACES[places[j]]
        fill = {
            "other": other.replace("npc-", "Villager "),
            "other_lower": other.replace("-", ""),
            "place": place,
            "item": _ITEMS[goods[j]],
            "n4": f"{digits[j]:04d}",
        }
        roll, template = rolls[j], templates[j]
        item: dict[str, Any] = {"agent_id": names[me]}
        if roll < 0.06:
            item.update(content=_SEMANTIC[template % len(_SEMANTIC)].format(**fill),
                        layer="semantic", tags=["fact", place])
        elif roll < 0.10:
            item.update(content=_PROCEDURAL[0].format(**fill), layer="procedural",
                        metadata={"procedural": {"patternId": f"route-{place}",
                                                 "successRate": rates[j]}})
        elif roll < 0.16:
            sentiment = sentiments[j]
            item.update(content=f"Spoke with {fill['other']}; it went "
                                f"{'well' if sentiment > 0 else 'badly'}.",
                        layer="social",
                        metadata={"social": {"otherAgentId": other, "sentiment": sentiment}})
        elif roll < 0.21:
            item.update(content=f"Walked to the {place}.", layer="spatial", ttl=30_000,
                        metadata={"spatial": {"x": xs[j], "y": ys[j]}})
        elif roll < 0.23:
            item.update(content=_PRIVATE[template % len(_PRIVATE)].format(**fill),
                        tags=["private"])
        else:
            item.update(content=_EPISODIC[template % len(_EPISODIC)].format(**fill),
                        tags=[place])
        if given[j]:
            item["importance"] = importances[j]
        if flags[j]:
            item["flagged"] = True
        items.append(item)
    return items


_TEMPLATE_DRAW = 840
"""Template choices are drawn below this and taken modulo a list's length (840 is a
multiple of every list length, 1 to 8, so each template of a list is equally likely)."""


def village_items(rng: np.random.Generator, names: Sequence[str], me: int
                  ) -> list[dict[str, Any]]:
    """Draw this tick's ingest items for agent ``me`` alone (0-3 items, without ``agent_id``).

    :func:`village_frame` for one agent, for hosts that ingest agent by agent
    (``ingest_many``).
    """
    items = village_frame(rng, names, [me])
    for item in items:
        del item["agent_id"]
    return items


@dataclass
class VillageResult:
    """The outcome of a run: its hashes and what it measured.

    ``retrieval_hash`` chains every bundle hash in order; ``state_hash`` is the engine's at
    the end. ``latencies_ms`` are the wall-clock time of each frame's ``retrieve_many`` for
    all agents (never part of a hash).
    """

    agents: int
    ticks: int
    seed: int
    retrieval_hash: str
    state_hash: str
    retrievals: int = 0
    ingested: int = 0
    events: dict[str, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)

    def hashes(self) -> dict[str, str]:
        """The two hashes, for cross-process comparison."""
        return {"retrieval_hash": self.retrieval_hash, "state_hash": self.state_hash}


def _pressure_at(tick: int) -> PressureState:
    phase = tick % 100
    if 60 <= phase < 75:
        return PressureState.THROTTLE
    if 75 <= phase < 80:
        return PressureState.EXHAUSTED
    if 50 <= phase < 60:
        return PressureState.SOFT
    return PressureState.NORMAL


class Village:
    """The village as a step function: ``village(engine, tick)`` plays one tick.

    Per tick, as a host should: one ``ingest_batch`` with every agent's observations, one
    ``retrieve_many`` with every agent's request, then ``engine.tick`` (and, with ``llm``,
    ``engine.summarize_pending``). Returns the tick's bundles. The scenario's own random
    state lives here, not in the engine, so a host may save and load the engine between
    two ticks and go on with the same village (what the determinism checker does).

    Args:
        agents: Number of agents.
        seed: Scenario seed (independent of the engine's).
        tick_ms: Logical milliseconds per tick.
        budget_ms: The maintenance budget passed to ``engine.tick``.
        llm: When given, queued summarization tasks are run through it after every tick.
        hashes: Ask ``retrieve_many`` for the bundles' hashes (``hashes=True``).
    """

    def __init__(self, agents: int, seed: int, *, tick_ms: int = 1_000,
                 budget_ms: float | None = 2.0, llm: LLMClient | None = None,
                 hashes: bool = False) -> None:
        self.agents = agents
        self.hashes = hashes
        self.seed = seed
        self.tick_ms = tick_ms
        self.budget_ms = budget_ms
        self.llm = llm
        self.rng = np.random.default_rng(seed)
        self.names = agent_names(agents)
        self.ingested = 0
        self.retrieve_ms = 0.0
        """Wall time of the last tick's ``retrieve_many`` (never part of a hash)."""

    def __call__(self, engine: VillageEngine, tick: int) -> Sequence[RetrievedBundle]:
        """Play tick ``tick`` (0-based; logical time ``(tick + 1) * tick_ms``)."""
        rng, names = self.rng, self.names
        now = (tick + 1) * self.tick_ms
        engine.set_pressure(_pressure_at(tick))
        frame = village_frame(rng, names)
        if frame:  # one call for the whole crowd's observations
            self.ingested += len(engine.ingest_batch(frame, now=now))
        budgets = rng.integers(100, 800, size=len(names)).tolist()
        strategies = rng.integers(0, len(_STRATEGIES), size=len(names)).tolist()
        requests = [
            RetrievalRequest(
                agent_id=name,
                purpose=_PURPOSES[(tick + i) % len(_PURPOSES)],
                max_tokens=budgets[i],
                strategy=_STRATEGIES[strategies[i]],
            )
            for i, name in enumerate(names)
        ]
        t0 = time.perf_counter()
        bundles = engine.retrieve_many(requests, now=now, hashes=self.hashes)  # one call
        self.retrieve_ms = (time.perf_counter() - t0) * 1000.0
        engine.tick(now, budget_ms=self.budget_ms)
        if self.llm is not None:
            if not isinstance(engine, MemoryEngine):
                raise TypeError("the village's LLM summaries need a MemoryEngine")
            engine.summarize_pending(self.llm, now=now)
        return bundles


_PURPOSES = list(Purpose)
_STRATEGIES = [Strategy.BALANCED, Strategy.BALANCED, Strategy.RECENCY, Strategy.IMPORTANCE]


def run_village(
    engine: VillageEngine,
    *,
    agents: int,
    ticks: int,
    seed: int,
    tick_ms: int = 1_000,
    budget_ms: float | None = 2.0,
    on_tick: Callable[[int], None] | None = None,
    llm: LLMClient | None = None,
) -> VillageResult:
    """Run the village (:class:`Village`) on ``engine`` for ``ticks`` ticks.

    Args:
        engine: A fresh engine (its config and seed are the caller's).
        agents: Number of agents.
        ticks: Number of ticks.
        seed: Scenario seed (independent of the engine's).
        tick_ms: Logical milliseconds per tick.
        budget_ms: The maintenance budget passed to ``engine.tick``.
        on_tick: Called after each tick with its index (progress bars).
        llm: When given, queued summarization tasks are run through it after every tick
            (``engine.summarize_pending``).

    Returns:
        The hashes, counts and measured latencies.
    """
    village = Village(agents, seed, tick_ms=tick_ms, budget_ms=budget_ms, llm=llm, hashes=True)
    chain = hashlib.sha256()
    bundle_hash = BundleHasher()  # for an engine that does not hash its bundles
    counts: dict[str, int] = {}

    def count(ev: Any) -> None:
        counts[ev.name] = counts.get(ev.name, 0) + 1

    unsubscribe = engine.bus.subscribe("*", count)
    result = VillageResult(agents, ticks, seed, "", "")
    try:
        for tick in range(ticks):
            bundles = village(engine, tick)
            result.latencies_ms.append(village.retrieve_ms)
            hashes = getattr(bundles, "hashes", None)
            for digest in (hashes if hashes is not None else map(bundle_hash, bundles)):
                chain.update(digest.encode("ascii"))
            result.retrievals += len(bundles)
            if on_tick is not None:
                on_tick(tick)
    finally:
        unsubscribe()
    result.ingested = village.ingested
    result.retrieval_hash = chain.hexdigest()
    result.state_hash = engine.state_hash()
    result.events = dict(sorted(counts.items()))
    return result
