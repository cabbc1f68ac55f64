"""Which shard owns an agent: a stable function of the agent id, the same in every process.

An agent belongs to one shard for its whole life (until the engine is loaded onto another
shard count): ``shard_of(agent_id, shards)`` is the jump consistent hash (Lamping and Veach,
2014) of the first 8 bytes of ``blake2b(agent_id)``. It never uses the builtin ``hash()``
(salted per process), so a driver and its actors, on any machine and Python, agree. Going
from ``n`` to ``n + 1`` shards moves only about ``1 / (n + 1)`` of the agents.

A record, a summarization task or an event names its agent (``agent:0000000042``,
``sum:agent:00000003``, ``agent_id``): :func:`record_agent` and :func:`task_agent` read it
back, so a call about a record goes to the shard of its agent.

Runtime complexity: :func:`shard_of` O(len(agent_id)) (about 1 us);
:meth:`ShardRouter.shard` O(1) for an agent seen before (a cache).
"""

from __future__ import annotations

import hashlib

from f09_memory.store.store import split_record_id

__all__ = ["ShardRouter", "record_agent", "shard_of", "task_agent"]

_JUMP = 2862933555777941757
_MASK64 = (1 << 64) - 1


def shard_of(agent_id: str, shards: int) -> int:
    """The shard (``0 .. shards - 1``) that owns ``agent_id``.

    Args:
        agent_id: The agent.
        shards: How many shards there are (at least 1).

    Returns:
        The jump consistent hash of ``blake2b(agent_id)``'s first 8 bytes into ``shards``.
    """
    key = int.from_bytes(hashlib.blake2b(agent_id.encode("utf-8", "surrogatepass"),
                                         digest_size=8).digest(), "big")
    b, j = -1, 0
    while j < shards:
        b = j
        key = (key * _JUMP + 1) & _MASK64
        j = int((b + 1) * ((1 << 31) / ((key >> 33) + 1)))
    return b


def record_agent(record_id: str) -> str | None:
    """The agent of an engine record id (``None``: not an engine record id)."""
    parts = split_record_id(record_id)
    return None if parts is None else parts[0]


def task_agent(task_id: str) -> str | None:
    """The agent of a summarization task id ``sum:<agent>:<n>`` (``None``: not one)."""
    if not task_id.startswith("sum:"):
        return None
    agent, sep, tail = task_id[4:].rpartition(":")
    return agent if sep and agent and tail.isdigit() else None


class ShardRouter:
    """:func:`shard_of` for one shard count, with a cache of the agents seen.

    Args:
        shards: How many shards there are.
    """

    def __init__(self, shards: int) -> None:
        self.shards = shards
        self.cache: dict[str, int] = {}
        """The agents seen so far and their shards (read it directly on hot paths)."""

    def shard(self, agent_id: str) -> int:
        """The shard that owns ``agent_id`` (cached)."""
        got = self.cache.get(agent_id)
        if got is None:
            got = self.cache[agent_id] = shard_of(agent_id, self.shards)
        return got

    def owns(self, index: int) -> _Owner:
        """A predicate ``agent_id -> bool``: whether shard ``index`` owns the agent."""
        return _Owner(self, index)


class _Owner:
    """Whether one shard owns an agent (picklable, so an actor can rebuild it)."""

    def __init__(self, router: ShardRouter, index: int) -> None:
        self._router = router
        self._index = index

    def __call__(self, agent_id: str) -> bool:
        return self._router.shard(agent_id) == self._index
