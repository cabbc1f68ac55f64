"""SpatialSettings: the spatial layer's grid, proximity scale and physics-event flags (index 16).

Read by ``f09_memory.spatial``: the uniform grid of ``engine.nearby`` (``cell_size``), the
proximity term of retrieval purpose ``navigation`` (``proximity_scale``; its weight is
``ScoringTables.proximity``), and which physics/collision/boundary events
``engine.ingest_physics`` turns into spatial records (spec section 13: "F06/F07 Physics +
Collision: spatial events ingested if flagged").
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field, StrictBool, StrictInt

from f09_memory.errors import ErrorCode
from f09_memory.schema.base import BoundaryModel

__all__ = ["SpatialSettings"]

_Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
_Length = Annotated[float, Field(gt=0.0, le=1e12, allow_inf_nan=False)]


class SpatialSettings(BoundaryModel):
    """How the spatial layer indexes positions and which physics events it stores.

    Attributes:
        cell_size: Edge of a cell of the per-agent uniform grid (world units). Choose about
            the usual ``nearby`` radius: a query reads the cells its box covers.
        grid_min_records: Agents with at least this many positioned records get the grid;
            smaller ones are scanned (one vectorized pass beats the cell lookups there).
        proximity_scale: Distance at which the navigation proximity term is 0.5
            (``proximity = 1 / (1 + (d / scale)**2)``).
        ingest_boundary_crossings: Store a record for a movement whose region changes and
            for every ``boundary`` event.
        ingest_first_contact: Store a record the first time an agent touches a contact
            class (remembered per agent and class, across save/load).
        ingest_every_collision: Store a record for every collision, not only the first of
            its class.
        ingest_movement: Store a record for a movement that crosses no boundary (off by
            default: movement is the most frequent physics event).
        boundary_importance: Importance of a boundary-crossing record.
        first_contact_importance: Importance of a first-contact record.
        collision_importance: Importance of a repeated-collision record.
        movement_importance: Importance of a plain movement record.
    """

    _default_code: ClassVar[ErrorCode] = ErrorCode.MEMORY_CONFIG_INVALID

    cell_size: _Length = 8.0
    grid_min_records: Annotated[StrictInt, Field(ge=0, le=10_000_000)] = 1024
    proximity_scale: _Length = 10.0
    ingest_boundary_crossings: StrictBool = True
    ingest_first_contact: StrictBool = True
    ingest_every_collision: StrictBool = False
    ingest_movement: StrictBool = False
    boundary_importance: _Unit = 0.4
    first_contact_importance: _Unit = 0.6
    collision_importance: _Unit = 0.3
    movement_importance: _Unit = 0.1
