"""Routing engine events to the agents that perceive them, as ingest items of one frame.

For each event, in order: its kind's rule (``PerceptionSettings.rule``; no rule and no
``default_rule``: the whole frame is refused, naming the event's index), then its
perceivers, each remembering it once:

1. the ``actor`` and the ``target`` when the rule names them;
2. ``nearby``: the placed agents within the rule's radius of the event's position, nearest
   first (ties by id), at most ``max_perceivers``, the parties excluded.

Perception reads the positions known when the frame starts; the actors' new positions
(``track_positions``, for rules that ``places_actor``) are placed after the frame is
stored, the last event of an actor winning. So a frame's routing does not depend on the
order of its events' placements, and a refused frame moves nobody.

A physics rule (``EventRule.physics``: the default ``movement``, ``boundary`` and
``collision`` kinds) hands its event to the spatial layer's physics adapter instead, for
the actor and the target, whose flags decide what is remembered.

A rule may also feed the social ledger (``EventRule.ledger``): ``mutual`` interactions
between actor and target, or ``hearsay`` (the target hears from the actor about the payload's
``about``), with the payload's ``sentiment``.

A frame may be routed with its perceivers already resolved (``perceivers``: one list per
event, e.g. by a sharded engine's driver, which holds every agent's position) and for some
agents only (``keep``: a shard stores its own agents' part of the frame: their items, their
ledger rows, their moves). Each agent's part is then exactly what routing the whole frame
would give it.

Each perceiver gets one ingest item (``core.writer`` validates, redacts and stores them all
or none): the event's text, the rule's layer, ttl and tags plus the event's, the event's
importance hint (or the rule's; a witness's is scaled by ``witness_discount``), the kind as
``source_event``, the position as ``metadata.spatial``, the other party as
``metadata.social`` on the social layer (with the payload's ``sentiment`` when it is a
number in -1..1), and the payload as attributes plus ``eventRole`` (``actor``, ``target`` or
``witness``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.config.perception import EventRule, PerceptionSettings
from f09_memory.errors import InputInvalidError, MemoryEngineError
from f09_memory.perception.events import EngineEvent, render_text
from f09_memory.perception.placements import Placements
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.records import RecordMetadata

__all__ = ["PhysicsRoute", "RoutedFrame", "parse_events", "physics_events", "route_events"]


@dataclass(frozen=True, slots=True)
class RoutedFrame:
    """A frame of events turned into ingest items.

    Attributes:
        items: One ``ingest_batch`` item per (event, perceiver), in event order.
        event_of: The index of the event each item came from.
        moves: ``(actor ids, positions)`` to place once the items are stored.
        interactions: The social ledger's interactions (``SocialService.apply`` items), in
            event order.
        perceivers: Each event's perceivers as ``(agent_id, role)`` pairs, before ``keep``.
    """

    items: list[dict[str, Any]]
    event_of: list[int]
    moves: tuple[list[str], NDArray[np.float64]]
    interactions: list[Any]
    perceivers: list[list[tuple[str, str]]]


def parse_events(events: object) -> list[EngineEvent]:
    """Validate a frame of events (``EngineEvent`` or mappings); all or nothing.

    Raises:
        InputInvalidError: Not a list, or a malformed event (the message gives its index).
    """
    if isinstance(events, str | bytes | Mapping) or not isinstance(events, Iterable):
        raise InputInvalidError("events must be a list of EngineEvent or mappings",
                                details={"field": "events"})
    out: list[EngineEvent] = []
    for i, event in enumerate(events):
        try:
            out.append(EngineEvent.parse(event))
        except MemoryEngineError as exc:
            raise InputInvalidError(
                f"events[{i}] is malformed: {exc.message}",
                details={"field": "events", "index": i}) from exc
    return out


def _point(event: EngineEvent) -> NDArray[np.float64] | None:
    pos = event.position
    return None if pos is None else np.array([pos.x, pos.y, pos.z], dtype=np.float64)


def _perceivers(event: EngineEvent, rule: EventRule, settings: PerceptionSettings,
                positions: Placements) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if "actor" in rule.perceivers and event.actor is not None:
        found.append((event.actor, "actor"))
    if "target" in rule.perceivers and event.target is not None:
        found.append((event.target, "target"))
    point = _point(event)
    if "nearby" in rule.perceivers and point is not None and settings.max_perceivers:
        parties = {event.actor, event.target}
        radius = rule.radius if rule.radius is not None else settings.radius
        near = positions.within(point, radius, settings.max_perceivers + len(parties))
        witnesses = [agent for agent in near if agent not in parties]
        found.extend((agent, "witness") for agent in witnesses[: settings.max_perceivers])
    return found


def _metadata(event: EngineEvent, rule: EventRule, role: str) -> RecordMetadata:
    """The metadata of ``role``'s records: one model per event and role."""
    data: dict[str, Any] = {"attributes": {**event.payload, "eventRole": role}}
    if event.position is not None:
        data["spatial"] = event.position
    other = event.actor if role != "actor" else event.target
    if rule.layer is MemoryLayer.SOCIAL and other is not None:
        social: dict[str, Any] = {"other_agent_id": other}
        sentiment = event.payload.get("sentiment")
        if type(sentiment) in (int, float) and -1.0 <= sentiment <= 1.0:  # type: ignore[operator]
            social["sentiment"] = float(sentiment)  # type: ignore[arg-type]
        data["social"] = social
    return RecordMetadata.parse(data)


def _items(event: EngineEvent, rule: EventRule,
           perceivers: list[tuple[str, str]]) -> list[dict[str, Any]]:
    text = render_text(event)
    tags = list(dict.fromkeys((*rule.tags, *event.tags)))
    metas: dict[str, tuple[RecordMetadata, float | None]] = {}  # one of each per role
    items = []
    for agent, role in perceivers:
        found = metas.get(role)
        if found is None:
            importance = event.importance if event.importance is not None else rule.importance
            if importance is not None and role == "witness":
                importance *= rule.witness_discount
            found = metas[role] = (_metadata(event, rule, role), importance)
        meta, importance = found
        item: dict[str, Any] = {
            "agent_id": agent, "content": text, "layer": rule.layer, "tags": tags,
            "flagged": event.flagged, "source_event": event.kind, "metadata": meta,
        }
        if importance is not None:
            item["importance"] = importance
        if rule.ttl is not None:
            item["ttl"] = rule.ttl
        items.append(item)
    return items


def _sentiment(event: EngineEvent, i: int) -> float:
    value = event.payload.get("sentiment", 0.0)
    if type(value) not in (int, float) or not -1.0 <= value <= 1.0:  # type: ignore[operator]
        raise InputInvalidError(f"events[{i}].payload.sentiment must be a number in -1..1",
                                details={"field": "payload.sentiment", "index": i})
    return float(value)


def _ledger(event: EngineEvent, rule: EventRule, i: int) -> list[Any]:
    """The ledger interactions of one event (see ``EventRule.ledger``)."""
    actor, target = event.actor, event.target
    if rule.ledger == "off" or actor is None or target is None:
        return []
    sentiment = _sentiment(event, i)
    if rule.ledger == "mutual":
        return [(actor, target, sentiment, None, rule.ledger_kind),
                (target, actor, sentiment, None, rule.ledger_kind)]
    about = event.payload.get("about")
    if not isinstance(about, str) or about in (actor, target) or not about:
        raise InputInvalidError(
            f"events[{i}] is hearsay: its payload.about must name the agent talked about "
            "(neither the actor nor the target)", details={"field": "payload.about", "index": i})
    return [{"agent_id": target, "other_agent_id": about, "sentiment": sentiment,
             "kind": "hearsay", "source": actor}]


PhysicsRoute = Callable[[EngineEvent, EventRule, int, list[tuple[str, str]]],
                       list[dict[str, Any]]]
"""Turns a physics rule's event into the items its perceivers remember (maybe none)."""


def physics_events(event: EngineEvent, rule: EventRule, i: int,
                   perceivers: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The spatial layer's physics events (``spatial.physics``) of one engine event.

    Raises:
        InputInvalidError: The event has no position, or a payload field the physics
            event needs is not a string.
    """
    pos = event.position
    if pos is None:
        raise InputInvalidError(f"events[{i}] is a physics event: it needs a position",
                                details={"field": "position", "index": i})
    fields: dict[str, Any] = {}
    for key, name in (("fromRegion", "from_region"), ("toRegion", "to_region"),
                      ("region", "region"), ("contactClass", "contact_class")):
        value = event.payload.get(key)
        if value is not None and not isinstance(value, str):
            raise InputInvalidError(f"events[{i}].payload.{key} must be a string",
                                    details={"field": f"payload.{key}", "index": i})
        if value is not None:
            fields[name] = value
    out = []
    for agent, role in perceivers:
        other = event.target if role == "actor" else event.actor
        item: dict[str, Any] = {"kind": rule.physics, "agent_id": agent,
                                "position": (pos.x, pos.y, pos.z), **fields,
                                "tags": event.tags}
        if other is not None:
            item["other_id"] = other
        if event.importance is not None:
            item["importance"] = event.importance
        out.append(item)
    return out


def _ledger_agent(item: Any) -> str:
    return str(item["agent_id"] if isinstance(item, dict) else item[0])


def route_events(events: list[EngineEvent], settings: PerceptionSettings,
                 positions: Placements, physics: PhysicsRoute, *,
                 perceivers: Sequence[list[tuple[str, str]]] | None = None,
                 keep: Callable[[str], bool] | None = None) -> RoutedFrame:
    """Route a validated frame (see the module docstring). Changes nothing.

    ``physics`` turns the events of physics rules into items (the spatial layer's adapter).

    Args:
        events: The frame.
        settings: The routing rules.
        positions: The agents' last known positions (unused for an event whose
            perceivers are given).
        physics: The physics adapter.
        perceivers: Each event's perceivers, resolved by the caller (``None``: resolved
            here from ``positions``).
        keep: Only these agents' items, ledger interactions and moves (``None``: all).

    Raises:
        InputInvalidError: An event's kind has no rule and there is no ``default_rule``,
            or ``perceivers`` does not give one list per event.
    """
    if perceivers is not None and len(perceivers) != len(events):
        raise InputInvalidError("perceivers must give one list of (agent_id, role) per event",
                                details={"field": "perceivers"})
    items: list[dict[str, Any]] = []
    event_of: list[int] = []
    interactions: list[Any] = []
    resolved: list[list[tuple[str, str]]] = []
    movers: dict[str, NDArray[np.float64]] = {}
    for i, event in enumerate(events):
        rule = settings.rule(event.kind)
        if rule is None:
            raise InputInvalidError(
                f"events[{i}]'s kind has no routing rule: add it to "
                "MemoryConfig.perception.rules or set perception.default_rule",
                details={"field": "kind", "index": i})
        found = (_perceivers(event, rule, settings, positions) if perceivers is None
                 else [(str(agent), str(role)) for agent, role in perceivers[i]])
        resolved.append(found)
        mine = found if keep is None else [p for p in found if keep(p[0])]
        made = (_items(event, rule, mine) if rule.physics is None
                else physics(event, rule, i, mine))
        items.extend(made)
        event_of.extend([i] * len(made))
        ledger = _ledger(event, rule, i)
        interactions.extend(ledger if keep is None
                            else [x for x in ledger if keep(_ledger_agent(x))])
        point = _point(event)
        if (settings.track_positions and rule.places_actor and event.actor is not None
                and point is not None and (keep is None or keep(event.actor))):
            movers.pop(event.actor, None)  # the last event of an actor wins
            movers[event.actor] = point
    xyz = (np.stack(list(movers.values())) if movers
           else np.zeros((0, 3), dtype=np.float64))
    return RoutedFrame(items, event_of, (list(movers), xyz), interactions, resolved)
