"""Crowd calls split by shard, and the shards' answers put back in the caller's order.

A crowd call (``ingest_batch``, ``retrieve_many``, ``frame``, ``interact_many``) names many
agents. :class:`Grouper` finds each value's shard (the router's cache, C-level passes) and
splits the values into one part per shard, remembering each value's position
(``where[shard][j]`` is the caller's index of the shard's ``j``-th value); the replies are
scattered back with :func:`scatter` and :func:`bundle_places`. Each shard's part keeps the
caller's order, so a shard sees its agents' values in the order one engine would.

Runtime complexity: O(values) per call, with numpy and ``operator`` gathers instead of a
Python loop per value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from f09_memory.distributed.routing import ShardRouter
from f09_memory.errors import InputInvalidError
from f09_memory.schema.retrieval import RetrievalRequest
from f09_memory.social.interactions import Interaction

__all__ = ["Grouper", "Parts", "bundle_places", "interaction_parts", "record_order",
           "request_agent", "scatter"]

Parts = tuple[dict[int, list[Any]], dict[int, list[int]]]
"""Values by shard, and each one's position in the caller's list."""

_RECENT = 4
"""How many recent shard lists :meth:`Grouper.split` remembers the positions of."""
_AGENT_OF = itemgetter("agent_id")
_REQUEST_AGENT = attrgetter("agent_id")


def request_agent(request: object, i: int) -> tuple[str, bool]:
    """The agent of request ``i`` and whether it is a ``RetrievalRequest`` object.

    Raises:
        InputInvalidError: Neither a ``RetrievalRequest`` nor a mapping with an agent id.
    """
    if type(request) is RetrievalRequest:
        return request.agent_id, True
    agent = (request.get("agent_id", request.get("agentId"))
             if isinstance(request, Mapping) else None)
    if not isinstance(agent, str):
        raise InputInvalidError(f"requests[{i}] must be a RetrievalRequest or a mapping with "
                                "an agent_id", details={"field": "requests", "index": i})
    return agent, False


def interaction_parts(item: object) -> tuple[object, object]:
    """The agent id and hearsay chain of an interaction item (any accepted form)."""
    if isinstance(item, Interaction):
        return item.agent_id, item.chain
    if isinstance(item, Mapping):
        return item.get("agent_id", item.get("agentId")), item.get("chain")
    if isinstance(item, Sequence) and not isinstance(item, str | bytes) and item:
        return item[0], item[7] if len(item) > 7 else None
    return None, None


def record_order(record_id: str) -> tuple[str, str]:
    """The sort key of a record id: its agent, then its creation counter."""
    agent, _, tail = record_id.rpartition(":")
    return agent, tail


def scatter(where: Mapping[int, list[int]], got: Mapping[int, Sequence[Any]], total: int,
            fill: Any = "") -> list[Any]:
    """Each shard's answers put back at their callers' positions (``total`` of them)."""
    out: list[Any] = [fill] * total
    for i, values in got.items():
        for n, value in zip(where.get(i, []), values, strict=True):
            out[n] = value
    return out


def bundle_places(where: Mapping[int, list[int]], total: int) -> list[tuple[int, int]]:
    """For each request, ``(shard, position in that shard's bundles)``."""
    place: list[tuple[int, int]] = [(0, 0)] * total
    for i, positions in where.items():
        for j, n in enumerate(positions):
            place[n] = (i, j)
    return place


class Grouper:
    """Splits a crowd call's values by shard (see the module docstring).

    Args:
        router: The engine's router (its cache is read directly).
    """

    def __init__(self, router: ShardRouter) -> None:
        self.router = router
        self.shards = router.shards
        self._recent: list[tuple[list[int], dict[int, list[int]]]] = []

    def shards_of(self, agents: list[Any]) -> list[int]:
        """Each agent's shard (C-level passes over the router's cache)."""
        shards = list(map(self.router.cache.get, agents))
        if None in shards:
            shard = self.router.shard
            shards = [shard(a) if s is None else s for a, s in zip(agents, shards, strict=True)]
        return shards  # type: ignore[return-value]

    def split(self, values: list[Any], shards: list[int]) -> Parts:
        """``values`` by shard, and each one's position (numpy and C-level gathers).

        The positions of the last few shard lists are kept: a host that sends the same
        agents in the same order every frame (its requests) is split by one list
        comparison and one gather per shard.
        """
        if self.shards == 1 or not values:
            return ({0: values}, {0: list(range(len(values)))}) if values else ({}, {})
        where = self._where(shards)
        parts: dict[int, list[Any]] = {}
        for i, positions in where.items():
            parts[i] = ([values[positions[0]]] if len(positions) == 1
                        else list(itemgetter(*positions)(values)))
        return parts, where

    def _where(self, shards: list[int]) -> dict[int, list[int]]:
        for seen, where in self._recent:
            if seen == shards:
                return where
        owner = np.fromiter(shards, dtype=np.int64, count=len(shards))
        where = {i: np.flatnonzero(owner == i).tolist() for i in np.unique(owner).tolist()}
        self._recent = [(shards, where), *self._recent[:_RECENT - 1]]
        return where

    def items(self, items: Iterable[Any]) -> Parts:
        """A frame's items by shard, and each item's position in the frame.

        Raises:
            InputInvalidError: An item is not a mapping with a string ``agent_id``.
        """
        values = items if type(items) is list else list(items)
        try:
            agents = list(map(_AGENT_OF, values))
            ok = not agents or set(map(type, agents)) == {str}
        except (KeyError, TypeError, AttributeError):
            ok = False
        if not ok:
            for n, item in enumerate(values):
                agent = item.get("agent_id") if isinstance(item, Mapping) else None
                if type(agent) is not str:
                    raise InputInvalidError(f"item {n}: each item must be a mapping with an "
                                            "agent_id", details={"field": "agent_id",
                                                                 "index": n})
        return self.split(values, self.shards_of(agents))

    def requests(self, requests: Iterable[Any]
                 ) -> tuple[dict[int, list[Any]], dict[int, list[int]], dict[int, bool]]:
        """A frame's requests by shard, each one's position, and whether each part is trusted.

        A part is ``trusted`` when every request is a ``RetrievalRequest`` object (sent
        compactly, ``wire.encode_requests``, and rebuilt on the shard without validation).

        Raises:
            InputInvalidError: A request without an agent id.
        """
        values = requests if type(requests) is list else list(requests)
        objects = set(map(type, values)) <= {RetrievalRequest}
        agents = (list(map(_REQUEST_AGENT, values)) if objects
                  else [request_agent(r, n)[0] for n, r in enumerate(values)])
        parts, where = self.split(values, self.shards_of(agents))
        trusted = dict.fromkeys(parts, objects)
        return parts, where, trusted

    def interactions(self, interactions: Iterable[Any]) -> dict[int, list[Any]]:
        """Interaction items by shard (the agent's: its ledger row).

        Raises:
            InputInvalidError: An item without an agent id, or with a hearsay chain.
        """
        values = list(interactions)
        agents = []
        for n, item in enumerate(values):
            agent, chain = interaction_parts(item)
            if not isinstance(agent, str):
                raise InputInvalidError(f"item {n}: an interaction names its agent_id",
                                        details={"field": "agent_id", "index": n})
            if chain:
                raise InputInvalidError(
                    f"item {n}: a hearsay chain reads other agents' trust, which lives on "
                    "their shards; ShardedMemoryEngine takes hearsay from the direct source "
                    "only (no chain)", details={"field": "chain", "index": n})
            agents.append(agent)
        parts, _ = self.split(values, self.shards_of(agents))
        return parts
