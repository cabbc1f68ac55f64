"""ShardedMemoryEngine: the engine's API over N Ray actors, each owning one shard.

Every agent lives on one shard (``routing.shard_of``: a digest of its id, never
``hash()``). A call about one agent (``ingest``, ``retrieve``, ``update``, ``get``) goes to
its shard; a crowd call (``ingest_batch``, ``retrieve_many``, ``ingest_events``) is split
by shard and sent as **one remote call per shard**, in parallel; engine-wide calls
(``tick``, ``set_pressure``) go to every shard, so all shards share one clock and pressure.
The shards' answers are put back in the caller's order.

Determinism: every shard is a ``MemoryEngine`` with the same config and seed, and an
agent's memory depends only on its own calls (records, vocabulary, ids, layer-table rows
and summarization are per agent), so a shard gives each of its agents exactly what one
engine holding every agent gives it. ``state_hash()`` adds the shards' per-agent parts
(``core.digest``): it equals the single-process engine's hash on the same inputs for any
shard count, and so do the bundles. What is not per agent:

- **Engine events** (``ingest_events``): ``nearby`` perception needs every agent's
  position; the driver mirrors them and resolves each event's perceivers over all agents
  (``distributed.shadow``), and each shard stores its own agents' part.
- **The tick budget** is per shard. Hashes equal the single-process engine's while
  maintenance keeps up (no backlog); a shard that falls behind resumes in its own order.
- **Bus events** come back with each call's reply and are emitted on the driver's
  :attr:`ShardedMemoryEngine.bus` in the order of ``distributed.events``.

Atomicity is per shard: a crowd call a shard refuses stores nothing on that shard, but the
other shards' parts are stored (the error's details name ``appliedShards``). Faults: with
``path`` each shard is durable and restarted by Ray; an unapplied write is resent once, an
applied one never twice (``distributed.calls``). Without ``path`` a dead shard's memory is
gone: ``MEMORY_STORAGE_FAILED``.

The driver's parts: ``calls`` (remote calls, retries and resends after a restart),
``grouping`` (crowd calls split by shard, answers put back in order), ``wire`` (what a crowd
call carries each way), ``shadow`` (clock, pressure, the position mirror and the checks made
before any shard is touched), ``manifest`` (the saved folder and the durable layout).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from f09_memory._validate import check_now
from f09_memory.bus import EngineBus
from f09_memory.config.config import MemoryConfig
from f09_memory.core.digest import HashParts, combine_parts, merge_parts
from f09_memory.distributed.actor import ShardActor, ShardSpec
from f09_memory.distributed.bundles import ShardedBundles
from f09_memory.distributed.calls import Pending, ShardCalls, ray_module
from f09_memory.distributed.events import merge_tick_reports
from f09_memory.distributed.forward import AgentCalls
from f09_memory.distributed.grouping import Grouper, record_order, scatter
from f09_memory.distributed.manifest import (
    check_layout,
    config_of,
    read_saved,
    seed_of,
    write_saved,
)
from f09_memory.distributed.routing import ShardRouter, record_agent
from f09_memory.distributed.shadow import DriverShadow
from f09_memory.distributed.wire import bundles_payload, crowd_bundles, frame_payload
from f09_memory.errors import (
    InputInvalidError,
    RecordNotFoundError,
    SnapshotInvalidError,
    StorageFailedError,
)
from f09_memory.maintenance.tick import TickReport
from f09_memory.persistence.durable import CommitMode
from f09_memory.protocols import EmbeddingProvider
from f09_memory.schema.enums import MemoryLayer, PressureState
from f09_memory.schema.retrieval import RetrievalRequest

__all__ = ["ShardFrame", "ShardedMemoryEngine"]


@dataclass(frozen=True, slots=True)
class ShardFrame:
    """What :meth:`ShardedMemoryEngine.frame` returns.

    Attributes:
        ids: The new record ids, in input order.
        bundles: One bundle per request, in request order (decoded when read).
        report: The shards' tick reports merged (``None``: no tick).
    """

    ids: list[str]
    bundles: ShardedBundles
    report: TickReport | None


class ShardedMemoryEngine(AgentCalls):
    """The ``MemoryEngine`` API over ``shards`` Ray actors (see the module docstring).

    Ray must be installed (``pip install 'f09-memory[ray]'``); a local Ray is started when
    none is running (``ray.init()``), or connect first (``ray.init(address="auto")``) to
    run the shards on a cluster.

    Args:
        config: Settings of every shard (``embedding_mode="async"`` is not supported).
        shards: How many shards (actors).
        seed: The engine seed (every shard's; hashes equal the single engine's).
        path: A folder for durable shards (``shard-0000.db`` ...); ``None``: in memory.
        commit: Durable commit mode of each shard (``call``: every acknowledged write is
            durable).
        checkpoint_every: Journal rows between a shard's checkpoints.
        embedder: The embedding provider of every shard (picklable; ``None``: the default
            seeded ``HashingEmbedder``).
        actor_options: Extra ``ActorClass.options(...)`` (``num_cpus``, a
            ``scheduling_strategy`` spreading shards over nodes, ``runtime_env``).
        hash_bundles: ``retrieve_many`` computes each bundle's hash on its shard by default
            (``ShardedBundles.hashes``; what a determinism check or ``simulate`` needs).

    Raises:
        InputInvalidError: Ray is missing, or a bad argument.
        ConfigInvalidError: ``config`` asks for the async embedding mode.
        SnapshotInvalidError: ``path`` holds shards of another shard count or config.
    """

    def __init__(
        self,
        config: MemoryConfig | None = None,
        *,
        shards: int = 2,
        seed: int = 0,
        path: str | os.PathLike[str] | None = None,
        commit: CommitMode = "call",
        checkpoint_every: int = 10_000,
        embedder: EmbeddingProvider | None = None,
        actor_options: Mapping[str, Any] | None = None,
        hash_bundles: bool = False,
        _snapshots: Sequence[bytes] = (),
    ) -> None:
        config = DriverShadow.check_engine(config, shards, commit)
        # The driver's own engine state: it validates what every shard would (so a bad
        # call fails before any shard is touched) and mirrors the agents' positions.
        self._shadow = DriverShadow(config, seed)
        ray = ray_module()
        self.config = config
        self.seed = seed
        self.shards = shards
        self.router = ShardRouter(shards)
        self.bus = EngineBus(handler_errors=config.bus_handler_errors)
        """The driver's bus: the shards' events, merged (``distributed.events``)."""
        self.path = None if path is None else Path(path)
        self.hash_bundles = bool(hash_bundles)
        """Whether ``retrieve_many`` computes bundle hashes on the shards by default."""
        self.last_tick_reports: list[TickReport] = []
        """Each shard's report of the last ``tick``."""
        self._group = Grouper(self.router)
        if self.path is not None:
            check_layout(self.path, shards, seed, config)
        if not ray.is_initialized():
            ray.init()
        options: dict[str, Any] = {"max_restarts": -1 if self.path is not None else 0,
                                   "max_task_retries": 0}
        options.update(actor_options or {})
        remote = ray.remote(ShardActor)
        self._calls = ShardCalls([
            remote.options(**options).remote(ShardSpec(
                i, shards, config, seed,
                None if self.path is None else str(self.path / f"shard-{i:04d}.db"),
                commit, checkpoint_every, embedder, own_process=True))
            for i in range(shards)], self.bus, durable=self.path is not None)
        if _snapshots:
            blobs = [ray.put(bytes(b)) for b in _snapshots]  # once in the object store

            def restore(actor: Any) -> Callable[[], Any]:
                return lambda: actor.restore.remote(*blobs)  # refs resolved by Ray

            self._calls.collect({i: (restore(actor), None)
                                 for i, actor in enumerate(self._calls.actors)})
        self._calls.seq = self._calls.gather_plain("applied")
        shared = self._calls.plain(0, "hash_parts").header  # reopened or loaded: its clock
        self._shadow.clock = int(shared["clock"])
        self._shadow.pressure = PressureState(shared["pressure"])
        self._shadow.refresh(self._calls.gather_plain("placements"))

    # ------------------------------------------------------------------ plumbing
    @property
    def actors(self) -> list[Any]:
        """The shard actors' handles, by shard index (for operators and fault tests)."""
        return list(self._calls.actors)

    @property
    def last_busy_s(self) -> float:
        """The slowest shard's time in the last call (driver overhead = wall - this)."""
        return self._calls.last_busy_s

    def shard_of(self, agent_id: str) -> int:
        """The shard that owns ``agent_id``."""
        return self.router.shard(agent_id)

    def _all(self, kind: str, method: str, *args: Any, **kwargs: Any) -> dict[int, Any]:
        return self._calls.call({i: (kind, method, args, kwargs) for i in range(self.shards)})

    # ------------------------------------------------------------------ writing
    def ingest_batch(self, items: Iterable[Mapping[str, object]], *,
                     now: int | None = None) -> list[str]:
        """Store a crowd frame: one remote call per shard holding some of its agents.

        Each shard stores its agents' items as ``MemoryEngine.ingest_batch`` does (all or
        nothing on that shard). Runtime complexity: O(items) on the driver (routing).

        Returns:
            The new record ids, in input order.

        Raises:
            InputInvalidError: An item is not a mapping with an ``agent_id`` (nothing is
                stored), or a shard refused its part (see the module docstring).
        """
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InputInvalidError("items must be a list of mappings with an agent_id",
                                    details={"field": "items"})
        parts, where = self._group.items(items)
        if not parts:
            return []
        got = self._calls.call({i: ("write", "ingest_batch", (part,), {"now": now})
                          for i, part in parts.items()})
        ids: list[str] = scatter(where, got, sum(len(p) for p in parts.values()))
        return ids

    def ingest_events(self, events: Iterable[Any], *, now: int | None = None) -> list[str]:
        """Store a frame of engine events in the memories of the agents that perceive them.

        The driver resolves each event's perceivers over every agent's last known position
        (its mirror, see the module docstring), then every shard stores its own agents'
        part. The actors that moved are placed (on their shards and in the mirror).

        Returns:
            The record ids created, sorted by agent then creation.

        Raises:
            InputInvalidError: A malformed event or a kind without a rule (nothing is
                stored), or a shard refused its part.
        """
        frame = list(events) if not isinstance(events, str | bytes | Mapping) else events
        routed = self._shadow.route(frame)
        t = self._shadow.now(now)
        got = self._all("write", "ingest_events", frame, now=now,
                        perceivers=routed.perceivers)
        self._shadow.moved(routed, t)
        ids = [rid for i in sorted(got) for rid in got[i]]
        return sorted(ids, key=record_order)

    def place(self, positions: Mapping[str, object], *, now: int | None = None) -> None:
        """Set agents' last known positions (on their shards and in the driver's mirror).

        Raises:
            InputInvalidError: A malformed id or position (nothing is placed).
        """
        t = self._shadow.now(now)
        self._shadow.place(positions, t)  # validates first, then mirrors
        parts: dict[int, dict[str, object]] = {}
        for agent, value in positions.items():
            parts.setdefault(self.router.shard(agent), {})[agent] = value
        self._calls.call({i: ("write", "place", (part,), {"now": now})
                          for i, part in parts.items()})

    def position_of(self, agent_id: str) -> tuple[float, float, float] | None:
        """The agent's last known position (the driver's mirror; ``None``: never placed)."""
        return self._shadow.position_of(agent_id)

    def forget(self, record_ids: Iterable[str] | None = None, *,
               agent_id: str | None = None) -> int:
        """``MemoryEngine.forget`` on the shards of the records (or of ``agent_id``).

        Raises:
            InputInvalidError: Neither or both arguments given.
            RecordNotFoundError: An id is not an engine record id, or not live on its shard.
        """
        if (record_ids is None) == (agent_id is None):
            raise InputInvalidError("give record_ids or agent_id, not both",
                                    details={"field": "record_ids"})
        if agent_id is not None:
            self._shadow.check_agent(agent_id)
            removed: int = self._one(agent_id, "write", "forget", agent_id=agent_id)
            self._shadow.forget(agent_id)
            return removed
        if isinstance(record_ids, str) or not isinstance(record_ids, Iterable):
            raise InputInvalidError("record_ids must be a list of record ids",
                                    details={"field": "record_ids"})
        parts: dict[int, list[str]] = {}
        for rid in record_ids:
            agent = record_agent(rid) if isinstance(rid, str) else None
            if agent is None:
                raise RecordNotFoundError(f"{str(rid)[:80]!r} is not a record id",
                                          details={"id": str(rid)[:80]})
            parts.setdefault(self.router.shard(agent), []).append(rid)
        got = self._calls.call({i: ("write", "forget", (ids,), {}) for i, ids in parts.items()})
        return sum(got.values())

    def set_pressure(self, state: PressureState | str) -> None:
        """Set the pressure on every shard (``memory:pressure:changed`` once on a change).

        Raises:
            InputInvalidError: ``state`` is not a pressure state.
        """
        new = self._shadow.check_pressure(state)
        self._all("write", "set_pressure", new)
        self._shadow.pressure = new

    def tick(self, now: int, budget_ms: float | None = None) -> TickReport:
        """Tick every shard (each with ``budget_ms`` of its own); their reports merged.

        Raises:
            InputInvalidError: ``now`` earlier than the clock, or a bad budget.
        """
        t = self._shadow.check_tick(now, budget_ms)
        got = self._all("write", "tick", now, budget_ms)
        self._shadow.clock = t
        self.last_tick_reports = [got[i] for i in range(self.shards)]
        return merge_tick_reports(self.last_tick_reports)

    def frame(self, items: Iterable[Mapping[str, object]] = (),
              requests: Iterable[RetrievalRequest | Mapping[str, object]] = (), *,
              now: int, budget_ms: float | None = None, tick: bool = True,
              pressure: PressureState | str | None = None,
              hashes: bool | None = None) -> ShardFrame:
        """A host's whole frame in **one remote call per shard**.

        On every shard, in this order: ``set_pressure(pressure)`` (when given),
        ``ingest_batch`` of its agents' ``items``, ``retrieve_many`` of its agents'
        ``requests``, ``tick(now, budget_ms)`` (unless ``tick=False``): the same calls, with
        the same results and hashes, as making them one by one, for a third of the round
        trips; durable shards journal the frame as one transaction.

        Returns:
            The new record ids (input order), the bundles (request order, decoded when
            read) and the merged tick report.

        Raises:
            InputInvalidError: A malformed item, request, pressure, ``now`` or budget
                (nothing is sent), or a shard refused its part (see the module docstring).
        """
        if items is None or requests is None:
            raise InputInvalidError("items and requests must be lists",
                                    details={"field": "items"})
        t = self._shadow.check_tick(now, budget_ms) if tick else check_now(now)
        state = None if pressure is None else self._shadow.check_pressure(pressure)
        item_parts, item_where = self._group.items(items)
        req_parts, req_where, trusted = self._group.requests(requests)
        wanted = self._calls.wanted()
        want = self.hash_bundles if hashes is None else bool(hashes)
        bodies: dict[int, Any] = {}
        pending: dict[int, Pending] = {}
        for i in range(self.shards):
            seq = self._calls.next_seq(i)
            payload = partial(frame_payload, seq, wanted, state, item_parts.get(i, []),
                              req_parts.get(i, []), trusted.get(i, True), now, budget_ms,
                              tick, want)
            pending[i] = (self._calls.two_returns(i, "packed_frame", payload, bodies), seq)
        got = self._calls.collect(pending)
        if tick:
            self._shadow.clock = t
        if state is not None:
            self._shadow.pressure = state
        ids = scatter(item_where, {i: got[i][0] for i in item_where},
                      sum(len(p) for p in item_parts.values()))
        reports = [got[i][2] for i in range(self.shards) if got[i][2] is not None]
        if reports:
            self.last_tick_reports = reports
        total = sum(len(p) for p in req_parts.values())
        bundles = crowd_bundles(req_where, total,
                                {i: got[i][1] for i in req_where} if want else None,
                                {i: ref for i, ref in bodies.items() if i in req_where},
                                ray_module().get)
        return ShardFrame(ids, bundles, merge_tick_reports(reports) if reports else None)

    # ------------------------------------------------------------------ reading
    def retrieve_many(self, requests: Iterable[RetrievalRequest | Mapping[str, object]], *,
                      now: int | None = None, hashes: bool | None = None) -> ShardedBundles:
        """Serve a crowd frame: one remote call per shard, bundles back in request order.

        Each shard runs ``MemoryEngine.retrieve_many`` over its agents' requests; the
        bundles are those of the single-process engine. They come back pickled one by one
        and are decoded when read (``ShardedBundles``); ``hashes=True`` also has the shards
        compute each bundle's ``bundle_hash`` (``None``: :attr:`hash_bundles`). Runtime
        complexity: O(requests) on the driver.

        Raises:
            InputInvalidError: A request without an agent id, or refused by its shard.
            TokenBudgetUndefinedError: A request without a positive ``max_tokens``.
        """
        if isinstance(requests, str | bytes | Mapping) or not isinstance(requests, Iterable):
            raise InputInvalidError("requests must be a list of requests",
                                    details={"field": "requests"})
        if hashes is None:
            hashes = self.hash_bundles
        parts, where, trusted = self._group.requests(requests)
        wanted = self._calls.wanted()
        want = bool(hashes)

        bodies: dict[int, Any] = {}
        pending: dict[int, Pending] = {}
        for i, part in parts.items():
            payload = partial(bundles_payload, wanted, part, trusted[i], now, want)
            pending[i] = (self._calls.two_returns(i, "packed_bundles", payload, bodies), None)
        got = self._calls.collect(pending)
        total = sum(len(p) for p in parts.values())
        return crowd_bundles(where, total, got if want else None, bodies, ray_module().get)

    def count(self, agent_id: str | None = None, layer: MemoryLayer | str | None = None) -> int:
        """Live records of one agent (its shard) or of all (every shard)."""
        if agent_id is not None:
            self._shadow.check_agent(agent_id)
            n: int = self._one(agent_id, "read", "count", agent_id, layer)
            return n
        return sum(self._all("read", "count", None, layer).values())

    def agents(self) -> list[str]:
        """Ids of agents that have stored memories, sorted (every shard's)."""
        return sorted(a for ids in self._all("read", "agents").values() for a in ids)

    def layer_counts(self) -> dict[str, dict[str, int]]:
        """Live records of every agent by layer, agents in id order (every shard's)."""
        merged: dict[str, dict[str, int]] = {}
        for counts in self._all("read", "layer_counts").values():
            merged.update(counts)
        return dict(sorted(merged.items()))

    @property
    def now(self) -> int:
        """The engine clock (every shard's): the ``now`` of the last ``tick``."""
        return self._shadow.clock

    @property
    def pressure(self) -> PressureState:
        """The pressure state in force on every shard."""
        return self._shadow.pressure

    # ------------------------------------------------------------------ hashing
    def state_hash_parts(self) -> HashParts:
        """The shards' hash parts, added (``core.digest.merge_parts``).

        Raises:
            StorageFailedError: The shards disagree on the clock, pressure or config.
        """
        parts = self._calls.gather_plain("hash_parts")
        try:
            return merge_parts(parts)
        except ValueError as exc:
            raise StorageFailedError(f"the shards' shared state differs ({exc}); a shard was "
                                     "restored from an older state", details={}) from exc

    def state_hash(self) -> str:
        """The state hash of one engine holding every shard's agents (see ``core.digest``).

        Equal to ``MemoryEngine.state_hash()`` of a single engine given the same inputs,
        whatever the shard count. Runtime complexity: that of the shards' hashes, in
        parallel.
        """
        return combine_parts(self.state_hash_parts())

    # ------------------------------------------------------------------ persistence
    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write every shard's snapshot and a manifest into ``folder``.

        ``folder/manifest.json`` names the shard count, routing, config fingerprint, seed,
        the state hash and each ``shard-NNNN.f09`` with its sha256; each snapshot is the
        ``MemoryEngine.save`` format. :meth:`load` reads it back onto any shard count.

        Returns:
            The manifest's path.

        Raises:
            StorageFailedError: A file could not be written.
        """
        blobs = self._calls.gather_plain("dumps")
        return write_saved(Path(folder), blobs, seed=self.seed, config=self.config,
                           state_hash=self.state_hash())

    @classmethod
    def load(cls, source: str | os.PathLike[str], *, shards: int | None = None,
             path: str | os.PathLike[str] | None = None, commit: CommitMode = "call",
             embedder: EmbeddingProvider | None = None,
             actor_options: Mapping[str, Any] | None = None,
             hash_bundles: bool = False) -> ShardedMemoryEngine:
        """Load a saved sharded engine (a folder) or a ``MemoryEngine`` snapshot (a file).

        Onto ``shards`` shards (default: as saved). Each new shard receives every saved
        snapshot and keeps its own agents (``distributed.reshard``): re-sharding moves whole
        agents, and the state hash is unchanged.

        Raises:
            SnapshotInvalidError: A missing or damaged manifest or snapshot (a checksum
                that does not match), or snapshots that are not of one engine.
        """
        blobs, saved_shards, expect = read_saved(Path(source))
        count = saved_shards if shards is None else shards
        config = config_of(blobs[0])
        seed = seed_of(blobs[0])
        engine = cls(config, shards=count, seed=seed, path=path, commit=commit,
                     embedder=embedder, actor_options=actor_options,
                     hash_bundles=hash_bundles, _snapshots=blobs)
        if expect is not None and engine.state_hash() != expect:
            raise SnapshotInvalidError("the loaded shards do not give the saved state hash",
                                       details={"expected": expect})
        return engine

    def checkpoint(self) -> None:
        """Durable mode: checkpoint every shard (snapshot rewritten, journal emptied)."""
        self._calls.gather_plain("checkpoint")

    def close(self) -> None:
        """Release the shards: durable ones checkpoint and close their databases first.

        The actors are stopped; the engine is not usable afterwards.
        """
        try:
            self._calls.gather_plain("close")
        finally:
            self._calls.kill()

