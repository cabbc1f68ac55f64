"""Token estimation: the default heuristic counter (chars per token)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from f09_memory.protocols import TokenCounter

__all__ = ["HeuristicTokenCounter", "estimate_total"]


class HeuristicTokenCounter:
    """``ceil(len(text) / chars_per_token)``, at least 1 for non-empty text.

    A model-agnostic pre-flight estimate (about 4 characters per token for English with
    BPE tokenizers). Inject a real tokenizer through the ``TokenCounter`` protocol when the
    target model is known.
    """

    __slots__ = ("chars_per_token",)

    def __init__(self, chars_per_token: float = 4.0) -> None:
        self.chars_per_token = chars_per_token

    def count(self, text: str) -> int:
        """Return the estimated token count of ``text``."""
        if not text:
            return 0
        return max(1, math.ceil(len(text) / self.chars_per_token))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """:meth:`count` of each text (one numpy expression; the same float arithmetic)."""
        if len(texts) < 8:
            return [self.count(text) for text in texts]
        lengths = np.fromiter(map(len, texts), dtype=np.float64, count=len(texts))
        tokens = np.maximum(np.ceil(lengths / self.chars_per_token), 1.0)
        tokens[lengths == 0] = 0.0
        counts: list[int] = tokens.astype(np.int64).tolist()
        return counts


def estimate_total(counter: TokenCounter, texts: Sequence[str]) -> int:
    """Pre-flight estimate of the tokens of several texts."""
    return sum(counter.count(t) for t in texts)
