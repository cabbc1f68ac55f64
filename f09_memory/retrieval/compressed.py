"""Compressed forms of retrieved records under pressure, cached per record version.

A pressure profile that compresses (spec sections 9, 11) hands back each packed record with
its text bounded by the profile's ratio and strategy. :class:`CompressedRecords` keeps those
copies like ``core.records.RecordReader`` keeps built records: per agent and compression
settings, by the record's ``rev`` (moved by every change of the record), at most
:data:`COMPRESSED_MAX` objects before it starts over. Compressed texts are cached by what
they depend on (strategy, ratio, content, tags, tokens), so records with the same text are
compressed once.
"""

from __future__ import annotations

import operator
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from f09_memory.compression.strategies import compress_text, compressed_copy
from f09_memory.config.tables import PressureProfile
from f09_memory.protocols import TokenCounter
from f09_memory.retrieval.digest import record_digest
from f09_memory.retrieval.job import RecordsBuilder
from f09_memory.schema.records import MemoryRecord
from f09_memory.store.agent import AgentMemory

__all__ = ["COMPRESSED_MAX", "CompressedRecords"]

COMPRESSED_MAX = 32_768
"""Most compressed records (and, separately, compressed texts) kept."""
_TOKENS = operator.attrgetter("tokens_estimate")
"""A compressed record's token count (always set: :func:`compressed_copy` sets it)."""


class CompressedRecords:
    """The compressed records of a retriever (see the module docstring).

    Args:
        build: Builds the records of some slots (``RecordReader.build_many``).
        counter: Counts the compressed texts' tokens.
    """

    def __init__(self, build: RecordsBuilder, counter: TokenCounter) -> None:
        self._build = build
        self._counter = counter
        self._records: dict[_Key, dict[int, MemoryRecord]] = {}
        self._count = 0
        self._texts: dict[tuple[str, float, str, tuple[str, ...], int], tuple[str, int]] = {}
        self._digests: dict[_Key, dict[int, bytes]] = {}

    def clear(self) -> None:
        """Drop the compressed records and their digests (the store was restored).

        Compressed texts stay: they depend on text and settings only.
        """
        self._records.clear()
        self._digests.clear()
        self._count = 0

    def of(self, am: AgentMemory, slots: NDArray[np.intp], ratio: float,
           profile: PressureProfile) -> tuple[list[MemoryRecord], int]:
        """The compressed records in ``slots``, in order, and their total tokens."""
        cache, revs, out = _by_rev(self._records, am, slots, ratio, profile)
        if not all(out):  # a record object is always true: only misses are None
            built = self._build(am, slots)
            if self._count >= COMPRESSED_MAX:
                self.clear()
                cache = self._records[_key(am, ratio, profile)] = {}
            texts = self._texts
            strategy = profile.compression_strategy
            for i, rev in enumerate(revs):
                if out[i] is None:
                    record = built[i]
                    tags = record.metadata.tags
                    tokens = record.tokens_estimate or 0
                    text_key = (strategy, ratio, record.content, tags, tokens)
                    text = texts.get(text_key)
                    if text is None:
                        if len(texts) >= COMPRESSED_MAX:
                            texts.clear()
                        text = texts[text_key] = compress_text(
                            record.content, tags, tokens, strategy=strategy, ratio=ratio,
                            counter=self._counter)
                    out[i] = cache[rev] = compressed_copy(
                        record, *text, drop_metadata=profile.drop_metadata)
                    self._count += 1
        records: list[MemoryRecord] = out  # type: ignore[assignment]
        return records, sum(map(_TOKENS, records))

    def digests(self, am: AgentMemory, slots: NDArray[np.intp], ratio: float,
                profile: PressureProfile, records: list[MemoryRecord]) -> bytes:
        """The ``record_digest`` of each compressed record in ``slots``, concatenated.

        ``records`` are what :meth:`of` gave for the same arguments; digests are kept by
        the record's ``rev`` beside the records (and dropped with them).
        """
        memo, revs, found = _by_rev(self._digests, am, slots, ratio, profile)
        if not all(found):  # a digest is 32 non-empty bytes: only misses are None
            for i, digest in enumerate(found):
                if digest is None:
                    found[i] = memo[revs[i]] = record_digest(records[i])
        return b"".join(found)  # type: ignore[arg-type]


_Key = tuple[str, tuple[float, str, bool]]
_V = TypeVar("_V")


def _key(am: AgentMemory, ratio: float, profile: PressureProfile) -> _Key:
    """The cache key of an agent's records compressed with these settings."""
    return am.agent_id, (ratio, profile.compression_strategy, profile.drop_metadata)


def _by_rev(table: dict[_Key, dict[int, _V]], am: AgentMemory, slots: NDArray[np.intp],
            ratio: float, profile: PressureProfile
            ) -> tuple[dict[int, _V], list[int], list[_V | None]]:
    """``table``'s memo for these settings (made if new), the slots' revs, its entries.

    An entry is ``None`` where the memo holds nothing for that rev yet.
    """
    key = _key(am, ratio, profile)
    memo = table.get(key)
    if memo is None:
        memo = table[key] = {}
    revs = am.rev[slots].tolist()
    return memo, revs, list(map(memo.get, revs))
