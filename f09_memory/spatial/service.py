"""SpatialService: ``nearby`` queries, the navigation proximity term and physics ingestion.

The engine owns one (``MemoryEngine.nearby`` / ``ingest_physics`` delegate here; retrieval
calls :meth:`SpatialService.proximity`). It keeps, per agent, the derived position columns
and grid of :mod:`~f09_memory.spatial.positions` (a cache, re-derived from the records'
``metadata.spatial`` when they change) and one state table, the contact classes each agent
has touched (:class:`~f09_memory.spatial.physics.ContactTable`, registered with
``EngineState`` so it is saved, hashed and journaled).

``nearby`` answers "what do I remember near here": the ``k`` nearest live records (TTL not
passed at ``now``) within ``radius`` of a position, ordered by distance quantized with
``score_quantum`` (``rint(d * quantum)``) and then record id, so the order is total and the
same on every machine. An agent with no memories (never seen) has none: a game host asks
for agents that may not have remembered anything yet, and an empty answer is the truth.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple, overload

import numpy as np
from numpy.typing import NDArray

from f09_memory._validate import parse_layer
from f09_memory.core.records import IngestedRecords, RecordReader
from f09_memory.core.state import EngineState
from f09_memory.core.writer import Writer
from f09_memory.errors import InputInvalidError
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.records import MemoryRecord
from f09_memory.spatial.physics import ContactTable, parse_events, physics_items
from f09_memory.spatial.positions import AgentPositions, RegionTable, distances, proximity_of
from f09_memory.store.agent import AgentMemory

__all__ = ["Nearby", "NearbyRecords", "Position", "SpatialService", "check_position"]

Position = tuple[float, float, float]
"""A point in world coordinates (``z`` is 0 for a 2-D position)."""
_MAX_K = 100_000
_MAX_RADIUS = 1e300
_NO_SLOTS = np.zeros(0, dtype=np.intp)


class Nearby(NamedTuple):
    """One answer of ``engine.nearby``: a record and its distance to the query position."""

    record: MemoryRecord
    distance: float


class NearbyRecords(Sequence[Nearby]):
    """What ``engine.nearby`` returns: ids and distances now, records built on access.

    ``ids`` and ``distances`` cost nothing more; indexing or iterating builds the records
    (from the reader's cache when it holds them) as ``Nearby(record, distance)``. A record
    that left the store since raises ``RecordNotFoundError`` on access: read what you need
    before the next write.
    """

    __slots__ = ("_am", "_built", "_next_rev", "_reader", "_slots", "distances")

    def __init__(self, reader: RecordReader, am: AgentMemory | None,
                 slots: NDArray[np.intp], distances: list[float]) -> None:
        self._reader = reader
        self._am = am
        self._slots = slots
        self._next_rev = -1 if am is None else am.next_rev
        self._built: list[Nearby] | None = None
        self.distances = distances
        """The distances to the query position, nearest first."""

    @property
    def ids(self) -> list[str]:
        """The records' ids, nearest first."""
        am = self._am
        return [] if am is None else [am.id_of(k) for k in am.key[self._slots].tolist()]

    def _all(self) -> list[Nearby]:
        built = self._built
        if built is None:
            am = self._am
            if am is None:
                records: list[MemoryRecord] = []
            elif am.next_rev == self._next_rev:  # unchanged: the slots still hold them
                records = self._reader.build_many(am, self._slots)
            else:
                records = [self._reader.get(i) for i in self.ids]
            built = self._built = [Nearby(r, d) for r, d in zip(records, self.distances,
                                                                  strict=True)]
        return built

    def __len__(self) -> int:
        return len(self.distances)

    @overload
    def __getitem__(self, index: int) -> Nearby: ...

    @overload
    def __getitem__(self, index: slice) -> list[Nearby]: ...

    def __getitem__(self, index: int | slice) -> Nearby | list[Nearby]:
        return self._all()[index]

    def __iter__(self) -> Iterator[Nearby]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NearbyRecords | list):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"NearbyRecords({list(zip(self.ids, self.distances, strict=True))!r})"


def check_position(value: object, field: str = "position") -> Position:
    """``value`` as ``(x, y, z)``: a sequence of 2 or 3 finite numbers (``z`` defaults to 0).

    Raises:
        InputInvalidError: Not 2 or 3 numbers, or one is NaN or infinite (names ``field``).
    """
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, tuple | list) or len(value) not in (2, 3):
        raise InputInvalidError(f"{field} must be 2 or 3 numbers: (x, y) or (x, y, z)",
                                details={"field": field})
    out: list[float] = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            raise InputInvalidError(f"{field} must hold numbers", details={"field": field})
        f = float(v)
        if not math.isfinite(f):
            raise InputInvalidError(f"{field} must be finite (no NaN or infinity)",
                                    details={"field": field})
        out.append(f)
    if len(out) == 2:
        out.append(0.0)
    return out[0], out[1], out[2]


def _check_radius(radius: object) -> float:
    if isinstance(radius, bool) or not isinstance(radius, int | float | np.integer |
                                                  np.floating):
        raise InputInvalidError("radius must be a number >= 0", details={"field": "radius"})
    r = float(radius)
    if not math.isfinite(r) or not 0.0 <= r <= _MAX_RADIUS:
        raise InputInvalidError(f"radius must be a finite number in 0..{_MAX_RADIUS:g}",
                                details={"field": "radius"})
    return r


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= _MAX_K:
        raise InputInvalidError(f"k must be an integer in 1..{_MAX_K}", details={"field": "k"})
    return int(k)


class SpatialService:
    """The spatial layer of one engine (see the module docstring).

    Args:
        state: The engine state (its contact table is registered here).
        writer: The write path physics records go through.
        reader: Builds the records ``nearby`` returns.
        redact: Redacts a contact class before it keys the contact table.
    """

    def __init__(self, state: EngineState, writer: Writer, reader: RecordReader,
                 redact: Callable[[str], str]) -> None:
        self.state = state
        self.settings = state.config.spatial
        self.quantum = state.config.score_quantum
        self.writer = writer
        self.reader = reader
        self.redact = redact
        self.regions = RegionTable()
        self.contacts = ContactTable()
        state.register(self.contacts)
        self._agents: dict[str, AgentPositions] = {}

    def clear(self) -> None:
        """Forget the derived columns (the store was restored)."""
        self._agents.clear()

    def positions(self, am: AgentMemory) -> AgentPositions:
        """The agent's position columns, synced with its records."""
        found = self._agents.get(am.agent_id)
        if found is None or found.am is not am:
            found = self._agents[am.agent_id] = AgentPositions(
                am, self.regions, self.settings.cell_size, self.settings.grid_min_records)
        found.sync()
        return found

    # ------------------------------------------------------------------ queries
    def nearby(self, am: AgentMemory | None, position: object, radius: object, k: object,
               layer: object, now: int) -> NearbyRecords:
        """The ``k`` nearest live records within ``radius`` (see the module docstring).

        Raises:
            InputInvalidError: A bad position, radius, k or layer (state unchanged).
        """
        at = check_position(position)
        r = _check_radius(radius)
        count = _check_k(k)
        lay: MemoryLayer | None = None if layer is None else parse_layer(layer)
        if am is None or not am.live:
            return NearbyRecords(self.reader, None, _NO_SLOTS, [])
        cols = self.positions(am)
        if not cols.positioned:
            return NearbyRecords(self.reader, None, _NO_SLOTS, [])
        slots, d2, keys = cols.within(at, r, now, None if lay is None else lay.code)
        d = np.sqrt(d2)
        order = np.lexsort((keys, np.rint(d * self.quantum)))[:count]
        return NearbyRecords(self.reader, am, slots[order], d[order].tolist())

    def proximity(self, am: AgentMemory, slots: NDArray[np.intp],
                  position: Position) -> NDArray[np.float64]:
        """The proximity term of ``slots`` to ``position`` (0 for records without one)."""
        cols = self.positions(am)
        out = np.zeros(slots.shape[0], dtype=np.float64)
        if not cols.positioned or slots.shape[0] == 0:
            return out
        has = cols.has[slots]
        if not has.any():
            return out
        sel = slots[has]
        d = distances(cols.x[sel], cols.y[sel], cols.z[sel], position)
        out[has] = proximity_of(d, self.settings.proximity_scale)
        return out

    # ------------------------------------------------------------------ physics
    def ingest_physics(self, events: object, now: int) -> IngestedRecords:
        """Store the records the flagged physics events make; count their contacts.

        All or nothing: every event is validated, then the records are stored through the
        writer (which validates them again and may raise), and only then is the contact
        table updated.

        Raises:
            InputInvalidError: A malformed event (the message gives its index).
            CapacityExceededError: An agent would pass ``max_records_per_agent``.
        """
        parsed = parse_events(events)
        contacts = self.contacts
        plan = physics_items(parsed, self.settings, contacts.__contains__, self.redact)
        if plan.items:
            created = self.writer.ingest_batch(plan.items, now)
        else:
            created = IngestedRecords(self.reader, [])
        contacts.record(plan.contacts, now)
        return created

    def _check(self) -> None:
        """Assert every cached agent's rows match its records (syncing them first)."""
        store = self.state.store
        for agent_id in sorted(self._agents):
            cols = self._agents[agent_id]
            if store.get(agent_id) is cols.am:
                cols.sync()
                cols._check()

    def contact_count(self, agent_id: str, contact_class: str) -> int:
        """How many collisions ``agent_id`` had with ``contact_class`` (0: never)."""
        slot = self.contacts.slot((agent_id, self.redact(contact_class)))
        return 0 if slot is None else int(self.contacts.column("count")[slot])
