"""Compression strategies applied to packed records under pressure (spec sections 9, 11).

``first_sentence_tags`` (the throttle path): the first sentence of the content followed by
its tags, then clipped so its token count is at most ``ceil(original * ratio)``.
"""

from __future__ import annotations

import math
import re

from f09_memory.protocols import TokenCounter

__all__ = ["ELLIPSIS", "clip_to_tokens", "compressed_budget", "first_sentence_tags"]

ELLIPSIS = "…"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def compressed_budget(tokens: int, ratio: float) -> int:
    """Token bound of a compressed record: ``max(1, ceil(tokens * ratio))``."""
    return max(1, math.ceil(tokens * ratio))


def clip_to_tokens(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """Shorten ``text`` (ending it with an ellipsis) until ``counter`` says it fits."""
    if counter.count(text) <= max_tokens:
        return text
    cut = len(text)
    while cut > 1:
        cut = max(1, int(cut * 0.85))
        candidate = text[:cut].rstrip() + ELLIPSIS
        if counter.count(candidate) <= max_tokens:
            return candidate
    return ELLIPSIS


def first_sentence_tags(
    content: str, tags: tuple[str, ...], max_tokens: int, counter: TokenCounter
) -> str:
    """First sentence plus ``[tag, ...]``, clipped to ``max_tokens``."""
    first = _SENTENCE_END.split(content.strip(), maxsplit=1)[0]
    text = f"{first} [{', '.join(tags)}]" if tags else first
    return clip_to_tokens(text, max_tokens, counter)
