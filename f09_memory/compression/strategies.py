"""Compression strategies applied to packed records under pressure (spec sections 9, 11).

Text strategies (the registry :data:`TEXT_STRATEGIES`, chosen per pressure state by
``PressureProfile.compression_strategy``), each bounded to ``ceil(tokens * ratio)`` tokens:

- ``first_sentence_tags`` (the throttle path of spec section 9): the first sentence of the
  content followed by its tags;
- ``ratio_truncate``: the content cut to the bound.

``PressureProfile.drop_metadata`` additionally returns records with empty metadata except
``flagged`` and ``source_ref_ids`` (for hosts that serialize metadata into prompts).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

import numpy as np
from numpy.typing import NDArray

from f09_memory.protocols import TokenCounter
from f09_memory.schema.base import trusted
from f09_memory.schema.records import MemoryRecord, RecordMetadata

__all__ = [
    "ELLIPSIS",
    "TEXT_STRATEGIES",
    "TextStrategy",
    "compress_record",
    "compress_text",
    "compressed_copy",
    "ratio_truncate",
    "clip_to_tokens",
    "compressed_budget",
    "compressed_budgets",
    "first_sentence_tags",
]

ELLIPSIS = "…"
"""The mark appended to text a strategy cut short."""
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


def ratio_truncate(
    content: str, tags: tuple[str, ...], max_tokens: int, counter: TokenCounter
) -> str:
    """The content itself, clipped to ``max_tokens`` (tags are not added)."""
    return clip_to_tokens(content.strip(), max_tokens, counter)


TextStrategy = Callable[[str, tuple[str, ...], int, TokenCounter], str]
"""A compression strategy: ``(content, tags, token budget, counter) -> compressed text``."""
TEXT_STRATEGIES: Mapping[str, TextStrategy] = {
    "first_sentence_tags": first_sentence_tags,
    "ratio_truncate": ratio_truncate,
}
"""The compression registry: strategy name -> text function (content, tags, bound, counter)."""


def compress_text(
    content: str, tags: tuple[str, ...], tokens: int, *, strategy: str, ratio: float,
    counter: TokenCounter,
) -> tuple[str, int]:
    """The compressed text of a record's ``content`` and its token count.

    The text is bounded to :func:`compressed_budget` of ``tokens``; a pure function of its
    arguments (for a pure ``counter``), so callers may cache it.

    Raises:
        KeyError: ``strategy`` is not in :data:`TEXT_STRATEGIES`.
    """
    text = TEXT_STRATEGIES[strategy](content, tags, compressed_budget(tokens, ratio), counter)
    return text, counter.count(text)


def compressed_copy(
    record: MemoryRecord, text: str, tokens: int, *, drop_metadata: bool = False
) -> MemoryRecord:
    """A copy of ``record`` carrying ``text`` (of ``tokens`` tokens) as its content."""
    values = dict(record.__dict__)
    values["content"] = text
    values["tokens_estimate"] = tokens
    if drop_metadata:
        meta = record.metadata
        values["metadata"] = _kept_metadata(meta.flagged, meta.source_ref_ids)
    return trusted(MemoryRecord, values)


_KEPT_PLAIN = {
    flagged: trusted(RecordMetadata, {
        "tags": (), "source_event": None, "source_ref_ids": (), "spatial": None,
        "social": None, "procedural": None, "flagged": flagged, "attributes": {}})
    for flagged in (False, True)
}
"""The metadata ``drop_metadata`` leaves on a record without source refs (shared: frozen)."""


def _kept_metadata(flagged: bool, source_ref_ids: tuple[str, ...]) -> RecordMetadata:
    """Metadata with only ``flagged`` and ``source_ref_ids`` (what ``drop_metadata`` keeps)."""
    if not source_ref_ids:
        return _KEPT_PLAIN[flagged]
    return trusted(RecordMetadata, {
        "tags": (), "source_event": None, "source_ref_ids": source_ref_ids, "spatial": None,
        "social": None, "procedural": None, "flagged": flagged, "attributes": {}})


def compress_record(
    record: MemoryRecord,
    *,
    strategy: str,
    ratio: float,
    counter: TokenCounter,
    drop_metadata: bool = False,
) -> MemoryRecord:
    """A compressed copy of ``record`` (same id; the stored record is untouched).

    Raises:
        KeyError: ``strategy`` is not in :data:`TEXT_STRATEGIES` (config validation
            prevents this for engine calls).
    """
    text, tokens = compress_text(record.content, record.metadata.tags,
                                 record.tokens_estimate or 0, strategy=strategy, ratio=ratio,
                                 counter=counter)
    return compressed_copy(record, text, tokens, drop_metadata=drop_metadata)
