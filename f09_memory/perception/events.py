"""Engine events (spec section 13, F02): what a game engine reports, before routing.

An :class:`EngineEvent` is one thing that happened in the world: a ``kind`` (the routing
key of ``MemoryConfig.perception``), the agents involved (``actor``, ``target``), where
(``position``), a description (``text``; rendered from the other fields when absent), a
``payload`` of host attributes (stored on every record as attributes), an ``importance``
hint, ``tags`` and ``flagged``. Plain mappings in either spelling are accepted wherever an
event is (``EngineEvent.parse``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from f09_memory.config.perception import KIND_PATTERN
from f09_memory.schema.base import BoundaryModel
from f09_memory.schema.records import AttributeValue, SpatialMeta, Unit

__all__ = ["MAX_COORDINATE", "EngineEvent", "render_text"]

MAX_COORDINATE = 1e12
"""Largest absolute world coordinate an event or a placement may have."""

_ID = Annotated[str, Field(min_length=1, max_length=256)]


class EngineEvent(BoundaryModel):
    """One typed event from the host's engine (physics, behaviour, dialogue, combat...).

    Attributes:
        kind: The event kind, e.g. ``combat``, ``speech``, ``collision`` (lower-case id).
        actor: The agent that did it, if any.
        target: The agent it was done to, if any (not the actor).
        position: Where it happened (``{"x", "y", "z"}`` or ``(x, y[, z])``).
        text: What a perceiver remembers; rendered from the fields when ``None``.
        payload: Host attributes (str, bool, int or float values) kept on each record.
        importance: Importance hint in 0..1 (else the kind's rule, else the heuristic).
        tags: Tags added to each record.
        flagged: Flag the records (importance boost at retrieval).
    """

    kind: Annotated[str, Field(pattern=KIND_PATTERN)]
    actor: _ID | None = None
    target: _ID | None = None
    position: SpatialMeta | None = None
    text: Annotated[str, Field(min_length=1)] | None = None
    payload: dict[str, AttributeValue] = Field(default_factory=dict)
    importance: Unit | None = None
    tags: tuple[str, ...] = ()
    flagged: bool = False

    @field_validator("position", mode="before")
    @classmethod
    def _point(cls, value: Any) -> Any:
        if isinstance(value, list | tuple) and len(value) in (2, 3):
            return dict(zip(("x", "y", "z"), value, strict=False))
        return value

    @model_validator(mode="after")
    def _someone(self) -> EngineEvent:
        if self.actor is None and self.target is None and self.position is None:
            raise ValueError("an event needs an actor, a target or a position: "
                             "nobody could ever perceive it")
        pos = self.position
        if pos is not None and max(abs(pos.x), abs(pos.y), abs(pos.z)) > MAX_COORDINATE:
            raise ValueError("position coordinates must be within ±1e12 world units")
        if self.actor is not None and self.actor == self.target:
            raise ValueError("target must differ from actor (leave it out instead)")
        return self


def render_text(event: EngineEvent) -> str:
    """The event's ``text``, or a deterministic rendering of its fields.

    ``"combat: npc-1 -> npc-2 (weapon=sword)"``: kind, actor, target, then the payload in
    key order.
    """
    if event.text is not None:
        return event.text
    parts = [f"{event.kind}:"]
    if event.actor is not None:
        parts.append(event.actor)
    if event.target is not None:
        parts.append(f"-> {event.target}")
    if event.payload:
        parts.append("(" + ", ".join(f"{k}={event.payload[k]}"
                                     for k in sorted(event.payload)) + ")")
    return " ".join(parts)
