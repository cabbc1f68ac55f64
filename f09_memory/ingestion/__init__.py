"""Ingestion (index 3): validate, redact, estimate tokens, score importance, build records.

Modules: ``validation`` (validate_item, validate_mapping, PendingRecord),
``frame_checks`` (an ``ingest_batch`` frame's plain items checked column by column:
plain_frame, PendingColumns), ``pipeline`` (Ingestor: validated items to column values),
``claims`` (Claim, ClaimOutcome, TRUST: supersession of structured claims),
``typed_extraction`` (seed 002: the extraction prompt) and ``typed_parsing`` (the
typed-memory parser).
"""

from f09_memory.ingestion.claims import TRUST, Claim, ClaimOutcome, normalize_value
from f09_memory.ingestion.pipeline import Ingestor
from f09_memory.ingestion.typed_extraction import (
    TypedExtractionPrompt,
    TypedExtractionResult,
    TypedMemory,
    TypedMemoryType,
    build_typed_extraction_prompt,
    parse_typed_memories,
    typed_memory_tags,
)
from f09_memory.ingestion.validation import (
    ITEM_FIELDS,
    PendingRecord,
    validate_agent_id,
    validate_item,
    validate_mapping,
)

__all__ = [
    "ITEM_FIELDS",
    "TRUST",
    "Claim",
    "ClaimOutcome",
    "Ingestor",
    "PendingRecord",
    "TypedExtractionPrompt",
    "TypedExtractionResult",
    "TypedMemory",
    "TypedMemoryType",
    "build_typed_extraction_prompt",
    "normalize_value",
    "parse_typed_memories",
    "typed_memory_tags",
    "validate_agent_id",
    "validate_item",
    "validate_mapping",
]
