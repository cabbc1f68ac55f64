"""The calls about one agent or one record, each forwarded to the agent's shard.

:class:`AgentCalls` is the part of ``ShardedMemoryEngine`` whose every call is answered by
one shard: ``ingest``, ``ingest_many``, ``ingest_claim``, ``update``, ``get``, ``records``,
``recent``, ``retrieve``, ``nearby``, ``hear`` (without a chain), and the social and
procedural reads (``opinion``, ``acquaintances``, ``procedures``), plus ``interact_many``,
whose items each go to their agent's shard (the ledger row ``(agent, other)`` is the agent's
opinion). A record id names its agent (``routing.record_agent``), so a call about a record
goes to its agent's shard. Each is one remote call with the single engine's arguments and
result; agent and record ids are checked on the driver first (``distributed.shadow``).

Not forwarded: a hearsay ``chain`` reads other agents' trust, which lives on their shards
(``interact_many`` refuses it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from f09_memory.bus import SocialChanged
from f09_memory.distributed.calls import ShardCalls
from f09_memory.distributed.grouping import Grouper, request_agent
from f09_memory.distributed.routing import ShardRouter
from f09_memory.distributed.shadow import DriverShadow
from f09_memory.errors import InputInvalidError
from f09_memory.ingestion.claims import Claim, ClaimOutcome
from f09_memory.procedural.miner import Procedure
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.records import MemoryRecord
from f09_memory.schema.retrieval import RetrievalRequest, RetrievedBundle
from f09_memory.social.interactions import Interaction, hearsay_item
from f09_memory.social.opinion import AcquaintanceOrder, Opinion
from f09_memory.spatial.service import Nearby

__all__ = ["AgentCalls"]


class AgentCalls:
    """``ShardedMemoryEngine``'s calls answered by one agent's shard (a base class).

    Runtime complexity: one remote call each (``interact_many``: one per shard holding
    some of its items), O(arguments) on the driver.
    """

    router: ShardRouter
    _calls: ShardCalls
    _group: Grouper
    _shadow: DriverShadow

    def _one(self, owner: str, kind: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``method`` on the shard of agent ``owner`` (``kind``: write or read)."""
        i = self.router.shard(owner)
        return self._calls.call({i: (kind, method, args, kwargs)})[i]

    def ingest(self, agent_id: str, content: str, **kwargs: Any) -> MemoryRecord:
        """``MemoryEngine.ingest`` on the agent's shard (same arguments)."""
        self._shadow.check_agent(agent_id)
        result: MemoryRecord = self._one(agent_id, "write", "ingest", agent_id, content,
                                         **kwargs)
        return result

    def ingest_many(self, agent_id: str, items: Iterable[Mapping[str, object] | str], *,
                    now: int | None = None) -> list[str]:
        """``MemoryEngine.ingest_many`` on the agent's shard; returns the new record ids."""
        self._shadow.check_agent(agent_id)
        ids: list[str] = self._one(agent_id, "write", "ingest_many", agent_id, list(items),
                                   now=now)
        return ids

    def ingest_claim(self, agent_id: str, content: str, claim: Claim, *,
                     layer: MemoryLayer | str = MemoryLayer.SEMANTIC,
                     importance: float | None = None, tags: Sequence[str] | None = None,
                     now: int | None = None) -> ClaimOutcome:
        """``MemoryEngine.ingest_claim`` on the agent's shard.

        An agent's claims, and what they supersede, are all its own.

        Raises:
            InputInvalidError: A malformed argument (nothing stored).
            CapacityExceededError: The agent is at ``max_records_per_agent``.
        """
        self._shadow.check_agent(agent_id)
        outcome: ClaimOutcome = self._one(agent_id, "write", "ingest_claim", agent_id,
                                          content, claim, layer=layer,
                                          importance=importance, tags=tags, now=now)
        return outcome

    def update(self, record_id: str, *, importance: float | None = None,
               tags: Sequence[str] | None = None, content: str | None = None) -> MemoryRecord:
        """``MemoryEngine.update`` on the record's shard.

        Raises:
            RecordNotFoundError: Not a live record.
            InputInvalidError: A malformed value, or nothing to change.
        """
        agent = self._shadow.record_owner(record_id)
        result: MemoryRecord = self._one(agent, "write", "update", record_id,
                                         importance=importance, tags=tags, content=content)
        return result

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
        parts = self._group.interactions(interactions)
        got = self._calls.call({i: ("write", "interact_many", (part,), {"now": now})
                                for i, part in parts.items()})
        changes = [c for i in sorted(got) for c in got[i]]
        return sorted(changes, key=lambda c: c.agent_id)

    def interact(self, agent_id: str, other_agent_id: str, sentiment: float, *,
                 kind: str = "interaction", weight: float = 1.0,
                 now: int | None = None) -> list[SocialChanged]:
        """``MemoryEngine.interact`` on the agent's shard (its opinion of the other)."""
        return self.interact_many([Interaction(agent_id, other_agent_id, sentiment, None,
                                               kind, weight)], now=now)

    def hear(self, agent_id: str, about: str, *, source: str, sentiment: float,
             chain: Sequence[str] = (), weight: float = 1.0,
             now: int | None = None) -> list[SocialChanged]:
        """``MemoryEngine.hear`` on the agent's shard: ``source`` told ``agent_id``.

        The trust discount is ``agent_id``'s own trust in ``source``, on the same shard.

        Raises:
            InputInvalidError: A ``chain`` (its hops read other agents' trust, which lives
                on their shards), or what the single engine refuses.
        """
        return self.interact_many(
            [hearsay_item(agent_id, about, source, sentiment, list(chain), weight)], now=now)

    def opinion(self, agent_id: str, other_agent_id: str) -> Opinion:
        """``MemoryEngine.opinion`` on the agent's shard."""
        self._shadow.check_agent(agent_id)
        got: Opinion = self._one(agent_id, "read", "opinion", agent_id, other_agent_id)
        return got

    def acquaintances(self, agent_id: str, k: int, *, by: AcquaintanceOrder = "trust",
                      include_hearsay: bool = False) -> list[Opinion]:
        """``MemoryEngine.acquaintances`` on the agent's shard."""
        self._shadow.check_agent(agent_id)
        got: list[Opinion] = self._one(agent_id, "read", "acquaintances", agent_id, k, by=by,
                                       include_hearsay=include_hearsay)
        return got

    def procedures(self, agent_id: str, *, context: str | None = None, k: int = 5,
                   min_support: int | None = None) -> list[Procedure]:
        """``MemoryEngine.procedures`` on the agent's shard."""
        self._shadow.check_agent(agent_id)
        got: list[Procedure] = self._one(agent_id, "read", "procedures", agent_id,
                                         context=context, k=k, min_support=min_support)
        return got

    def retrieve(self, request: RetrievalRequest | Mapping[str, object], *,
                 now: int | None = None) -> RetrievedBundle:
        """``MemoryEngine.retrieve`` on the agent's shard."""
        agent, _ = request_agent(request, 0)
        bundle: RetrievedBundle = self._one(agent, "read", "retrieve", request, now=now)
        return bundle

    def nearby(self, agent_id: str, position: Sequence[float], *, radius: float, k: int,
               layer: MemoryLayer | str | None = None,
               now: int | None = None) -> list[Nearby]:
        """``MemoryEngine.nearby`` on the agent's shard, its records built there.

        Returns:
            ``Nearby(record, distance)`` pairs, nearest first (a list: the single engine's
            lazy ``NearbyRecords`` holds its store).

        Raises:
            InputInvalidError: A bad position, radius, k, layer, agent id or ``now``.
        """
        self._shadow.check_agent(agent_id)
        found: list[Nearby] = self._one(agent_id, "read", "nearby", agent_id, position,
                                        radius=radius, k=k, layer=layer, now=now)
        return found

    def get(self, record_id: str) -> MemoryRecord:
        """The live record ``record_id`` (from its shard).

        Raises:
            RecordNotFoundError: No live record has that id.
        """
        record: MemoryRecord = self._one(self._shadow.record_owner(record_id), "read", "get",
                                         record_id)
        return record

    def records(self, agent_id: str, layer: MemoryLayer | str | None = None
                ) -> list[MemoryRecord]:
        """``MemoryEngine.records`` on the agent's shard."""
        self._shadow.check_agent(agent_id)
        got: list[MemoryRecord] = self._one(agent_id, "read", "records", agent_id, layer)
        return got

    def recent(self, agent_id: str, k: int, layer: MemoryLayer | str | None = None
               ) -> list[MemoryRecord]:
        """``MemoryEngine.recent`` on the agent's shard."""
        self._shadow.check_agent(agent_id)
        got: list[MemoryRecord] = self._one(agent_id, "read", "recent", agent_id, k, layer)
        return got
