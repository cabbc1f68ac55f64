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
  position. The driver keeps a mirror of the positions (``place`` and the actors' moves,
  which are a pure function of the frame), resolves each event's perceivers over all
  agents, and sends the frame with the resolved perceivers to every shard; each shard
  stores its own agents' part (``MemoryEngine.ingest_events(perceivers=, keep=)``).
- **The tick budget** is per shard (each shard is a process with its own frame time).
  Hashes equal the single-process engine's while maintenance keeps up (no backlog);
  a shard that falls behind resumes in its own agents' order.
- **Bus events** come back with each call's reply and are emitted on the driver's
  :attr:`ShardedMemoryEngine.bus` in the order of ``distributed.events``.

Atomicity is per shard: a crowd call a shard refuses (a malformed item, capacity) stores
nothing on that shard, but the other shards' parts are stored; the error's details name the
shards that applied their part (``appliedShards``).

Faults: with ``path`` each shard is durable (its own SQLite snapshot plus journal,
``commit="call"``). Ray restarts a dead actor, which reopens its database: every write it
acknowledged is there. A write whose shard died before answering is resent once the shard
is back if it was not applied (the shard records the number of the last write it applied
in the same transaction as the write); if it was applied, its result is lost with the
reply and ``MEMORY_STORAGE_FAILED`` says so (the write is kept). Without ``path`` a dead
shard's memory is gone: ``MEMORY_STORAGE_FAILED``.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from f09_memory._validate import check_budget_ms, check_now
from f09_memory.bus import EVENT_NAMES, EngineBus, SocialChanged
from f09_memory.config.config import MemoryConfig
from f09_memory.core.digest import HashParts, combine_parts, config_fingerprint, merge_parts
from f09_memory.distributed.actor import Reply, ShardActor, ShardSpec
from f09_memory.distributed.bundles import ShardedBundles
from f09_memory.distributed.events import merge_events, merge_tick_reports
from f09_memory.distributed.manifest import (
    MANIFEST_KIND,
    MANIFEST_NAME,
    MANIFEST_VERSION,
    ROUTING,
    config_of,
    read_saved,
    seed_of,
)
from f09_memory.distributed.routing import ShardRouter, record_agent
from f09_memory.engine import MemoryEngine
from f09_memory.errors import (
    ErrorCode,
    InputInvalidError,
    RecordNotFoundError,
    SnapshotInvalidError,
    StorageFailedError,
    error_for,
)
from f09_memory.maintenance.tick import TickReport
from f09_memory.perception.router import parse_events, physics_events, route_events
from f09_memory.persistence.durable import CommitMode
from f09_memory.persistence.snapshot import write_snapshot
from f09_memory.procedural.miner import Procedure
from f09_memory.protocols import EmbeddingProvider
from f09_memory.schema.enums import MemoryLayer, PressureState
from f09_memory.schema.records import MemoryRecord
from f09_memory.schema.retrieval import RetrievalRequest, RetrievedBundle
from f09_memory.social.interactions import Interaction
from f09_memory.social.opinion import AcquaintanceOrder, Opinion

__all__ = ["ShardFrame", "ShardedMemoryEngine"]

_RESTART_WAIT_S = 60.0
_AGENT_OF = itemgetter("agent_id")
_REQUEST_AGENT = attrgetter("agent_id")


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


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputInvalidError("ShardedMemoryEngine needs Ray: pip install 'f09-memory[ray]'",
                                details={"field": "ray"}) from None
    return ray


def _request_agent(request: object, i: int) -> tuple[str, bool]:
    """The agent of request ``i`` and whether it is a ``RetrievalRequest`` object."""
    if type(request) is RetrievalRequest:
        return request.agent_id, True
    agent = (request.get("agent_id", request.get("agentId"))
             if isinstance(request, Mapping) else None)
    if not isinstance(agent, str):
        raise InputInvalidError(f"requests[{i}] must be a RetrievalRequest or a mapping with "
                                "an agent_id", details={"field": "requests", "index": i})
    return agent, False


class ShardedMemoryEngine:
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
        if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= 4096:
            raise InputInvalidError("shards must be an int in 1..4096",
                                    details={"field": "shards"})
        config = config if config is not None else MemoryConfig()
        if not isinstance(config, MemoryConfig):
            raise InputInvalidError("config must be a MemoryConfig", details={"field": "config"})
        if config.embedding_mode == "async":
            raise InputInvalidError(
                "ShardedMemoryEngine does not support embedding_mode='async' (its query table "
                "is engine-wide); use the synchronous mode", details={"field": "embedding_mode"})
        if commit not in ("call", "tick"):
            raise InputInvalidError("commit must be 'call' or 'tick'", details={"field": "commit"})
        # The driver's own engine: it validates what every shard would (so a bad call fails
        # before any shard is touched) and holds the mirror of the agents' positions.
        self._shadow = MemoryEngine(config, seed=seed, embedder=None)
        ray = _ray()
        self.config = config
        self.seed = seed
        self.shards = shards
        self.router = ShardRouter(shards)
        self.bus = EngineBus(handler_errors=config.bus_handler_errors)
        """The driver's bus: the shards' events, merged (``distributed.events``)."""
        self.path = None if path is None else Path(path)
        self.hash_bundles = bool(hash_bundles)
        """Whether ``retrieve_many`` computes bundle hashes on the shards by default."""
        self.last_busy_s = 0.0
        """The slowest shard's time in the last call (driver overhead = wall - this)."""
        self.last_tick_reports: list[TickReport] = []
        self._clock = 0
        self._pressure = PressureState.NORMAL
        """Each shard's report of the last ``tick``."""
        self._seq = [0] * shards
        if self.path is not None:
            self._prepare_folder(self.path)
        if not ray.is_initialized():
            ray.init()
        options: dict[str, Any] = {"max_restarts": -1 if self.path is not None else 0,
                                   "max_task_retries": 0}
        options.update(actor_options or {})
        remote = ray.remote(ShardActor)
        self._actors: list[Any] = [
            remote.options(**options).remote(ShardSpec(
                i, shards, config, seed,
                None if self.path is None else str(self.path / f"shard-{i:04d}.db"),
                commit, checkpoint_every, embedder, own_process=True))
            for i in range(shards)]
        if _snapshots:
            blobs = [ray.put(bytes(b)) for b in _snapshots]  # once in the object store

            def restore(actor: Any) -> Callable[[], Any]:
                return lambda: actor.restore.remote(*blobs)  # refs resolved by Ray

            self._collect({i: (restore(actor), None) for i, actor in enumerate(self._actors)})
        self._seq = self._gather_plain("applied")
        shared = self._plain(0, "hash_parts").header  # a reopened or loaded engine's clock
        self._clock = int(shared["clock"])
        self._pressure = PressureState(shared["pressure"])
        self._refresh_positions()

    def _prepare_folder(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        layout = folder / "shards.json"
        want = {"kind": MANIFEST_KIND, "shards": self.shards, "routing": ROUTING,
                "seed": self.seed, "config": config_fingerprint(self.config)}
        if layout.exists():
            have = json.loads(layout.read_text(encoding="utf-8"))
            if have != want:
                raise SnapshotInvalidError(
                    f"{str(folder)!r} holds durable shards of another layout "
                    f"({have.get('shards')} shards, seed {have.get('seed')}); open it with "
                    "the same shards, config and seed, or save and load it onto another "
                    "shard count", details={"path": str(folder)})
        else:
            layout.write_text(json.dumps(want, sort_keys=True), encoding="utf-8")

    # ------------------------------------------------------------------ plumbing
    @property
    def actors(self) -> list[Any]:
        """The shard actors' handles, by shard index (for operators and fault tests)."""
        return list(self._actors)

    def shard_of(self, agent_id: str) -> int:
        """The shard that owns ``agent_id``."""
        return self.router.shard(agent_id)

    def _wanted(self) -> tuple[str, ...]:
        bus = self.bus
        return tuple(name for name in EVENT_NAMES if bus.wants(name))

    def _plain(self, i: int, method: str) -> Any:
        """Call a bookkeeping method of actor ``i`` (retried across a restart)."""
        actor = self._actors[i]
        return self._get(i, lambda: getattr(actor, method).remote(), None)

    def _gather_plain(self, method: str) -> list[Any]:
        """Call a bookkeeping method of every actor, in shard order."""
        return [self._plain(i, method) for i in range(self.shards)]

    def _wait_back(self, i: int) -> int:
        """Wait for shard ``i`` to answer after a restart; return its last applied write."""
        ray = _ray()
        deadline = time.monotonic() + _RESTART_WAIT_S
        delay = 0.05
        while True:
            try:
                return int(ray.get(self._actors[i].applied.remote()))
            except ray.exceptions.RayActorError:
                if time.monotonic() > deadline:
                    raise StorageFailedError(
                        f"shard {i} did not come back within {_RESTART_WAIT_S:.0f} s of its "
                        "restart; check the Ray cluster", details={"shard": i}) from None
                time.sleep(delay)
                delay = min(1.0, delay * 2)

    def _get(self, i: int, submit: Callable[[], Any], seq: int | None) -> Any:
        """The value of a call to shard ``i``, across a restart of the shard."""
        ray = _ray()
        ref = submit()
        for _ in range(3):
            try:
                return ray.get(ref)
            except ray.exceptions.RayTaskError as exc:
                raise exc.cause from None
            except ray.exceptions.RayActorError:
                if self.path is None:
                    raise StorageFailedError(
                        f"shard {i} died and was not durable: its agents' memory is lost "
                        "(give ShardedMemoryEngine a path to keep shards durable)",
                        details={"shard": i}) from None
                applied = self._wait_back(i)
                if seq is not None and applied >= seq:
                    raise StorageFailedError(
                        f"shard {i} died after applying this write but before answering: the "
                        "write is kept (its journal holds it) but its result is lost; read "
                        "the records back with get() or records()",
                        details={"shard": i, "applied": True}) from None
                ref = submit()
        raise StorageFailedError(f"shard {i} keeps dying; check the Ray cluster",
                                 details={"shard": i})

    def _call(self, calls: Mapping[int, tuple[str, str, Sequence[Any], dict[str, Any]]]
              ) -> dict[int, Any]:
        """One remote call per shard named in ``calls`` (``kind``: write or read), in parallel.

        Returns each shard's value; emits the merged events; raises the first refusal (in
        shard order) after the others are in.
        """
        wanted = self._wanted()
        pending: dict[int, tuple[Callable[[], Any], int | None]] = {}
        for i, (kind, method, args, kwargs) in sorted(calls.items()):
            actor = self._actors[i]
            if kind == "write":
                self._seq[i] += 1
                seq = self._seq[i]

                pending[i] = (_packed(actor, "write", seq, wanted, method, args, kwargs), seq)
            else:
                pending[i] = (_packed(actor, "read", wanted, method, args, kwargs), None)
        return self._collect(pending)

    def _collect(self, pending: Mapping[int, tuple[Callable[[], Any], int | None]]
                 ) -> dict[int, Any]:
        refs = {i: submit() for i, (submit, _) in pending.items()}
        replies: dict[int, Reply] = {}
        ray = _ray()
        try:  # the common case: every shard answers, one wait for all
            values = ray.get(list(refs.values()))
        except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError):
            values = None
        if values is not None:
            for i, got in zip(refs, values, strict=True):
                replies[i] = pickle.loads(got) if isinstance(got, bytes) else got
        else:  # a shard failed: settle each one (restarts, resends, the shard's error)
            for i, ref in refs.items():
                submit, seq = pending[i]
                first = [ref]

                def again(submit: Callable[[], Any] = submit, first: list[Any] = first) -> Any:
                    return first.pop() if first else submit()

                got = self._get(i, again, seq)
                replies[i] = pickle.loads(got) if isinstance(got, bytes) else got
        self.last_busy_s = max((r[3] for r in replies.values()), default=0.0)
        ok = {i: r for i, r in replies.items() if r[0]}
        events = merge_events([r[2] for _, r in sorted(ok.items())])
        for event in events:
            self.bus.emit(event)
        refused = [(i, r) for i, r in sorted(replies.items()) if not r[0]]
        if refused:
            i, (_, (code, message, details), _, _) = refused[0]
            details = {**details, "shard": i, "appliedShards": sorted(ok)}
            raise error_for(ErrorCode(code), message, details)
        return {i: r[1] for i, r in ok.items()}

    def _one(self, owner: str, kind: str, method: str, *args: Any, **kwargs: Any) -> Any:
        i = self.router.shard(owner)
        return self._call({i: (kind, method, args, kwargs)})[i]

    def _all(self, kind: str, method: str, *args: Any, **kwargs: Any) -> dict[int, Any]:
        return self._call({i: (kind, method, args, kwargs) for i in range(self.shards)})

    # ------------------------------------------------------------------ grouping
    def _shards_of(self, agents: list[Any]) -> list[int]:
        """Each agent's shard (C-level passes over the router's cache)."""
        shards = list(map(self.router.cache.get, agents))
        if None in shards:
            shard = self.router.shard
            shards = [shard(a) if s is None else s for a, s in zip(agents, shards, strict=True)]
        return shards  # type: ignore[return-value]

    def _split(self, values: list[Any], shards: list[int]
               ) -> tuple[dict[int, list[Any]], dict[int, list[int]]]:
        """``values`` by shard, and each one's position (numpy and C-level gathers)."""
        if self.shards == 1 or not values:
            return ({0: values}, {0: list(range(len(values)))}) if values else ({}, {})
        owner = np.fromiter(shards, dtype=np.int64, count=len(shards))
        parts: dict[int, list[Any]] = {}
        where: dict[int, list[int]] = {}
        for i in np.unique(owner).tolist():
            positions = np.flatnonzero(owner == i).tolist()
            where[i] = positions
            parts[i] = ([values[positions[0]]] if len(positions) == 1
                        else list(itemgetter(*positions)(values)))
        return parts, where

    def _group_items(self, items: Iterable[Any]
                     ) -> tuple[dict[int, list[Any]], dict[int, list[int]]]:
        """A frame's items by shard, and each item's position in the frame.

        Raises:
            InputInvalidError: An item is not a mapping with a string ``agent_id``.
        """
        values = items if type(items) is list else list(items)
        try:
            agents = list(map(_AGENT_OF, values))
            ok = all(type(a) is str for a in agents)
        except (KeyError, TypeError, AttributeError):
            ok = False
        if not ok:
            for n, item in enumerate(values):
                agent = item.get("agent_id") if isinstance(item, Mapping) else None
                if type(agent) is not str:
                    raise InputInvalidError(f"item {n}: each item must be a mapping with an "
                                            "agent_id", details={"field": "agent_id",
                                                                 "index": n})
        return self._split(values, self._shards_of(agents))

    def _group_requests(self, requests: Iterable[Any]
                        ) -> tuple[dict[int, list[Any]], dict[int, list[int]], dict[int, bool]]:
        """A frame's requests by shard, and each one's position.

        A shard's part is the field dicts of ``RetrievalRequest`` objects when all of its
        requests are objects (``trusted``), else the requests themselves.
        """
        values = requests if type(requests) is list else list(requests)
        objects = all(type(r) is RetrievalRequest for r in values)
        agents = (list(map(_REQUEST_AGENT, values)) if objects
                  else [_request_agent(r, n)[0] for n, r in enumerate(values)])
        shards = self._shards_of(agents)
        parts, where = self._split(list(map(vars, values)) if objects else values, shards)
        trusted = dict.fromkeys(parts, objects)
        return parts, where, trusted

    # ------------------------------------------------------------------ writing
    def ingest(self, agent_id: str, content: str, **kwargs: Any) -> MemoryRecord:
        """``MemoryEngine.ingest`` on the agent's shard (same arguments)."""
        self._check_agent(agent_id)
        result: MemoryRecord = self._one(agent_id, "write", "ingest", agent_id, content,
                                         **kwargs)
        return result

    def ingest_many(self, agent_id: str, items: Iterable[Mapping[str, object] | str], *,
                    now: int | None = None) -> list[str]:
        """``MemoryEngine.ingest_many`` on the agent's shard; returns the new record ids."""
        self._check_agent(agent_id)
        ids: list[str] = self._one(agent_id, "write", "ingest_many", agent_id, list(items),
                                   now=now)
        return ids

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
        parts, where = self._group_items(items)
        if not parts:
            return []
        got = self._call({i: ("write", "ingest_batch", (part,), {"now": now})
                          for i, part in parts.items()})
        out: list[str] = [""] * sum(len(p) for p in parts.values())
        for i, ids in got.items():
            for n, rid in zip(where[i], ids, strict=True):
                out[n] = rid
        return out

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
        parsed = parse_events(frame)
        t = self._shadow_now(now)
        perception = self._shadow._perception
        routed = route_events(parsed, perception.settings, perception.placements,
                              lambda e, r, i, p: physics_events(e, r, i, p) and [])
        got = self._all("write", "ingest_events", frame, now=now,
                        perceivers=routed.perceivers)
        movers, xyz = routed.moves
        if movers:
            perception.placements.place(movers, xyz, t)
        ids = [rid for i in sorted(got) for rid in got[i]]
        return sorted(ids, key=_record_order)

    def place(self, positions: Mapping[str, object], *, now: int | None = None) -> None:
        """Set agents' last known positions (on their shards and in the driver's mirror).

        Raises:
            InputInvalidError: A malformed id or position (nothing is placed).
        """
        t = self._shadow_now(now)
        self._shadow.place(positions, now=t)  # validates first, then mirrors
        parts: dict[int, dict[str, object]] = {}
        for agent, value in positions.items():
            parts.setdefault(self.router.shard(agent), {})[agent] = value
        self._call({i: ("write", "place", (part,), {"now": now}) for i, part in parts.items()})

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
            self._check_agent(agent_id)
            removed: int = self._one(agent_id, "write", "forget", agent_id=agent_id)
            self._shadow._perception.placements.delete([(agent_id,)])
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
        got = self._call({i: ("write", "forget", (ids,), {}) for i, ids in parts.items()})
        return sum(got.values())

    def update(self, record_id: str, *, importance: float | None = None,
               tags: Sequence[str] | None = None, content: str | None = None) -> MemoryRecord:
        """``MemoryEngine.update`` on the record's shard.

        Raises:
            RecordNotFoundError: Not a live record.
            InputInvalidError: A malformed value, or nothing to change.
        """
        agent = self._record_owner(record_id)
        result: MemoryRecord = self._one(agent, "write", "update", record_id,
                                         importance=importance, tags=tags, content=content)
        return result

    def set_pressure(self, state: PressureState | str) -> None:
        """Set the pressure on every shard (``memory:pressure:changed`` once on a change).

        Raises:
            InputInvalidError: ``state`` is not a pressure state.
        """
        new = self._check_pressure(state)
        self._all("write", "set_pressure", new)
        self._pressure = new

    def tick(self, now: int, budget_ms: float | None = None) -> TickReport:
        """Tick every shard (each with ``budget_ms`` of its own); their reports merged.

        Raises:
            InputInvalidError: ``now`` earlier than the clock, or a bad budget.
        """
        t = self._check_tick(now, budget_ms)
        got = self._all("write", "tick", now, budget_ms)
        self._clock = t
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
        t = self._check_tick(now, budget_ms) if tick else check_now(now)
        state = None if pressure is None else self._check_pressure(pressure)
        item_parts, item_where = self._group_items(items)
        req_parts, req_where, trusted = self._group_requests(requests)
        wanted = self._wanted()
        want = self.hash_bundles if hashes is None else bool(hashes)
        bodies: dict[int, Any] = {}

        def serve(i: int) -> tuple[Callable[[], Any], int]:
            actor = self._actors[i]
            self._seq[i] += 1
            seq = self._seq[i]
            payload = pickle.dumps(((seq, wanted, state, item_parts.get(i, []),
                                     req_parts.get(i, []), trusted.get(i, True), now,
                                     budget_ms, tick, want), {}),
                                   protocol=pickle.HIGHEST_PROTOCOL)

            def submit() -> Any:
                head, bodies[i] = actor.packed_frame.options(num_returns=2).remote(payload)
                return head

            return submit, seq

        got = self._collect({i: serve(i) for i in range(self.shards)})
        if tick:
            self._clock = t
        if state is not None:
            self._pressure = state
        ids: list[str] = [""] * sum(len(p) for p in item_parts.values())
        total = sum(len(p) for p in req_parts.values())
        place: list[tuple[int, int]] = [(0, 0)] * total
        hash_list: list[str] | None = [""] * total if want else None
        reports: list[TickReport] = []
        for i in range(self.shards):
            shard_ids, shard_hashes, report = got[i]
            for n, rid in zip(item_where.get(i, []), shard_ids, strict=True):
                ids[n] = rid
            for j, n in enumerate(req_where.get(i, [])):
                place[n] = (i, j)
                if hash_list is not None:
                    hash_list[n] = shard_hashes[j]
            if report is not None:
                reports.append(report)
        if reports:
            self.last_tick_reports = reports
        ray = _ray()

        def fetcher(ref: Any) -> Callable[[], list[tuple[Any, ...]]]:
            return lambda: list(pickle.loads(ray.get(ref)))

        bundles = ShardedBundles(place, {i: fetcher(ref) for i, ref in bodies.items()
                                         if i in req_where}, hash_list)
        return ShardFrame(ids, bundles, merge_tick_reports(reports) if reports else None)

    def interact_many(self, interactions: Iterable[Interaction | Sequence[object]
                                                   | Mapping[str, object]], *,
                      now: int | None = None) -> list[SocialChanged]:
        """``MemoryEngine.interact_many``, each item on its agent's shard (its ledger row).

        Items take the single engine's forms (``Interaction``, a tuple in its field order,
        a mapping). A hearsay ``chain`` reads other agents' trust, which lives on their
        shards: refused here.

        Returns:
            The notable changes, grouped by agent in id order (each agent's in input order).

        Raises:
            InputInvalidError: An item without an agent id, a hearsay chain, or an item its
                shard refused.
        """
        if isinstance(interactions, str | bytes | Mapping) or not isinstance(
                interactions, Iterable):
            raise InputInvalidError("interactions must be a list", details={"field": "items"})
        values = list(interactions)
        agents = []
        for n, item in enumerate(values):
            agent, chain = _interaction_parts(item)
            if not isinstance(agent, str):
                raise InputInvalidError(f"item {n}: an interaction names its agent_id",
                                        details={"field": "agent_id", "index": n})
            if chain:
                raise InputInvalidError(
                    f"item {n}: a hearsay chain reads other agents' trust, which lives on "
                    "their shards; ShardedMemoryEngine takes hearsay from the direct source "
                    "only (no chain)", details={"field": "chain", "index": n})
            agents.append(agent)
        parts, _ = self._split(values, self._shards_of(agents))
        got = self._call({i: ("write", "interact_many", (part,), {"now": now})
                          for i, part in parts.items()})
        changes = [c for i in sorted(got) for c in got[i]]
        return sorted(changes, key=lambda c: c.agent_id)

    def interact(self, agent_id: str, other_agent_id: str, sentiment: float, *,
                 kind: str = "interaction", weight: float = 1.0,
                 now: int | None = None) -> list[SocialChanged]:
        """``MemoryEngine.interact`` on the agent's shard (its opinion of the other)."""
        return self.interact_many([Interaction(agent_id, other_agent_id, sentiment, None,
                                               kind, weight)], now=now)

    def opinion(self, agent_id: str, other_agent_id: str) -> Opinion:
        """``MemoryEngine.opinion`` on the agent's shard."""
        self._check_agent(agent_id)
        got: Opinion = self._one(agent_id, "read", "opinion", agent_id, other_agent_id)
        return got

    def acquaintances(self, agent_id: str, k: int, *, by: AcquaintanceOrder = "trust",
                      include_hearsay: bool = False) -> list[Opinion]:
        """``MemoryEngine.acquaintances`` on the agent's shard."""
        self._check_agent(agent_id)
        got: list[Opinion] = self._one(agent_id, "read", "acquaintances", agent_id, k, by=by,
                                       include_hearsay=include_hearsay)
        return got

    def procedures(self, agent_id: str, *, context: str | None = None, k: int = 5,
                   min_support: int | None = None) -> list[Procedure]:
        """``MemoryEngine.procedures`` on the agent's shard."""
        self._check_agent(agent_id)
        got: list[Procedure] = self._one(agent_id, "read", "procedures", agent_id,
                                         context=context, k=k, min_support=min_support)
        return got

    # ------------------------------------------------------------------ reading
    def retrieve(self, request: RetrievalRequest | Mapping[str, object], *,
                 now: int | None = None) -> RetrievedBundle:
        """``MemoryEngine.retrieve`` on the agent's shard."""
        agent, _ = _request_agent(request, 0)
        bundle: RetrievedBundle = self._one(agent, "read", "retrieve", request, now=now)
        return bundle

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
        parts, where, trusted = self._group_requests(requests)
        wanted = self._wanted()
        want = bool(hashes)

        bodies: dict[int, Any] = {}

        def serve(i: int, part: list[Any]) -> Callable[[], Any]:
            actor = self._actors[i]
            payload = pickle.dumps(((wanted, part, trusted[i], now, want), {}),
                                   protocol=pickle.HIGHEST_PROTOCOL)

            def submit() -> Any:
                head, bodies[i] = actor.packed_bundles.options(num_returns=2).remote(payload)
                return head

            return submit

        got = self._collect({i: (serve(i, part), None) for i, part in parts.items()})
        total = sum(len(p) for p in parts.values())
        place: list[tuple[int, int]] = [(0, 0)] * total
        hash_list: list[str] | None = [""] * total if want else None
        for i, shard_hashes in got.items():
            for j, n in enumerate(where[i]):
                place[n] = (i, j)
            if hash_list is not None:
                for j, n in enumerate(where[i]):
                    hash_list[n] = shard_hashes[j]
        ray = _ray()

        def fetcher(ref: Any) -> Callable[[], list[tuple[Any, ...]]]:
            return lambda: list(pickle.loads(ray.get(ref)))

        return ShardedBundles(place, {i: fetcher(ref) for i, ref in bodies.items()},
                              hash_list)

    def get(self, record_id: str) -> MemoryRecord:
        """The live record ``record_id`` (from its shard).

        Raises:
            RecordNotFoundError: No live record has that id.
        """
        record: MemoryRecord = self._one(self._record_owner(record_id), "read", "get",
                                         record_id)
        return record

    def records(self, agent_id: str, layer: MemoryLayer | str | None = None
                ) -> list[MemoryRecord]:
        """``MemoryEngine.records`` on the agent's shard."""
        self._check_agent(agent_id)
        got: list[MemoryRecord] = self._one(agent_id, "read", "records", agent_id, layer)
        return got

    def recent(self, agent_id: str, k: int, layer: MemoryLayer | str | None = None
               ) -> list[MemoryRecord]:
        """``MemoryEngine.recent`` on the agent's shard."""
        self._check_agent(agent_id)
        got: list[MemoryRecord] = self._one(agent_id, "read", "recent", agent_id, k, layer)
        return got

    def count(self, agent_id: str | None = None, layer: MemoryLayer | str | None = None) -> int:
        """Live records of one agent (its shard) or of all (every shard)."""
        if agent_id is not None:
            self._check_agent(agent_id)
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
        return self._clock

    @property
    def pressure(self) -> PressureState:
        """The pressure state in force on every shard."""
        return self._pressure

    # ------------------------------------------------------------------ hashing
    def state_hash_parts(self) -> HashParts:
        """The shards' hash parts, added (``core.digest.merge_parts``).

        Raises:
            StorageFailedError: The shards disagree on the clock, pressure or config.
        """
        parts = [self._plain(i, "hash_parts")
                 for i in range(self.shards)]
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
        root = Path(folder)
        blobs = [self._plain(i, "dumps")
                 for i in range(self.shards)]
        try:
            root.mkdir(parents=True, exist_ok=True)
            files = []
            for i, blob in enumerate(blobs):
                name = f"shard-{i:04d}.f09"
                write_snapshot(root / name, blob)
                files.append({"name": name, "bytes": len(blob),
                              "sha256": hashlib.sha256(blob).hexdigest()})
            manifest = {"kind": MANIFEST_KIND, "version": MANIFEST_VERSION,
                        "shards": self.shards, "routing": ROUTING, "seed": self.seed,
                        "config": config_fingerprint(self.config), "stateHash": self.state_hash(),
                        "files": files}
            target = root / MANIFEST_NAME
            tmp = root / (MANIFEST_NAME + ".tmp")
            tmp.write_text(json.dumps(manifest, sort_keys=True, indent=1), encoding="utf-8")
            os.replace(tmp, target)
        except OSError as exc:
            raise StorageFailedError(f"the sharded snapshot could not be written to "
                                     f"{str(root)!r} ({exc.strerror or type(exc).__name__})",
                                     details={"path": str(root)}) from exc
        return target

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
        for i in range(self.shards):
            self._plain(i, "checkpoint")

    def close(self) -> None:
        """Release the shards: durable ones checkpoint and close their databases first.

        The actors are stopped; the engine is not usable afterwards.
        """
        ray = _ray()
        try:
            for i in range(self.shards):
                self._plain(i, "close")
        finally:
            for actor in self._actors:
                ray.kill(actor, no_restart=True)
            self._actors = []

    # ------------------------------------------------------------------ helpers
    def _shadow_now(self, now: int | None) -> int:
        return self._clock if now is None else check_now(now)

    def _check_tick(self, now: object, budget_ms: object) -> int:
        """``now`` (not before the clock) and the budget, checked as ``tick`` checks them.

        Raises:
            InputInvalidError: ``now`` earlier than the clock, or a bad budget.
        """
        t = check_now(now)
        if t < self._clock:
            raise InputInvalidError(
                f"tick(now={t}) is earlier than the engine clock {self._clock}; logical time "
                "must not run backwards", details={"now": t, "clock": self._clock})
        check_budget_ms(budget_ms, self.config.work_units_per_ms)
        return t

    @staticmethod
    def _check_pressure(state: PressureState | str) -> PressureState:
        try:
            return PressureState(state)
        except ValueError:
            raise InputInvalidError(
                f"unknown pressure state; use one of {[p.value for p in PressureState]}",
                details={"field": "state"}) from None

    def _check_agent(self, agent_id: object) -> None:
        if not isinstance(agent_id, str) or not agent_id:
            raise InputInvalidError("agent_id must be a non-empty string",
                                    details={"field": "agent_id"})

    def _record_owner(self, record_id: object) -> str:
        agent = record_agent(record_id) if isinstance(record_id, str) else None
        if agent is None:
            raise RecordNotFoundError(f"{str(record_id)[:80]!r} is not a record id",
                                      details={"id": str(record_id)[:80]})
        return agent

    def _refresh_positions(self) -> None:
        """Rebuild the driver's position mirror from the shards (after a load or reopen)."""
        placements = self._shadow._perception.placements
        metas, cols = [], []
        for i in range(self.shards):
            meta, arrays = self._plain(i, "placements")
            metas.append(meta)
            cols.append(arrays)
        keys = [k for meta in metas for k in meta["keys"]]
        if not keys:
            return
        merged = {name: np.concatenate([c[name] for c in cols]) for name in cols[0]}
        order = sorted(range(len(keys)), key=lambda n: keys[n])
        placements.set_state({"keys": [keys[n] for n in order], "used": True},
                             {name: arr[order] for name, arr in merged.items()})


def _interaction_parts(item: object) -> tuple[object, object]:
    """The agent id and hearsay chain of an interaction item (any accepted form)."""
    if isinstance(item, Interaction):
        return item.agent_id, item.chain
    if isinstance(item, Mapping):
        return item.get("agent_id", item.get("agentId")), item.get("chain")
    if isinstance(item, Sequence) and not isinstance(item, str | bytes) and item:
        return item[0], item[7] if len(item) > 7 else None
    return None, None


def _packed(actor: Any, method: str, *args: Any) -> Callable[[], Any]:
    """A submission of ``actor.<method>(*args)`` as one pickled buffer (``ShardActor.packed``).

    Pickled once, here: a resubmission after a restart sends the same bytes.
    """
    payload = pickle.dumps((args, {}), protocol=pickle.HIGHEST_PROTOCOL)
    return lambda: actor.packed.remote(method, payload)


def _record_order(record_id: str) -> tuple[str, str]:
    agent, _, tail = record_id.rpartition(":")
    return agent, tail
