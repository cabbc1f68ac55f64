"""The game-world layers of the engine facade: engine events, social, spatial, procedures.

``MemoryEngine`` inherits these methods; each delegates to its service, built by the
engine: ``perception.service.Perception`` (engine events routed to the agents that perceive
them), ``social.service.SocialService`` (the relationship ledger), ``spatial.service.
SpatialService`` (positions, ``nearby``, the physics adapter) and ``procedural.miner.
ProceduralMiner`` (what usually works). Their state lives in ``EngineState.tables`` and the
store, so it is saved, hashed and journaled with the rest of the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from f09_memory._owner import ThreadOwner, owned_by_thread
from f09_memory.bus import SocialChanged
from f09_memory.core.records import IngestedRecords
from f09_memory.errors import InputInvalidError
from f09_memory.ingestion.pipeline import Ingestor
from f09_memory.ingestion.validation import validate_agent_id
from f09_memory.perception.events import EngineEvent
from f09_memory.perception.service import Perception
from f09_memory.persistence.journal import Journaled, journaled
from f09_memory.procedural.miner import ProceduralMiner, Procedure, check_procedures_args
from f09_memory.schema.enums import MemoryLayer
from f09_memory.social.interactions import Interaction, hearsay_item
from f09_memory.social.opinion import AcquaintanceOrder, Opinion
from f09_memory.social.service import SocialService
from f09_memory.spatial.physics import PhysicsEvent
from f09_memory.spatial.service import NearbyRecords, SpatialService
from f09_memory.store.agent import AgentMemory

__all__ = ["WorldFacade"]


@owned_by_thread()
class WorldFacade(Journaled):
    """The game-world methods of the engine facade (see the module docstring)."""

    _owner: ThreadOwner
    _ingestor: Ingestor
    _perception: Perception
    _social: SocialService
    _spatial: SpatialService
    _miner: ProceduralMiner

    def _time(self, now: object) -> int:
        raise NotImplementedError  # supplied by the engine

    def _agent(self, agent_id: str) -> AgentMemory | None:
        raise NotImplementedError  # supplied by the engine

    # ---- engine events (spec section 13, F02)
    @journaled
    def ingest_events(self, events: Iterable[EngineEvent | Mapping[str, object]], *,
                      now: int | None = None,
                      perceivers: Sequence[list[tuple[str, str]]] | None = None,
                      keep: Callable[[str], bool] | None = None) -> IngestedRecords:
        """Store a frame of engine events in the memories of the agents that perceive them.

        Each event's kind picks a rule (``MemoryConfig.perception``): its layer and its
        perceivers (actor, target, agents placed within a radius of the event). All or
        nothing; perception uses the positions known when the frame starts, then the actors
        are placed where their last event happened. Runtime complexity: O(events x placed
        agents) numpy plus the ingest of the records created.

        An engine holding some of a world's agents (a shard of
        ``f09_memory.distributed.ShardedMemoryEngine``) is given the perceivers its driver
        resolved over every agent's position (``perceivers``: one list of
        ``(agent_id, role)`` per event) and stores its own agents' part (``keep``): each
        agent gets exactly what the whole frame gives it in one engine.

        Returns:
            The records created, grouped by event in event order.

        Raises:
            InputInvalidError: A malformed event or a kind without a rule (its index named).
            CapacityExceededError: An agent would pass ``max_records_per_agent``.
        """
        return self._perception.ingest(events, self._time(now), perceivers=perceivers,
                                       keep=keep)

    def ingest_event(self, event: EngineEvent | Mapping[str, object], *,
                     now: int | None = None) -> IngestedRecords:
        """:meth:`ingest_events` for one event."""
        return self.ingest_events([event], now=now)

    @journaled
    def place(self, positions: Mapping[str, object], *, now: int | None = None) -> None:
        """Set agents' last known positions (``{agent_id: (x, y[, z])}``) for perception.

        Raises:
            InputInvalidError: A malformed id or position (nothing is placed).
        """
        self._perception.place(positions, self._time(now))

    def position_of(self, agent_id: str) -> tuple[float, float, float] | None:
        """The agent's last known position (``None``: never placed)."""
        return self._perception.position(agent_id)

    # ---- social
    @journaled
    def interact(self, agent_id: str, other_agent_id: str, sentiment: float, *,
                 kind: str = "interaction", weight: float = 1.0,
                 now: int | None = None) -> list[SocialChanged]:
        """Record one interaction of ``agent_id`` with ``other_agent_id`` (social ledger).

        Moves the agent's sentiment and trust EMAs toward ``sentiment`` (in [-1, 1]) at the
        rates of ``config.social`` times ``weight`` and the kind's weight; a notable change
        (first meeting, trust flip, betrayal) creates a social record and emits
        ``memory:social:changed``. See :meth:`interact_many`. O(1) amortized.

        Returns:
            The notable changes (``memory:social:changed`` payloads), in order.

        Raises:
            InputInvalidError: A bad or private id, the same id twice, a sentiment that is
                not a finite number in [-1, 1], an unknown kind or a bad weight (state
                unchanged).
            CapacityExceededError: The agent's record would pass ``max_records_per_agent``.
        """
        return self._social.apply(
            [Interaction(agent_id, other_agent_id, sentiment, None, kind, weight)],
            self._time(now))

    @journaled
    def interact_many(self, interactions: Iterable[Interaction | Sequence[object]
                                                   | Mapping[str, object]], *,
                      now: int | None = None) -> list[SocialChanged]:
        """Record a batch of interactions, in order, all or nothing.

        Each item is an :class:`~f09_memory.social.Interaction`, a tuple in its field order
        ``(agent_id, other_agent_id, sentiment[, now[, kind[, weight[, source[, chain]]]]])``
        or a mapping with those keys (snake_case or camelCase; ``agent_id``,
        ``other_agent_id`` and ``sentiment`` required; kind ``hearsay`` needs ``source``, see
        :meth:`hear`). Items without their own ``now`` happen at ``now``. The ledger ends as
        if the items were applied one by one; distinct pairs are updated in shared numpy
        passes. Runtime complexity: O(n log n) plus one numpy pass per repetition of a
        pair in the batch (at least 200k interactions/s in batches of 1,000).

        Returns:
            The notable changes (``memory:social:changed`` payloads), in input order.

        Raises:
            InputInvalidError: A malformed or private item (its index in the message; state
                unchanged).
            CapacityExceededError: The notable records would pass ``max_records_per_agent``
                (state unchanged).
        """
        return self._social.apply(interactions, self._time(now))

    @journaled
    def hear(self, agent_id: str, about: str, *, source: str, sentiment: float,
             chain: Sequence[str] = (), weight: float = 1.0,
             now: int | None = None) -> list[SocialChanged]:
        """Record hearsay: ``source`` told ``agent_id`` something of ``sentiment`` about ``about``.

        ``chain`` names who told ``source``, and so on back to the witness (ids; at most
        ``social.max_hearsay_depth`` with ``source``). Each hop keeps
        ``social.hop_factor * (1 + trust) / 2`` of the weight, ``trust`` being the hop
        listener's trust in its teller; the ledger counts it as hearsay (the opinion's
        ``hearsay_share``), and the first word of an unknown agent (or a trust flip it
        causes) makes a social record whose attributes keep the chain's ids. O(depth).

        Returns:
            The notable changes.

        Raises:
            InputInvalidError: A bad or private id, a chain too deep, repeating an id or
                naming the agent, or a bad sentiment or weight (state unchanged).
            CapacityExceededError: The agent's record would pass ``max_records_per_agent``.
        """
        item = hearsay_item(agent_id, about, source, sentiment, chain, weight)
        return self._social.apply([item], self._time(now))

    def opinion(self, agent_id: str, other_agent_id: str) -> Opinion:
        """What ``agent_id`` thinks of ``other_agent_id`` (neutral, count 0, for a stranger).

        Runtime complexity: O(1).

        Raises:
            InputInvalidError: An invalid or private id, or the same id twice.
        """
        return self._social.opinion(agent_id, other_agent_id)

    def acquaintances(self, agent_id: str, k: int, *, by: AcquaintanceOrder = "trust",
                      include_hearsay: bool = False) -> list[Opinion]:
        """The agent's ``k`` first acquaintances by ``by``, as opinions.

        ``by``: ``trust``, ``count`` (direct interactions) or ``recent`` (latest evidence),
        descending (trust quantized by ``score_quantum``), then the other id ascending.
        Agents known only by hearsay are left out unless ``include_hearsay``.
        Runtime complexity: O(m log m) for the agent's m others.

        Raises:
            InputInvalidError: A bad or private id, a negative ``k`` or an unknown ``by``.
        """
        return self._social.acquaintances(agent_id, k, by, include_hearsay)
    # ---- spatial
    def nearby(
        self,
        agent_id: str,
        position: Sequence[float],
        *,
        radius: float,
        k: int,
        layer: MemoryLayer | str | None = None,
        now: int | None = None,
    ) -> NearbyRecords:
        """The agent's ``k`` nearest live records within ``radius`` of ``position``.

        Records have a position when their ``metadata.spatial`` is set (any layer); records
        whose TTL has passed at ``now`` (default: the engine clock) are left out, and
        ``layer`` keeps one layer. An agent that never stored anything has none (``[]``).

        Ordering guarantee: distance quantized with ``score_quantum``, then record id.
        Runtime complexity: O(cells of the query box + records in them) numpy on a uniform
        grid (``SpatialSettings.cell_size``), rebuilt O(n log n) after the agent's
        positioned records change (agents under ``grid_min_records`` are scanned in one
        vectorized pass instead); the records are built only when read.

        Returns:
            ``Nearby(record, distance)`` pairs, nearest first, as a sequence whose ``ids``
            and ``distances`` are ready and whose records are built on access.

        Raises:
            InputInvalidError: ``position`` is not 2 or 3 finite numbers, ``radius`` is
                negative or not finite, ``k`` < 1, a bad layer, agent id or ``now``.
        """
        am = self._agent(agent_id)
        return self._spatial.nearby(am, position, radius, k, layer, self._time(now))

    @journaled
    def ingest_physics(
        self, events: Sequence[PhysicsEvent | Mapping[str, object]], *, now: int | None = None
    ) -> IngestedRecords:
        """Store the spatial records of physics, collision and boundary events.

        Which events become records is set by ``MemoryConfig.spatial`` (boundary
        crossings, the first contact of an agent with a contact class, every collision,
        plain movement); see ``f09_memory.spatial.physics`` for the event shape (a
        :class:`~f09_memory.spatial.physics.PhysicsEvent` or a mapping). Records go through
        the write path (redaction, ``memory:record:created``, caps). All or nothing; the
        contact classes seen are remembered per agent (saved, hashed, journaled).

        Runtime complexity: O(events) plus the batch ingest.

        Returns:
            The new records, in event order (events that make no record are skipped).

        Raises:
            InputInvalidError: A malformed event (the message gives its index) or ``now``.
            CapacityExceededError: An agent would pass ``max_records_per_agent``.
        """
        return self._spatial.ingest_physics(events, self._time(now))

    def contact_count(self, agent_id: str, contact_class: str) -> int:
        """Collisions of ``agent_id`` with ``contact_class`` seen by :meth:`ingest_physics`.

        Raises:
            InputInvalidError: A bad agent id or a contact class that is not text.
        """
        agent_id = validate_agent_id(agent_id, self._ingestor.limits.agent_id)
        if not isinstance(contact_class, str) or not 0 < len(contact_class) <= 256:
            raise InputInvalidError("contact_class must be a string of 1..256 characters",
                                    details={"field": "contact_class"})
        return self._spatial.contact_count(agent_id, contact_class)

    # ---- procedural
    def procedures(self, agent_id: str, *, context: str | None = None, k: int = 5,
                   min_support: int | None = None) -> list[Procedure]:
        """What usually works (when ``context``): the agent's mined action patterns.

        Patterns come from the agent's action records (``metadata.attributes`` ``action``,
        ``outcome``, ``context``; see ``f09_memory.procedural``), counted by ``tick``'s
        mining slices: records not yet mined are not counted. An unknown agent or context
        has none; ``forget(agent_id=...)`` drops the agent's patterns.

        Ordering guarantee: ``success_rate * (1 - 2 ** (-support / support_half))``,
        quantized, descending, then ``pattern_id`` ascending.
        Runtime complexity: O(p log p) for the agent's p patterns.

        Args:
            agent_id: The agent.
            context: Only patterns of this context (``None``: every context; ``""``: the
                patterns without one).
            k: At most this many.
            min_support: Only patterns seen this often (default
                ``procedural.min_support``).

        Raises:
            InputInvalidError: ``k`` negative or not an int, ``min_support`` below 1,
                ``context`` not a string, or a malformed ``agent_id``.
        """
        agent_id = validate_agent_id(agent_id, self._ingestor.limits.agent_id)
        check_procedures_args(k, min_support, context)
        return self._miner.procedures(agent_id, context, k, min_support)
