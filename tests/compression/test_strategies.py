from __future__ import annotations

import numpy as np
import pytest

from f09_memory.compression import (
    ELLIPSIS,
    clip_to_tokens,
    compressed_budget,
    compressed_budgets,
    first_sentence_tags,
)
from f09_memory.packing import HeuristicTokenCounter

COUNTER = HeuristicTokenCounter(4.0)


def test_first_sentence_plus_tags() -> None:
    text = first_sentence_tags("The mill burned. Nobody was hurt. The miller wept.",
                               ("fire", "mill"), 100, COUNTER)
    assert "The mill burned. [fire, mill]" == text


def test_single_sentence_without_tags_is_kept() -> None:
    assert "Quiet day" == first_sentence_tags("  Quiet day  ", (), 100, COUNTER)


@pytest.mark.parametrize("bound", [1, 2, 3, 5, 8])
def test_result_never_exceeds_the_token_bound(bound: int) -> None:
    text = first_sentence_tags("A very long first sentence about the harvest festival in the "
                               "valley and everything that happened there.", ("harvest",),
                               bound, COUNTER)
    assert COUNTER.count(text) <= bound
    assert text.endswith(ELLIPSIS)


def test_clip_with_a_word_counter_shrinks_until_it_fits() -> None:
    class Words:
        def count(self, text: str) -> int:
            return len(text.split())

    clipped = clip_to_tokens("one two three four five six seven eight", 3, Words())
    assert len(clipped.split()) <= 3 and clipped.startswith("one")


def test_vectorized_budgets_equal_the_scalar_ones() -> None:
    tokens = np.arange(0, 500, dtype=np.int64)
    for ratio in (0.55, 0.1, 0.333, 1.0):
        assert [compressed_budget(int(t), ratio) for t in tokens] == compressed_budgets(
            tokens, ratio).tolist()


def test_compressed_budget() -> None:
    assert (1, 1, 6, 55) == (compressed_budget(0, 0.55), compressed_budget(1, 0.55),
                             compressed_budget(10, 0.55), compressed_budget(100, 0.55))
