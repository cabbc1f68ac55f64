"""The outgoing redaction memo: same texts as the redactor, each distinct text redacted once."""

from __future__ import annotations

from f09_memory import MemoryConfig
from f09_memory.introspection.views import RedactionMemo
from f09_memory.redaction.redactor import Redactor

TEXTS = ["mail mara@forge.example.com at dawn", "the well is dry", "card 4539 1488 0343 6467",
         "", "the well is dry"]


class Counting:
    """Wraps a batch redactor and keeps the batches it was given."""

    def __init__(self) -> None:
        self.inner = Redactor.from_config(MemoryConfig(redaction_key="k" * 16),
                                          enabled=True).redact_lines
        self.batches: list[list[str]] = []

    def __call__(self, texts: list[str]) -> list[str]:
        self.batches.append(list(texts))
        return self.inner(texts)


def test_the_memo_gives_the_redactors_texts_and_redacts_each_distinct_text_once() -> None:
    redact = Counting()
    memo = RedactionMemo(redact)
    expected = redact.inner(list(TEXTS))
    assert "mara@" not in "".join(expected) and "0343" not in "".join(expected)
    assert memo(list(TEXTS)) == expected
    assert redact.batches == [["mail mara@forge.example.com at dawn", "the well is dry",
                               "card 4539 1488 0343 6467", ""]]
    assert memo(list(reversed(TEXTS))) == list(reversed(expected))
    assert memo(["new text, mara@forge.example.com", "the well is dry"])[1] == expected[1]
    assert redact.batches[1:] == [["new text, mara@forge.example.com"]]


def test_the_memo_starts_over_past_its_bound_and_stays_exact() -> None:
    redact = Counting()
    memo = RedactionMemo(redact, max_chars=40)
    first = memo(["mail mara@forge.example.com at dawn"])  # 35 characters: kept
    assert memo(["mail mara@forge.example.com at dawn"]) == first
    assert len(redact.batches) == 1
    assert memo(["the well is dry"]) == ["the well is dry"]  # 35 + 15 > 40: starts over
    assert memo(["mail mara@forge.example.com at dawn"]) == first
    assert len(redact.batches) == 3
    huge = "x" * 100  # larger than the bound: redacted, never kept
    assert memo([huge, huge]) == [huge, huge]
    assert memo([huge]) == [huge] and redact.batches[-2:] == [[huge], [huge]]
