"""MemoryRecord and its metadata sub-models (spec section 6)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr

from f09_memory.schema.base import BoundaryModel
from f09_memory.schema.enums import MemoryLayer

__all__ = [
    "AttributeValue",
    "MemoryRecord",
    "ProceduralMeta",
    "RecordMetadata",
    "SocialMeta",
    "SpatialMeta",
]

Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
AttributeValue = StrictStr | StrictBool | StrictInt | StrictFloat
"""A ``metadata.attributes`` value: a string, bool, int or float."""


class SpatialMeta(BoundaryModel):
    """Where a spatial memory happened: world coordinates and, optionally, a region id.

    ``region`` is the host's name of the area (``"forest"``, ``"cell:12,40"``), checked at
    ingest like a procedural ``pattern_id`` (``max_attribute_chars``, valid text) and
    redacted like the other host-given ids when redaction mode is ON; omitted from JSON
    when ``None``, so records and snapshots written before it existed keep their form and
    digest.
    """

    x: FiniteFloat
    y: FiniteFloat
    z: FiniteFloat = 0.0
    region: Annotated[str, Field(min_length=1)] | None = None


class SocialMeta(BoundaryModel):
    """The other party of a social memory and how the agent felt about it (-1..1)."""

    other_agent_id: str | None = None
    sentiment: Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False)] | None = None


class ProceduralMeta(BoundaryModel):
    """A learned action pattern and how often it worked (0..1)."""

    pattern_id: str | None = None
    success_rate: Unit | None = None


class RecordMetadata(BoundaryModel):
    """Metadata of a record: the spec's fields plus ``flagged`` and host ``attributes``.

    ``flagged`` marks a record for the importance boost at retrieval; ``attributes`` holds
    host-defined scalar values (string values are redacted like the content).
    """

    tags: tuple[str, ...] = ()
    source_event: str | None = None
    source_ref_ids: tuple[str, ...] = ()
    spatial: SpatialMeta | None = None
    social: SocialMeta | None = None
    procedural: ProceduralMeta | None = None
    flagged: bool = False
    attributes: dict[str, AttributeValue] = Field(default_factory=dict)


class MemoryRecord(BoundaryModel):
    """One memory of one agent. Immutable: the engine returns the stored object itself.

    ``created_at``, ``recency_anchor`` and ``ttl`` are logical time (the host's ms or ticks);
    ``ttl`` counts from ``created_at``. ``hash`` is the sha256 of the stored (redacted) content.
    """

    id: str
    layer: MemoryLayer
    agent_id: str
    created_at: int
    importance: Unit
    recency_anchor: int
    ttl: int | None = None
    embedding_ref: str | None = None
    tokens_estimate: int | None = None
    content: str
    metadata: RecordMetadata = Field(default_factory=RecordMetadata)
    redacted: bool = False
    hash: str | None = None
