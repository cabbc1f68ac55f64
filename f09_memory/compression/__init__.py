"""Compression (index 11): shortening records under rate pressure.

Modules: ``strategies`` (the TEXT_STRATEGIES registry: first_sentence_tags, ratio_truncate;
compress_record, clip_to_tokens, compressed_budget).
"""

from f09_memory.compression.strategies import (
    ELLIPSIS,
    TEXT_STRATEGIES,
    TextStrategy,
    clip_to_tokens,
    compress_record,
    compressed_budget,
    compressed_budgets,
    first_sentence_tags,
    ratio_truncate,
)

__all__ = [
    "ELLIPSIS",
    "TEXT_STRATEGIES",
    "TextStrategy",
    "compress_record",
    "ratio_truncate",
    "clip_to_tokens",
    "compressed_budget",
    "compressed_budgets",
    "first_sentence_tags",
]
