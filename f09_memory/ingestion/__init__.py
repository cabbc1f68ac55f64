"""Ingestion (index 3): validate, redact, estimate tokens, score importance, build records.

Modules: ``pipeline`` (validate_item, validate_mapping, Ingestor, PendingRecord).
"""

from f09_memory.ingestion.pipeline import (
    ITEM_FIELDS,
    Ingestor,
    PendingRecord,
    validate_agent_id,
    validate_item,
    validate_mapping,
)

__all__ = [
    "ITEM_FIELDS",
    "Ingestor",
    "PendingRecord",
    "validate_agent_id",
    "validate_item",
    "validate_mapping",
]
