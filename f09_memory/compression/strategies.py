"""Compression strategies applied to packed records under pressure (spec sections 9, 11).

``first_sentence_tags`` (the throttle path): the first sentence of the content followed by
its tags, then clipped so its token count is at most ``ceil(original * ratio)``.
"""

from __future__ import annotations

import math
import re

import numpy as np
from numpy.typing import NDArray

from f09_memory.protocols import TokenCounter

__all__ = [
    "ELLIPSIS",
    "clip_to_tokens",
    "compressed_budget",
    "compressed_budgets",
    "first_sentence_tags",
]

ELLIPSIS = "…"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def compressed_budget(tokens: int, ratio: float) -> int:
    """Token bound of a compressed record: ``max(1, ceil(tokens * ratio))``.

    The product is rounded to 9 decimals first, so ``100 * 0.55`` is 55, not 56.
    """
    return max(1, math.ceil(round(tokens * ratio, 9)))


def compressed_budgets(tokens: NDArray[np.int64], ratio: float) -> NDArray[np.int64]:
    """Vectorized :func:`compressed_budget` (identical values)."""
    out: NDArray[np.int64] = np.maximum(1, np.ceil(np.round(tokens * ratio, 9))).astype(
        np.int64
    )
    return out


def clip_to_tokens(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """Shorten ``text`` (ending it with an ellipsis) until ``counter`` says it fits.

    Starts at the proportional cut ``len * max_tokens / tokens`` (one step for the default
    estimator) and shrinks by 10% until it fits.
    """
    n = counter.count(text)
    if n <= max_tokens:
        return text
    cut = len(text) * max_tokens // n
    while cut > 1:
        candidate = text[:cut].rstrip() + ELLIPSIS
        if counter.count(candidate) <= max_tokens:
            return candidate
        cut -= max(1, cut // 10)
    return ELLIPSIS


def first_sentence_tags(
    content: str, tags: tuple[str, ...], max_tokens: int, counter: TokenCounter
) -> str:
    """First sentence plus ``[tag, ...]``, clipped to ``max_tokens``."""
    first = _SENTENCE_END.split(content.strip(), maxsplit=1)[0]
    text = f"{first} [{', '.join(tags)}]" if tags else first
    return clip_to_tokens(text, max_tokens, counter)
