"""Compression (index 11): shortening records under rate pressure.

Modules: ``strategies`` (first_sentence_tags, clip_to_tokens, compressed_budget).
"""

from f09_memory.compression.strategies import (
    ELLIPSIS,
    clip_to_tokens,
    compressed_budget,
    compressed_budgets,
    first_sentence_tags,
)

__all__ = [
    "ELLIPSIS",
    "clip_to_tokens",
    "compressed_budget",
    "compressed_budgets",
    "first_sentence_tags",
]
