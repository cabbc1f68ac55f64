"""Spatial (index 16): positions, a grid per agent, proximity in retrieval, physics events.

Modules: ``positions`` (AgentPositions: x, y, z, region columns derived from the records'
``metadata.spatial`` and kept in step by the store's per-slot revision, with a uniform grid
hash; RegionTable; distances, proximity_of), ``physics`` (PhysicsEvent, physics_items: the
pure adapter from physics/collision/boundary events to spatial ingest items, ContactTable:
the contact classes each agent touched, a state table), ``service`` (SpatialService behind
``MemoryEngine.nearby`` / ``ingest_physics`` and the ``navigation`` proximity term; Nearby,
check_position, NearbyRecords: the lazy answer).
"""

from f09_memory.spatial.physics import (
    ContactTable,
    PhysicsEvent,
    PhysicsPlan,
    parse_events,
    physics_items,
)
from f09_memory.spatial.positions import AgentPositions, RegionTable, distances, proximity_of
from f09_memory.spatial.service import (
    Nearby,
    NearbyRecords,
    Position,
    SpatialService,
    check_position,
)

__all__ = [
    "AgentPositions",
    "ContactTable",
    "Nearby",
    "NearbyRecords",
    "PhysicsEvent",
    "PhysicsPlan",
    "Position",
    "RegionTable",
    "SpatialService",
    "check_position",
    "distances",
    "parse_events",
    "physics_items",
    "proximity_of",
]
