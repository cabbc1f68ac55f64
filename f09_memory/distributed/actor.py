"""One shard: a Ray actor owning one ``MemoryEngine`` (a :class:`ShardEngine`).

:class:`ShardActor` is a plain class; ``ShardedMemoryEngine`` makes it a Ray actor
(``ray.remote``), so this module imports no Ray. Every method returns a :data:`Reply`
``(ok, value, events, busy_s)``: ``ok`` False carries a ``MemoryEngineError`` as
``(code, message, details)`` (rebuilt by the driver, never pickled as an exception),
``events`` are the bus events the driver's subscribers want (``wanted``) emitted during the
call, and ``busy_s`` is the time the actor spent in the call, decoding its arguments and
encoding its reply included (for the driver-overhead figures; never part of a hash). The
driver calls the ``packed*`` methods: one pickled buffer in, one (or two) out.

Writes are numbered per shard by the driver (``seq``). :meth:`ShardEngine.apply` runs the
engine method and records ``seq`` in the :class:`AppliedOps` table inside the same durable
transaction (one journal row), so after a crash the restarted actor knows the last write it
acknowledged: the driver resends a write the shard never applied, and never applies one
twice.

Durable mode (``path``): the shard is ``ShardEngine.open(path)`` (SQLite snapshot plus
journal, ``commit="call"``). Ray restarts a dead actor by running ``__init__`` again with
the same arguments, which reopens the database: the state is that of the last acknowledged
write. A new shard can start from snapshots (a load or a re-shard, :meth:`ShardActor.restore`):
durable, they become its database's first checkpoint.
"""

from __future__ import annotations

import gc
import os
import pickle
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from f09_memory.bus import Event
from f09_memory.config.config import MemoryConfig
from f09_memory.core.digest import HashParts
from f09_memory.core.records import IngestedRecords
from f09_memory.core.tables import KeyedTable, TableState
from f09_memory.distributed.codec import RecordMemo, encode_bundle
from f09_memory.distributed.reshard import merge_snapshots
from f09_memory.distributed.routing import ShardRouter
from f09_memory.distributed.wire import decode_requests
from f09_memory.engine import MemoryEngine
from f09_memory.errors import InputInvalidError, MemoryEngineError
from f09_memory.maintenance.tick import TickReport
from f09_memory.persistence.durable import CommitMode, DurableLog, DurableSession
from f09_memory.persistence.journal import journaled
from f09_memory.protocols import EmbeddingProvider
from f09_memory.retrieval.digest import RetrievedBundles
from f09_memory.schema.base import trusted_factory
from f09_memory.schema.enums import PressureState
from f09_memory.schema.retrieval import RetrievalRequest

__all__ = ["AppliedOps", "Reply", "ShardActor", "ShardEngine", "ShardSpec"]

Reply = tuple[bool, Any, list[Event], float]
"""An actor's answer: ``(ok, value or (code, message, details), events, busy seconds)``."""

_RETURNS_RECORDS = frozenset({"ingest_batch", "ingest_many", "ingest_events",
                              "ingest_physics"})
"""Methods returning ``IngestedRecords``: their ids are sent back (records stay here)."""
_WRITES = frozenset({"ingest", "ingest_many", "ingest_batch", "ingest_claim", "ingest_events",
                     "ingest_physics", "forget", "update", "tick", "set_pressure", "place",
                     "interact_many", "frame"})
"""The engine methods a driver may call as numbered writes."""
_READS = frozenset({"get", "records", "recent", "count", "agents", "layer_counts",
                    "retrieve", "position_of", "opinion", "acquaintances", "procedures",
                    "nearby"})
"""The engine methods a driver may call as reads (retried freely)."""
_BUILT_HERE = frozenset({"nearby"})
"""Reads whose answer is a lazy sequence over this shard's store: sent as a list."""


class AppliedOps(KeyedTable):
    """The last write this shard applied: one scheduling row ``("",)`` -> ``seq``.

    Its key part ``""`` keeps it out of the state hash (``core.tables``); it is saved and
    journaled with the write it numbers.
    """

    NAME: ClassVar[str] = "distributed.ops"
    KEY_ARITY: ClassVar[int] = 1
    INTS: ClassVar[tuple[str, ...]] = ("seq",)

    def seq(self) -> int:
        """The last applied write's number (0: none)."""
        slot = self.slot(("",))
        return 0 if slot is None else int(self.column("seq")[slot])

    def set(self, seq: int) -> None:
        """Record ``seq`` as the last applied write."""
        slots = self.rows([("",)])  # may grow the columns: read the column after
        self.column("seq")[slots] = seq


class ShardEngine(MemoryEngine):
    """A ``MemoryEngine`` that numbers the writes it applies (see the module docstring)."""

    def __init__(self, config: MemoryConfig | None = None, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self.ops = AppliedOps()
        self._state.register(self.ops)

    def frame(self, pressure: PressureState | None, items: list[Any], requests: list[Any],
              now: int, budget_ms: float | None, tick: bool, hashes: bool = False
              ) -> tuple[list[str], RetrievedBundles, TickReport | None]:
        """A host frame in one call: pressure, ``ingest_batch``, ``retrieve_many``, ``tick``.

        Each part is the engine method of that name, in that order (skipped when empty);
        under :meth:`apply` they are one durable transaction. ``hashes``: the bundles'
        hashes too (``retrieve_many(..., hashes=True)``).
        """
        if pressure is not None:
            self.set_pressure(pressure)
        ids = self.ingest_batch(items, now=now).ids if items else []
        bundles = (self.retrieve_many(requests, now=now, hashes=hashes) if requests
                   else RetrievedBundles())
        if hashes and bundles.hashes is None:
            bundles.hashes = []
        report = self.tick(now, budget_ms) if tick else None
        return list(ids), bundles, report

    def commit(self) -> None:
        """Durable mode: make every journaled write durable now (``commit="tick"``)."""
        if isinstance(self._durable, DurableSession):
            self._durable.log.commit()

    @journaled
    def apply(self, seq: int, method: str, args: Sequence[Any],
              kwargs: Mapping[str, Any]) -> Any:
        """Run the write ``method`` and record ``seq``, as one durable transaction."""
        result = getattr(self, method)(*args, **kwargs)
        self.ops.set(seq)
        return result


class ShardSpec:
    """What a shard actor is built from (its ``__init__`` arguments, kept for restarts).

    Args:
        index: The shard's number.
        shards: How many shards there are.
        config: The engine settings.
        seed: The engine seed (the same for every shard).
        path: The shard's durable database (``None``: in memory only).
        commit: Durable commit mode.
        checkpoint_every: Journal rows between two durable checkpoints.
        embedder: The embedding provider (``None``: the default seeded embedder).
        own_process: The shard is a process of its own (a Ray actor): it may tune the
            process's garbage collector.
    """

    def __init__(self, index: int, shards: int, config: MemoryConfig, seed: int,
                 path: str | None = None, commit: CommitMode = "call",
                 checkpoint_every: int = 10_000,
                 embedder: EmbeddingProvider | None = None, own_process: bool = False) -> None:
        self.index = index
        self.shards = shards
        self.config = config
        self.seed = seed
        self.path = path
        self.commit: CommitMode = commit
        self.checkpoint_every = checkpoint_every
        self.embedder = embedder
        self.own_process = own_process


def _error(exc: MemoryEngineError) -> tuple[str, str, dict[str, Any]]:
    return exc.code.value, exc.message, dict(exc.details)


class ShardActor:
    """A shard: one :class:`ShardEngine` and the calls a driver makes on it.

    Args:
        spec: What to build the shard from.
    """

    def __init__(self, spec: ShardSpec) -> None:
        self.spec = spec
        self.router = ShardRouter(spec.shards)
        self.owns: Callable[[str], bool] = self.router.owns(spec.index)
        self._events: list[Event] = []
        self._wanted: tuple[str, ...] = ()
        self._unsubscribe: list[Callable[[], None]] = []
        self._memo = RecordMemo()
        if spec.own_process:
            # A shard actor is a process of its own holding one engine's many long-lived
            # objects: collect the young generation less often, so that full collections
            # (which walk them all) stop dominating a frame (measured: about 2x a frame).
            gc.set_threshold(100_000, 20, 100)
        self._make_request = trusted_factory(RetrievalRequest)
        self.pid = os.getpid()
        self.engine = self._open()

    def _adapters(self) -> dict[str, Any]:
        embedder = self.spec.embedder
        return {} if embedder is None else {"embedder": embedder}

    def _open(self) -> ShardEngine:
        spec = self.spec
        if spec.path is None:
            return ShardEngine(spec.config, seed=spec.seed, **self._adapters())
        return ShardEngine.open(Path(spec.path), spec.config, seed=spec.seed,
                                commit=spec.commit, checkpoint_every=spec.checkpoint_every,
                                **self._adapters())

    def restore(self, *snapshots: bytes) -> Reply:
        """Start this new, empty shard from ``snapshots``, keeping its own agents.

        Durable mode: the database is replaced by one whose first snapshot is that state
        (a restart reopens it). Not an argument of ``__init__``: Ray keeps an actor's
        constructor arguments for its restarts only while they are in scope.
        """
        def call() -> None:
            engine = self.engine
            if engine.ops.seq() or engine.agents():
                raise InputInvalidError("only a new, empty shard can be restored",
                                        details={"shard": self.spec.index})
            blob = merge_snapshots(snapshots, self.owns)
            seeded = ShardEngine.loads(blob, **self._adapters())
            path = self.spec.path
            if path is None:
                self.engine = seeded
                return
            engine.close()
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(path + suffix).unlink(missing_ok=True)
            log = DurableLog(path, commit=self.spec.commit)  # a new database
            try:
                log.checkpoint(seeded.dumps())
            finally:
                log.close()
            self.engine = self._open()

        return self._run(self._wanted, call)

    # ------------------------------------------------------------------ plumbing
    def _listen(self, wanted: tuple[str, ...]) -> None:
        if wanted == self._wanted:
            return
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = [self.engine.bus.subscribe(name, self._events.append)
                             for name in wanted]
        self._wanted = wanted

    def _run(self, wanted: tuple[str, ...], fn: Callable[[], Any]) -> Reply:
        t0 = time.perf_counter()
        self._listen(wanted)
        self._events.clear()
        try:
            value = fn()
        except MemoryEngineError as exc:
            self._events.clear()
            return False, _error(exc), [], time.perf_counter() - t0
        events = list(self._events)
        self._events.clear()
        return True, value, events, time.perf_counter() - t0

    # ------------------------------------------------------------------ calls
    def packed(self, method: str, payload: bytes) -> bytes:
        """Call ``method`` with the pickled ``(args, kwargs)`` of ``payload``; pickled reply.

        What the driver uses: one bytes argument and one bytes reply per call, so Ray copies
        two buffers instead of serializing each item of a crowd frame on its own.
        """
        if method not in ("write", "read", "retrieve_many", "restore"):
            raise ValueError(f"not a shard call: {method}")
        ok, value, events, busy = _unpacked_call(getattr(self, method), payload)
        return pickle.dumps((ok, value, events, busy), protocol=pickle.HIGHEST_PROTOCOL)

    def packed_frame(self, payload: bytes) -> tuple[bytes, bytes]:
        """:meth:`frame_write` as two buffers, like :meth:`packed_bundles`."""
        return _two_buffers(self.frame_write, payload,
                            lambda v: (v[1], (v[0], v[2], v[3])))  # ids, blobs, hashes, report

    def _requests(self, requests: Any, trusted: bool) -> list[Any]:
        """The requests a driver sent (``trusted``: encoded objects, ``wire``), to serve."""
        if not trusted:
            return list(requests)
        return list(map(self._make_request, decode_requests(requests)))

    def frame_write(self, seq: int, wanted: tuple[str, ...], pressure: PressureState | None,
                    items: list[Any], requests: Any, trusted: bool, now: int,
                    budget_ms: float | None, tick: bool, hashes: bool) -> Reply:
        """The numbered write :meth:`ShardEngine.frame`; bundles encoded (``codec``).

        The value is ``(ids, encoded bundles, bundle hashes or None, tick report or None)``.
        """
        engine = self.engine

        def call() -> tuple[list[str], list[tuple[Any, ...]], list[str] | None,
                            TickReport | None]:
            if seq <= engine.ops.seq():
                raise InputInvalidError("already applied", details={"seq": seq,
                                                                     "applied": True})
            reqs = self._requests(requests, trusted)
            ids, bundles, report = engine.apply(
                seq, "frame", (pressure, items, reqs, now, budget_ms, tick), {"hashes": hashes})
            if tick and self.spec.commit == "tick":
                engine.commit()
            return (ids, [encode_bundle(b, self._memo) for b in bundles], bundles.hashes,
                    report)

        return self._run(wanted, call)

    def packed_bundles(self, payload: bytes) -> tuple[bytes, bytes]:
        """:meth:`retrieve_many` as two buffers: the reply without bundles, and the bundles.

        Ray's two return values: the driver fetches the first and leaves the second (the
        pickled list of encoded bundles) in the object store until a bundle is read.
        """
        return _two_buffers(self.retrieve_many, payload, lambda v: (v[0], v[1]))  # blobs, hashes

    def write(self, seq: int, wanted: tuple[str, ...], method: str, args: Sequence[Any],
              kwargs: dict[str, Any]) -> Reply:
        """Apply the numbered write ``engine.<method>(*args, **kwargs)``.

        A ``seq`` at or below the last applied one is not applied again (its result is
        gone with the crash that lost its reply): the reply's value is ``None``.
        """
        if method not in _WRITES:
            raise ValueError(f"not a shard write: {method}")
        engine = self.engine
        if method == "ingest_events":
            kwargs = {**kwargs, "keep": self.owns}

        def call() -> Any:
            if seq <= engine.ops.seq():
                raise InputInvalidError("already applied", details={"seq": seq,
                                                                     "applied": True})
            result = engine.apply(seq, method, args, kwargs)
            if method == "tick" and self.spec.commit == "tick":
                engine.commit()  # the frame's end, as a single engine's tick commits
            if method in _RETURNS_RECORDS and isinstance(result, IngestedRecords):
                return result.ids
            return result

        return self._run(wanted, call)

    def read(self, wanted: tuple[str, ...], method: str, args: Sequence[Any],
             kwargs: dict[str, Any]) -> Reply:
        """Call the read ``engine.<method>(*args, **kwargs)``."""
        if method not in _READS:
            raise ValueError(f"not a shard read: {method}")
        if method in _BUILT_HERE:
            return self._run(wanted, lambda: list(getattr(self.engine, method)(*args,
                                                                               **kwargs)))
        return self._run(wanted, lambda: getattr(self.engine, method)(*args, **kwargs))

    def retrieve_many(self, wanted: tuple[str, ...], requests: Any, trusted: bool,
                      now: int | None, hashes: bool) -> Reply:
        """Serve a frame's requests of this shard's agents.

        ``trusted``: the requests are ``RetrievalRequest`` objects the driver already holds,
        encoded (``wire.encode_requests``; rebuilt here without validation). The value is
        ``(encoded bundles, bundle hashes or None)`` (``distributed.codec``): the driver
        decodes only the ones read.
        """
        def call() -> tuple[list[tuple[Any, ...]], list[str] | None]:
            bundles = self.engine.retrieve_many(self._requests(requests, trusted), now=now,
                                                hashes=hashes)
            return [encode_bundle(b, self._memo) for b in bundles], bundles.hashes

        return self._run(wanted, call)

    def hash_parts(self) -> HashParts:
        """The shard's state hash parts."""
        return self.engine.state_hash_parts()

    def applied(self) -> int:
        """The last write applied (0: none); also the liveness probe after a restart."""
        return self.engine.ops.seq()

    def placements(self) -> TableState:
        """The shard's agents' last known positions (the driver's routing mirror)."""
        return self.engine._perception.placements.get_state()

    def dumps(self) -> bytes:
        """The shard's snapshot bytes."""
        return self.engine.dumps()

    def checkpoint(self) -> None:
        """Durable mode: rewrite the snapshot and empty the journal."""
        self.engine.checkpoint()

    def close(self) -> None:
        """Durable mode: checkpoint and release the database."""
        self.engine.close()

    def process_id(self) -> int:
        """The actor's process id (tests kill it and watch it come back)."""
        return self.pid


def _unpacked_call(call: Callable[..., Reply], payload: bytes) -> Reply:
    """``call(*args, **kwargs)`` of the pickled ``(args, kwargs)``; unpickling counts as busy."""
    t0 = time.perf_counter()
    args, kwargs = pickle.loads(payload)  # the driver's own bytes
    unpack = time.perf_counter() - t0
    ok, value, events, busy = call(*args, **kwargs)
    return ok, value, events, busy + unpack


def _two_buffers(call: Callable[..., Reply], payload: bytes,
                 split: Callable[[Any], tuple[Any, Any]]) -> tuple[bytes, bytes]:
    """A reply whose bulk (``split(value)[0]``) travels as a second buffer.

    The first buffer is the pickled reply with ``split(value)[1]`` as its value; pickling
    the bulk counts as busy. A refused call has an empty second buffer.
    """
    ok, value, events, busy = _unpacked_call(call, payload)
    if not ok:
        return pickle.dumps((ok, value, events, busy)), b""
    bulk, rest = split(value)
    t0 = time.perf_counter()
    body = pickle.dumps(bulk, protocol=pickle.HIGHEST_PROTOCOL)
    head = (ok, rest, events, busy + time.perf_counter() - t0)
    return pickle.dumps(head, protocol=pickle.HIGHEST_PROTOCOL), body
