"""The driver's remote calls: one per shard, in parallel, across restarts of a shard.

:class:`ShardCalls` is how ``ShardedMemoryEngine`` talks to its actors. Every call is one
pickled buffer in (``ShardActor.packed*``) and a :data:`~f09_memory.distributed.actor.Reply`
back; :meth:`ShardCalls.collect` waits for every shard's reply at once, emits the bus events
they carry (merged by ``distributed.events``) and rebuilds a shard's refusal as its
``MemoryEngineError`` with ``shard`` and ``appliedShards`` in its details, raised after the
other shards' replies are in (atomicity is per shard).

Writes are numbered per shard (:meth:`ShardCalls.next_seq`). When a shard dies with a call
in flight, :meth:`ShardCalls.get` waits for Ray to restart it (durable shards only) and
asks for the last write it applied: a write it never applied is resent (the same bytes,
exactly once); one it applied has lost its reply, which ``MEMORY_STORAGE_FAILED`` says. A
dead shard without ``path`` is ``MEMORY_STORAGE_FAILED`` at once (its memory is gone).

Ray is imported only here, and only when a call is made (:func:`ray_module`).
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from f09_memory.bus import EVENT_NAMES, EngineBus
from f09_memory.distributed.actor import Reply
from f09_memory.distributed.events import merge_events
from f09_memory.errors import ErrorCode, InputInvalidError, StorageFailedError, error_for

__all__ = ["Call", "Pending", "ShardCalls", "packed", "ray_module"]

RESTART_WAIT_S = 60.0
"""How long a restarted durable shard may take to answer again."""

Call = tuple[str, str, Sequence[Any], dict[str, Any]]
"""One shard's part of a call: ``(kind, method, args, kwargs)``, ``kind`` write or read."""
Pending = tuple[Callable[[], Any], int | None]
"""A submission (returns the reply's object ref) and its write number (``None``: a read)."""


def ray_module() -> Any:
    """The ``ray`` module.

    Raises:
        InputInvalidError: Ray is not installed (the ``[ray]`` extra).
    """
    try:
        import ray
    except ImportError:
        raise InputInvalidError("ShardedMemoryEngine needs Ray: pip install 'f09-memory[ray]'",
                                details={"field": "ray"}) from None
    return ray


def packed(actor: Any, method: str, *args: Any) -> Callable[[], Any]:
    """A submission of ``actor.<method>(*args)`` as one pickled buffer (``ShardActor.packed``).

    Pickled once, here: a resubmission after a restart sends the same bytes.
    """
    payload = pickle.dumps((args, {}), protocol=pickle.HIGHEST_PROTOCOL)
    return lambda: actor.packed.remote(method, payload)


class ShardCalls:
    """The remote calls to a sharded engine's actors (see the module docstring).

    Args:
        actors: The shard actors' handles, by shard index.
        bus: The driver's bus: the shards' events are emitted there.
        durable: Whether the shards are durable (a dead one is waited for and retried).
    """

    def __init__(self, actors: list[Any], bus: EngineBus, *, durable: bool) -> None:
        self.actors = actors
        self.bus = bus
        self.durable = durable
        self.seq = [0] * len(actors)
        """Each shard's last write number sent."""
        self.last_busy_s = 0.0
        """The slowest shard's time in the last call (driver overhead = wall - this)."""

    def wanted(self) -> tuple[str, ...]:
        """The bus event names someone subscribed to on the driver (what shards return)."""
        bus = self.bus
        return tuple(name for name in EVENT_NAMES if bus.wants(name))

    def next_seq(self, i: int) -> int:
        """Number a new write to shard ``i``."""
        self.seq[i] += 1
        return self.seq[i]

    def plain(self, i: int, method: str) -> Any:
        """Call a bookkeeping method of actor ``i`` (retried across a restart)."""
        actor = self.actors[i]
        return self.get(i, lambda: getattr(actor, method).remote(), None)

    def gather_plain(self, method: str) -> list[Any]:
        """Call a bookkeeping method of every actor, in shard order."""
        return [self.plain(i, method) for i in range(len(self.actors))]

    def wait_back(self, i: int) -> int:
        """Wait for shard ``i`` to answer after a restart; return its last applied write.

        Raises:
            StorageFailedError: The shard did not come back within ``RESTART_WAIT_S``.
        """
        ray = ray_module()
        deadline = time.monotonic() + RESTART_WAIT_S
        delay = 0.05
        while True:
            try:
                return int(ray.get(self.actors[i].applied.remote()))
            except ray.exceptions.RayActorError:
                if time.monotonic() > deadline:
                    raise StorageFailedError(
                        f"shard {i} did not come back within {RESTART_WAIT_S:.0f} s of its "
                        "restart; check the Ray cluster", details={"shard": i}) from None
                time.sleep(delay)
                delay = min(1.0, delay * 2)

    def get(self, i: int, submit: Callable[[], Any], seq: int | None) -> Any:
        """The value of a call to shard ``i``, across a restart of the shard.

        Raises:
            StorageFailedError: The shard died and was not durable, died after applying the
                write ``seq`` (its result is lost), or keeps dying.
        """
        ray = ray_module()
        ref = submit()
        for _ in range(3):
            try:
                return ray.get(ref)
            except ray.exceptions.RayTaskError as exc:
                raise exc.cause from None
            except ray.exceptions.RayActorError:
                if not self.durable:
                    raise StorageFailedError(
                        f"shard {i} died and was not durable: its agents' memory is lost "
                        "(give ShardedMemoryEngine a path to keep shards durable)",
                        details={"shard": i}) from None
                applied = self.wait_back(i)
                if seq is not None and applied >= seq:
                    raise StorageFailedError(
                        f"shard {i} died after applying this write but before answering: the "
                        "write is kept (its journal holds it) but its result is lost; read "
                        "the records back with get() or records()",
                        details={"shard": i, "applied": True}) from None
                ref = submit()
        raise StorageFailedError(f"shard {i} keeps dying; check the Ray cluster",
                                 details={"shard": i})

    def call(self, calls: Mapping[int, Call]) -> dict[int, Any]:
        """One remote call per shard named in ``calls``, in parallel (see :meth:`collect`)."""
        wanted = self.wanted()
        pending: dict[int, Pending] = {}
        for i, (kind, method, args, kwargs) in sorted(calls.items()):
            actor = self.actors[i]
            if kind == "write":
                seq = self.next_seq(i)
                pending[i] = (packed(actor, "write", seq, wanted, method, args, kwargs), seq)
            else:
                pending[i] = (packed(actor, "read", wanted, method, args, kwargs), None)
        return self.collect(pending)

    def collect(self, pending: Mapping[int, Pending]) -> dict[int, Any]:
        """Submit every shard's call, wait for all; each shard's value.

        Emits the replies' events (merged) on the bus; raises the first refusal (in shard
        order) once every reply is in.

        Raises:
            MemoryEngineError: A shard refused its part (``shard``, ``appliedShards``).
            StorageFailedError: A shard died (see :meth:`get`).
        """
        refs = {i: submit() for i, (submit, _) in pending.items()}
        replies: dict[int, Reply] = {}
        ray = ray_module()
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

                got = self.get(i, again, seq)
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

    def two_returns(self, i: int, method: str, payload: Callable[[], bytes],
                    bodies: dict[int, Any]) -> Callable[[], Any]:
        """A submission of ``actor.<method>(payload())`` with two returns (head, body).

        The head's ref is returned (what :meth:`collect` waits for); the body's ref is kept
        in ``bodies[i]`` and stays in the object store until read. ``payload`` is called
        once, at the first submission: :meth:`collect` pickles shard ``i + 1``'s part while
        shard ``i`` already works on its own.
        """
        actor = self.actors[i]
        sent: list[bytes] = []

        def submit() -> Any:
            if not sent:
                sent.append(payload())
            head, bodies[i] = getattr(actor, method).options(num_returns=2).remote(sent[0])
            return head

        return submit

    def kill(self) -> None:
        """Stop every actor (no restart); the calls are unusable afterwards."""
        ray = ray_module()
        for actor in self.actors:
            ray.kill(actor, no_restart=True)
        self.actors = []
