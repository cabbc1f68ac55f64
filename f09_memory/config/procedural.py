"""ProceduralSettings: the procedural pattern miner's settings (index 14, ``procedural/``)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field, StrictBool, StrictInt

from f09_memory._validate import MAX_LOGICAL_TIME
from f09_memory.errors import ErrorCode
from f09_memory.schema.base import BoundaryModel

__all__ = ["ProceduralSettings"]


class ProceduralSettings(BoundaryModel):
    """How the miner turns an agent's action records into procedures (``f09_memory.procedural``).

    Action records (episodic records whose ``metadata.attributes`` hold ``action``) are read
    in record-key order; consecutive actions of the same ``context`` no more than
    ``window_ms`` apart form a chain, and every contiguous n-gram of 2..``max_n`` actions of
    a chain is counted. A pattern seen ``min_support`` times gets a procedural record whose
    importance is ``support_weight(support) * (success_floor + (1 - success_floor) *
    success_rate)`` with ``support_weight(s) = importance_base + (1 - importance_base) *
    (1 - 2 ** (-(s - min_support) / support_half))`` (6 decimals): frequent patterns that
    work score highest, in every retrieval purpose.
    """

    _default_code: ClassVar[ErrorCode] = ErrorCode.MEMORY_CONFIG_INVALID

    enabled: StrictBool = True
    """Whether ticks mine action records (``False``: no mining, no tick cost)."""
    max_n: Annotated[StrictInt, Field(ge=2, le=8)] = 3
    """The longest pattern mined (n-grams of 2..max_n actions)."""
    min_support: Annotated[StrictInt, Field(ge=1, le=1_000_000)] = 3
    """Occurrences before a pattern gets its procedural record (and the default floor of
    ``engine.procedures``)."""
    window_ms: Annotated[StrictInt, Field(ge=0, lt=MAX_LOGICAL_TIME)] = 60_000
    """Two consecutive actions further apart than this (logical time of their records'
    creation) do not chain."""
    importance_base: Annotated[float, Field(ge=0.0, le=1.0)] = 0.3
    """Support weight of a pattern at ``min_support``."""
    support_half: Annotated[float, Field(gt=0.0, le=1e9)] = 10.0
    """Occurrences beyond ``min_support`` that halve the distance of the support weight to 1;
    also the confidence scale of ``engine.procedures``' ranking."""
    success_floor: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5
    """Share of the importance a pattern keeps at a success rate of 0."""
    update_step: Annotated[float, Field(gt=0.0, le=1.0)] = 0.1
    """A pattern's record is reinforced when its importance or success rate would move by
    at least this (smaller moves are counted, not written: no record update per
    occurrence)."""
