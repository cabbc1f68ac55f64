"""Engine-event ingestion: a frame of events routed, stored and the actors placed.

``MemoryEngine.ingest_events`` delegates here: validate every event, route the frame
(``perception.router``), store the items through the writer in one ``ingest_batch`` (all or
nothing: a bad item is reported under its event's index), then place the actors that moved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from f09_memory.config.perception import EventRule
from f09_memory.core.records import IngestedRecords
from f09_memory.core.state import EngineState
from f09_memory.core.writer import Writer
from f09_memory.errors import InputInvalidError, MemoryEngineError
from f09_memory.perception.events import MAX_COORDINATE, EngineEvent
from f09_memory.perception.placements import Placements
from f09_memory.perception.router import parse_events, physics_events, route_events
from f09_memory.schema.records import SpatialMeta
from f09_memory.social.service import SocialService
from f09_memory.spatial.physics import parse_events as parse_physics
from f09_memory.spatial.physics import physics_items
from f09_memory.spatial.service import SpatialService

__all__ = ["Perception"]


def _check_bounds(xyz: np.ndarray[Any, Any]) -> None:
    if (np.abs(xyz) > MAX_COORDINATE).any():
        raise InputInvalidError("a position is beyond ±1e12 world units",
                                details={"field": "position"})


class Perception:
    """Routes engine events to the agents that perceive them (``MemoryConfig.perception``).

    Args:
        state: The engine state (the positions table is registered in it).
        writer: The write path every record goes through.
    """

    def __init__(self, state: EngineState, writer: Writer, social: SocialService,
                 spatial: SpatialService) -> None:
        self.state = state
        self.writer = writer
        self.social = social
        self.spatial = spatial
        self.settings = state.config.perception
        self.placements = Placements()
        state.register(self.placements)
        writer.forget_hooks.append(self.forget_agent)

    def forget_agent(self, agent_id: str) -> None:
        """Drop the agent's last known position (``forget(agent_id=...)``)."""
        self.placements.delete([(agent_id,)])

    def ingest(self, events: object, now: int, *,
               perceivers: Sequence[list[tuple[str, str]]] | None = None,
               keep: Callable[[str], bool] | None = None) -> IngestedRecords:
        """Store what each perceiver of each event remembers; see the module docstring.

        ``perceivers`` (one list of ``(agent_id, role)`` per event) replaces the routing's
        own resolution, and ``keep`` stores only those agents' part of the frame (see
        ``perception.router``).

        Raises:
            InputInvalidError: A malformed event, a kind without a rule, or an item the
                writer refuses (named by its event's index).
            CapacityExceededError: An agent would pass ``max_records_per_agent`` (checked
                before anything is stored; the social layer's notable records are checked
                after the event's records are stored, and only the ledger is rolled back).
        """
        contacts: list[tuple[str, str]] = []
        spatial = self.spatial
        touched: set[tuple[str, str]] = set()  # membership only

        def seen(key: tuple[str, str]) -> bool:
            return key in touched or key in spatial.contacts

        def physics(event: EngineEvent, rule: EventRule, i: int,
                    perceivers: list[tuple[str, str]]) -> list[dict[str, Any]]:
            try:
                parsed = parse_physics(physics_events(event, rule, i, perceivers))
            except MemoryEngineError as exc:
                raise InputInvalidError(f"events[{i}]: {exc.message}",
                                        details={"field": "events", "index": i}) from exc
            plan = physics_items(parsed, spatial.settings, seen, spatial.redact)
            touched.update(plan.contacts)
            contacts.extend(plan.contacts)
            return plan.items

        frame = route_events(parse_events(events), self.settings, self.placements, physics,
                             perceivers=perceivers, keep=keep)
        # the ledger's part is checked before anything is stored
        ledger = self.social.parse(frame.interactions, now) if frame.interactions else None
        try:
            records = self.writer.ingest_batch(frame.items, now)
        except MemoryEngineError as exc:
            index = exc.details.get("index")
            if isinstance(index, int) and 0 <= index < len(frame.event_of):
                event = frame.event_of[index]
                raise type(exc)(f"events[{event}]: {exc.message}",
                                details={**exc.details, "index": event}) from exc
            raise
        spatial.contacts.record(contacts, now)
        if ledger is not None:
            self.social.apply_parsed(ledger)
        movers, xyz = frame.moves
        if movers:
            self.placements.place(movers, xyz, now)
        return records

    def place(self, positions: Mapping[str, Any], now: int) -> None:
        """Set agents' last known positions (``{agent_id: (x, y[, z]) or {"x", ...}}``).

        Raises:
            InputInvalidError: Not a mapping, an empty or private agent id, or a position
                that is not 2 or 3 finite numbers (nothing is placed).
        """
        if not isinstance(positions, Mapping):
            raise InputInvalidError("positions must map agent ids to (x, y[, z])",
                                    details={"field": "positions"})
        ids: list[str] = []
        rows: list[list[float]] = []
        redactor = self.writer.ingestor.redactor
        for agent_id, value in positions.items():
            if not isinstance(agent_id, str) or not agent_id:
                raise InputInvalidError("positions keys must be non-empty agent ids",
                                        details={"field": "positions"})
            redactor.refuse_private(agent_id, field="agent_id")
            if isinstance(value, list | tuple) and len(value) in (2, 3):
                value = dict(zip(("x", "y", "z"), value, strict=False))
            try:
                point = SpatialMeta.parse(value)
            except MemoryEngineError as exc:
                raise InputInvalidError(
                    "a position must be 2 or 3 finite numbers or {x, y, z}",
                    details={"field": "positions"}) from exc
            ids.append(agent_id)
            rows.append([point.x, point.y, point.z])
        if ids:
            xyz = np.array(rows, dtype=np.float64)
            _check_bounds(xyz)
            self.placements.place(ids, xyz, now)

    def position(self, agent_id: str) -> tuple[float, float, float] | None:
        """The agent's last known position (``None``: never placed)."""
        return self.placements.position(agent_id)
