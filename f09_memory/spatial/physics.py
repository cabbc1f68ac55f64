"""Physics, collision and boundary events turned into spatial ingest items (spec section 13).

"F06/F07 Physics + Collision: spatial events ingested if flagged (movement boundary
crossing, new contact class)". The host's physics step reports what happened to an agent
as a :class:`PhysicsEvent` (or a plain mapping of the same shape, camelCase or snake_case)::

    {"kind": "movement" | "boundary" | "collision",
     "agent_id": "npc-1",                  # whose memory it is
     "position": [x, y] or [x, y, z],      # where (finite world coordinates)
     "region": "market",                   # optional: the region the agent is in
     "from_region": "forest",              # movement / boundary: the region left
     "to_region": "market",                # movement / boundary: the region entered
     "contact_class": "fire",              # collision: what was touched (required)
     "other_id": "crate-7",                # optional: the other body's id
     "importance": 0.7,                    # optional: overrides the configured one
     "tags": ["danger"]}                   # optional: extra tags

:func:`physics_items` decides, with the flags of ``SpatialSettings``, which events become
records, and builds the writer's items (layer ``spatial``, ``metadata.spatial`` with the
position and region, ``metadata.attributes`` with the kind and the classes, tags
``physics`` and the kind, ``source_event`` ``physics:<kind>``):

- ``boundary``, and ``movement`` whose ``from_region`` and ``to_region`` differ: a
  boundary crossing (``ingest_boundary_crossings``);
- ``collision`` of a contact class the agent never touched before (:class:`ContactTable`,
  saved with the engine, so "new" survives save/load; several in one batch: the first):
  a first contact (``ingest_first_contact``); any other collision only with
  ``ingest_every_collision``;
- any other ``movement`` only with ``ingest_movement``.

The function is pure: it reads the contact table through ``seen`` and returns, besides the
items, the contact keys the batch touched; the service stores the items through the
writer (redaction, events, caps, journal) and only then updates the table, so a rejected
batch changes nothing. Contact classes are redacted (``redact``) before they key the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, model_validator

from f09_memory.config.spatial import SpatialSettings
from f09_memory.core.tables import KeyedTable
from f09_memory.errors import InputInvalidError, MemoryEngineError
from f09_memory.schema.base import BoundaryModel

__all__ = ["ContactTable", "PhysicsEvent", "PhysicsPlan", "parse_events", "physics_items"]

_Id = Annotated[str, Field(min_length=1, max_length=256)]
_MAX_EVENTS = 100_000


class PhysicsEvent(BoundaryModel):
    """One physics step's event for one agent (see the module docstring for the shape)."""

    kind: Literal["movement", "boundary", "collision"]
    agent_id: Annotated[str, Field(min_length=1, max_length=4_096)]
    position: tuple[Annotated[float, Field(allow_inf_nan=False)], ...] = Field(
        min_length=2, max_length=3)
    region: _Id | None = None
    from_region: _Id | None = None
    to_region: _Id | None = None
    contact_class: _Id | None = None
    other_id: _Id | None = None
    importance: Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)] | None = None
    tags: tuple[Annotated[str, Field(min_length=1, max_length=256)], ...] = Field(
        default=(), max_length=32)

    @model_validator(mode="after")
    def _complete(self) -> PhysicsEvent:
        if self.kind == "collision" and self.contact_class is None:
            raise ValueError("a collision needs contact_class (what was touched)")
        if self.kind == "boundary" and self.to_region is None:
            raise ValueError("a boundary event needs to_region (the region entered)")
        return self

    @property
    def crosses(self) -> bool:
        """Whether the event is a boundary crossing."""
        if self.kind == "boundary":
            return True
        return (self.kind == "movement" and self.from_region is not None
                and self.to_region is not None and self.from_region != self.to_region)


class ContactTable(KeyedTable):
    """Contact classes each agent has touched: ``(agent, contact class)`` rows.

    Columns: ``first_seen`` and ``last_seen`` (logical time), ``count`` (collisions seen).
    """

    NAME: ClassVar[str] = "spatial.contacts"
    KEY_ARITY: ClassVar[int] = 2
    INTS: ClassVar[tuple[str, ...]] = ("first_seen", "last_seen", "count")

    def validate(self, columns: dict[str, NDArray[Any]]) -> None:
        """Refuse negative times, ``first_seen > last_seen`` and counts below 1.

        Raises:
            ValueError: A loaded value out of range.
        """
        first, last, count = columns["first_seen"], columns["last_seen"], columns["count"]
        if (first < 0).any() or (last < first).any() or (count < 1).any():
            raise ValueError(f"{self.NAME}: a time is negative or out of order, or a count < 1")

    def record(self, keys: Sequence[tuple[str, str]], now: int) -> None:
        """Count one collision per key (keys may repeat) at logical time ``now``."""
        if not keys:
            return
        slots = self.rows(keys)
        count = self.column("count")
        first = self.column("first_seen")
        fresh = slots[count[slots] == 0]
        first[fresh] = now
        self.column("last_seen")[slots] = now
        np.add.at(count, slots, 1)


@dataclass(frozen=True, slots=True)
class PhysicsPlan:
    """What a batch of physics events does.

    Attributes:
        items: The writer's ingest items (each names its ``agent_id``), in event order.
        contacts: The ``(agent, redacted contact class)`` of every collision, in order.
    """

    items: list[dict[str, Any]]
    contacts: list[tuple[str, str]]


def parse_events(events: object) -> list[PhysicsEvent]:
    """Validate a list of events (models or mappings) into :class:`PhysicsEvent`.

    Raises:
        InputInvalidError: Not a list, too long, or an event malformed (the message gives
            its index and field, never its values).
    """
    if isinstance(events, str | bytes | dict) or not isinstance(events, Sequence):
        raise InputInvalidError("events must be a list of physics events (mappings or "
                                "PhysicsEvent)", details={"field": "events"})
    if len(events) > _MAX_EVENTS:
        raise InputInvalidError(f"at most {_MAX_EVENTS} physics events per call; split the "
                                "batch", details={"field": "events"})
    out: list[PhysicsEvent] = []
    for i, event in enumerate(events):
        try:
            out.append(PhysicsEvent.parse(event))
        except MemoryEngineError as exc:
            raise InputInvalidError(f"events[{i}]: {exc.message}",
                                    details={**exc.details, "index": i}) from exc
    return out


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def physics_items(events: Sequence[PhysicsEvent], settings: SpatialSettings,
                  seen: Callable[[tuple[str, str]], bool],
                  redact: Callable[[str], str] = str) -> PhysicsPlan:
    """The spatial items and contact keys of ``events`` (pure; see the module docstring).

    Args:
        events: Validated events, in the order they happened.
        settings: Which kinds are ingested and their importance.
        seen: Whether an ``(agent, contact class)`` was touched before this batch.
        redact: Applied to a contact class before it keys the table.

    Runtime complexity: O(events).
    """
    items: list[dict[str, Any]] = []
    contacts: list[tuple[str, str]] = []
    batch: set[tuple[str, str]] = set()  # membership only, never iterated
    for event in events:
        kind = event.kind
        attrs: dict[str, Any] = {"physicsKind": kind}
        importance: float
        if event.crosses:
            if not settings.ingest_boundary_crossings:
                continue
            note = "boundary"
            importance = settings.boundary_importance
            to = event.to_region
            content = (f"Crossed from {event.from_region} into {to}." if event.from_region
                       else f"Entered {to}.")
        elif kind == "collision":
            cls = event.contact_class
            assert cls is not None
            key = (event.agent_id, redact(cls))
            contacts.append(key)
            first = key not in batch and not seen(key)
            batch.add(key)
            attrs["contactClass"] = cls
            if first and settings.ingest_first_contact:
                note, importance = "first-contact", settings.first_contact_importance
                content = f"Touched {cls} for the first time."
            elif settings.ingest_every_collision:
                note, importance = "collision", settings.collision_importance
                content = f"Collided with {cls}."
            else:
                continue
        else:  # movement without a crossing
            if not settings.ingest_movement:
                continue
            note, importance = "movement", settings.movement_importance
            where = event.region or event.to_region
            content = (f"Moved within {where}." if where else
                       "Moved to (" + ", ".join(map(_fmt, event.position)) + ").")
        for name, value in (("fromRegion", event.from_region), ("toRegion", event.to_region),
                            ("otherId", event.other_id)):
            if value is not None:
                attrs[name] = value
        pos = event.position
        spatial: dict[str, Any] = {"x": pos[0], "y": pos[1],
                                   "z": pos[2] if len(pos) == 3 else 0.0}
        region = event.to_region if event.crosses else (event.region or event.to_region)
        if region is not None:
            spatial["region"] = region
        items.append({
            "agent_id": event.agent_id, "content": content, "layer": "spatial",
            "importance": importance if event.importance is None else event.importance,
            "tags": ["physics", note, *event.tags],
            "source_event": f"physics:{kind}",
            "metadata": {"spatial": spatial, "attributes": attrs},
        })
    return PhysicsPlan(items, contacts)
