"""Settings of engine-event ingestion (``MemoryEngine.ingest_events``): routing rules.

A host's game engine reports typed events (``perception.EngineEvent``: a kind, an actor, a
target, a position, a payload). Each kind has an :class:`EventRule` saying which layer its
memories go to and who perceives it: the actor, the target, and the agents whose last known
position is within ``radius`` of the event. A kind without a rule takes ``default_rule``;
with no default it is refused (``MEMORY_INPUT_INVALID``), never silently dropped.
"""

from __future__ import annotations

import re
from typing import Annotated, ClassVar, Literal

from pydantic import Field, StrictInt, field_validator, model_validator

from f09_memory._validate import MAX_LOGICAL_TIME
from f09_memory.errors import ErrorCode
from f09_memory.json_types import JsonValue
from f09_memory.schema.base import BoundaryModel
from f09_memory.schema.enums import MemoryLayer

__all__ = ["DEFAULT_EVENT_RULES", "KIND_PATTERN", "EventRule", "PerceptionSettings"]

KIND_PATTERN = r"^[a-z][a-z0-9_.:-]{0,63}$"
"""An event kind: a short lower-case identifier (``collision``, ``trade.offer``)."""
_KIND = re.compile(KIND_PATTERN)
Perceiver = Literal["actor", "target", "nearby"]


class _Settings(BoundaryModel):
    _default_code: ClassVar[ErrorCode] = ErrorCode.MEMORY_CONFIG_INVALID


class EventRule(_Settings):
    """How events of one kind become memories.

    Attributes:
        layer: The layer of the records created.
        perceivers: Who remembers the event: ``actor``, ``target`` and/or ``nearby`` (every
            agent whose last known position is within ``radius`` of the event's position).
        radius: The perception radius of ``nearby`` (world units); ``None``: the settings'
            ``radius``.
        importance: The importance of the records when the event gives no hint; ``None``:
            the engine's importance heuristic.
        ttl: Lifetime of the records in logical ms (``None``: no expiry).
        tags: Tags added to every record of the kind.
        witness_discount: Importance factor for ``nearby`` perceivers (a witness remembers
            less strongly than the parties), applied to a given or hinted importance.
        ledger: What the event does to the social ledger (``MemoryConfig.social``):
            ``off``; ``mutual``: actor and target each record an interaction of kind
            ``ledger_kind`` with the payload's ``sentiment`` (default 0); ``hearsay``: the
            target hears from the actor about the payload's ``about`` agent.
        ledger_kind: The ledger's interaction kind for ``mutual`` (a key of
            ``social.kind_weights``: interaction, trade, help, gift, betrayal).
        places_actor: Whether the actor is placed at the event's position
            (``PerceptionSettings.track_positions``): ``False`` for events that happen away
            from the actor (a sighting of something far off).
        physics: When set, the event is a physics event of this kind for its actor (and
            target): it goes through the spatial layer's physics adapter, whose flags
            (``MemoryConfig.spatial``) decide whether it is remembered (boundary
            crossings, first contact of a class, every collision, plain movement), and
            ``layer``, ``nearby`` and ``tags`` do not apply. The payload gives
            ``fromRegion``, ``toRegion``, ``region`` and ``contactClass``.
    """

    layer: MemoryLayer = MemoryLayer.EPISODIC
    perceivers: tuple[Perceiver, ...] = ("actor", "target")
    radius: Annotated[float, Field(gt=0.0, le=1e9, allow_inf_nan=False)] | None = None
    importance: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    ttl: Annotated[StrictInt, Field(ge=1, lt=MAX_LOGICAL_TIME)] | None = None
    tags: tuple[str, ...] = ()
    witness_discount: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5
    ledger: Literal["off", "mutual", "hearsay"] = "off"
    ledger_kind: Annotated[str, Field(min_length=1, max_length=32)] = "interaction"
    places_actor: bool = True
    physics: Literal["movement", "boundary", "collision"] | None = None

    @field_validator("perceivers")
    @classmethod
    def _some_perceiver(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value or len(set(value)) != len(value):
            raise ValueError("perceivers must name actor, target and/or nearby, once each")
        return value

    @model_validator(mode="after")
    def _physics_parties(self) -> EventRule:
        if self.physics is not None and "nearby" in self.perceivers:
            raise ValueError("a physics rule's perceivers are its bodies: actor and/or target")
        return self

    def to_json_dict(self) -> dict[str, JsonValue]:
        """The JSON form (camelCase, every field)."""
        return self.model_dump(mode="json", by_alias=True)


DEFAULT_EVENT_RULES: dict[str, EventRule] = {
    "observation": EventRule(perceivers=("actor",)),
    "speech": EventRule(layer=MemoryLayer.SOCIAL, perceivers=("actor", "target", "nearby"),
                        radius=8.0, ledger="mutual"),
    "interaction": EventRule(layer=MemoryLayer.SOCIAL, perceivers=("actor", "target"),
                             ledger="mutual"),
    "trade": EventRule(layer=MemoryLayer.SOCIAL, perceivers=("actor", "target"),
                       ledger="mutual", ledger_kind="trade"),
    "gossip": EventRule(layer=MemoryLayer.SOCIAL, perceivers=("actor", "target"),
                        ledger="hearsay"),
    "action": EventRule(perceivers=("actor",)),
    "combat": EventRule(perceivers=("actor", "target", "nearby"), importance=0.8,
                        tags=("danger",)),
    "movement": EventRule(layer=MemoryLayer.SPATIAL, perceivers=("actor",),
                          physics="movement"),
    "boundary": EventRule(layer=MemoryLayer.SPATIAL, perceivers=("actor",),
                          physics="boundary"),
    "collision": EventRule(layer=MemoryLayer.SPATIAL, perceivers=("actor", "target"),
                           physics="collision"),
}
"""The rules of the common kinds; a config's ``rules`` replace them kind by kind."""


class PerceptionSettings(_Settings):
    """Routing of engine events to agents and layers (``MemoryConfig.perception``).

    Attributes:
        rules: Rules by event kind, on top of :data:`DEFAULT_EVENT_RULES` (a kind given
            here replaces the default rule of that kind).
        default_rule: The rule of a kind that has none; ``None``: such an event is refused.
        radius: The default perception radius of ``nearby`` perceivers.
        max_perceivers: Most ``nearby`` agents one event reaches (the nearest first, ties by
            id), so a crowd scene cannot multiply one event into thousands of records.
        track_positions: Whether an event with an actor and a position moves the actor
            there (its last known position, used by ``nearby`` perception).
    """

    rules: dict[str, EventRule] = Field(default_factory=dict)
    default_rule: EventRule | None = None
    radius: Annotated[float, Field(gt=0.0, le=1e9, allow_inf_nan=False)] = 10.0
    max_perceivers: Annotated[StrictInt, Field(ge=0, le=100_000)] = 32
    track_positions: bool = True

    @field_validator("rules")
    @classmethod
    def _kinds(cls, value: dict[str, EventRule]) -> dict[str, EventRule]:
        if not all(_KIND.match(kind) for kind in value):
            raise ValueError("rule kinds are short lower-case identifiers "
                             "(letters, digits, _ . : -; at most 64)")
        return value

    def rule(self, kind: str) -> EventRule | None:
        """The rule of ``kind``: the config's, the default's, ``default_rule`` or ``None``."""
        found = self.rules.get(kind) or DEFAULT_EVENT_RULES.get(kind)
        return found if found is not None else self.default_rule

    def to_json_dict(self) -> dict[str, JsonValue]:
        """The JSON form (camelCase, every field)."""
        return self.model_dump(mode="json", by_alias=True)
