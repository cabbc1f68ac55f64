"""SummarizationTask (spec section 6)."""

from __future__ import annotations

from pydantic import ConfigDict

from f09_memory.schema.base import BoundaryModel
from f09_memory.schema.enums import MemoryLayer, TaskStatus

__all__ = ["SummarizationTask"]


class SummarizationTask(BoundaryModel):
    """A batch of an agent's records to be replaced by one summary record.

    ``prompt`` is built from redacted content only and is what the host sends to its LLM.
    """

    model_config = ConfigDict(frozen=False)

    id: str
    agent_id: str
    target_layer: MemoryLayer
    source_ids: list[str]
    created_at: int
    status: TaskStatus = TaskStatus.QUEUED
    summary_record_id: str | None = None
    failure_reason: str | None = None
    prompt: str | None = None
