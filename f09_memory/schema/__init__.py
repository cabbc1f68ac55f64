"""Schema (index 1): the spec's interfaces as pydantic models.

Modules: ``enums`` (layers, purposes, strategies, pressure states, task status), ``records``
(MemoryRecord and metadata), ``retrieval`` (request, bundle, diagnostics), ``tasks``
(SummarizationTask), ``base`` (the boundary model: camelCase aliases, taxonomy errors).
"""

from f09_memory.schema.base import BoundaryModel
from f09_memory.schema.enums import MemoryLayer, PressureState, Purpose, Strategy, TaskStatus
from f09_memory.schema.records import (
    AttributeValue,
    MemoryRecord,
    ProceduralMeta,
    RecordMetadata,
    SocialMeta,
    SpatialMeta,
)
from f09_memory.schema.retrieval import (
    RetrievalDiagnostics,
    RetrievalRequest,
    RetrievedBundle,
    ScoreComponent,
)
from f09_memory.schema.tasks import SummarizationTask

__all__ = [
    "AttributeValue",
    "BoundaryModel",
    "MemoryLayer",
    "MemoryRecord",
    "PressureState",
    "ProceduralMeta",
    "Purpose",
    "RecordMetadata",
    "RetrievalDiagnostics",
    "RetrievalRequest",
    "RetrievedBundle",
    "ScoreComponent",
    "SocialMeta",
    "SpatialMeta",
    "Strategy",
    "SummarizationTask",
    "TaskStatus",
]
