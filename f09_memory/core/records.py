"""RecordReader: ``MemoryRecord`` objects built from columns at the boundary.

The store keeps no object per record; ``get``, ``records``, ``recent`` and bundles build
one for each record they return. Built objects are cached by ``(agent, key, rev)`` in a
small bounded cache (a record's ``rev`` changes with every change of the record), so an
agent that recalls the same memories every frame does not rebuild them. The cache holds at
most ``capacity`` objects and is cleared when full; it never changes what is returned.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from typing import overload

import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import RecordNotFoundError
from f09_memory.schema.base import trusted
from f09_memory.schema.enums import LAYERS_BY_CODE
from f09_memory.schema.records import MemoryRecord, RecordMetadata
from f09_memory.store.agent import NO_DEADLINE, AgentMemory
from f09_memory.store.store import MemoryStore, split_record_id

__all__ = ["IngestedRecords", "RecordReader"]

_EMPTY_META = RecordMetadata()
_CacheKey = tuple[str, int, int, str | None]


class RecordReader:
    """Builds records from an engine's columns (with a bounded object cache).

    Args:
        store: The engine's store.
        version: Returns the embedder version in force (a record's ``embedding_ref``).
        capacity: Most cached objects.
    """

    def __init__(self, store: MemoryStore, version: Callable[[], str | None],
                 capacity: int = 8192) -> None:
        self.store = store
        self._version = version
        self._capacity = capacity
        self._cache: dict[_CacheKey, MemoryRecord] = {}

    def clear(self) -> None:
        """Drop every cached object (after the store was replaced)."""
        self._cache.clear()

    def build(self, am: AgentMemory, slot: int) -> MemoryRecord:
        """The record in ``slot`` of ``am`` as a ``MemoryRecord``. O(1)."""
        key = int(am.key[slot])
        embedded = bool(am.embedded[slot])
        version = self._version() if embedded else None
        ck = (am.agent_id, key, int(am.rev[slot]), version)
        hit = self._cache.get(ck)
        if hit is not None:
            return hit
        record = self._make(am, slot, key, version)
        cache = self._cache
        if len(cache) >= self._capacity:
            cache.clear()
        cache[ck] = record
        return record

    @staticmethod
    def _make(am: AgentMemory, slot: int, key: int, version: str | None) -> MemoryRecord:
        tags = am.tags.get(int(am.tagset[slot]))
        flagged = bool(am.flagged[slot])
        source = am.source_event.get(key)
        extra = am.extras.get(key)
        if extra is None and not tags and not flagged and source is None:
            meta = _EMPTY_META
        else:
            meta = trusted(RecordMetadata, {
                "tags": tags,
                "source_event": source,
                "source_ref_ids": extra.source_ref_ids if extra is not None else (),
                "spatial": extra.spatial if extra is not None else None,
                "social": extra.social if extra is not None else None,
                "procedural": extra.procedural if extra is not None else None,
                "flagged": flagged,
                "attributes": dict(extra.attributes) if extra is not None else {},
            })
        content = am.content[slot]
        assert content is not None
        created = int(am.created[slot])
        deadline = int(am.deadline[slot])
        return trusted(MemoryRecord, {
            "id": am.id_of(key),
            "layer": LAYERS_BY_CODE[int(am.layer[slot])],
            "agent_id": am.agent_id,
            "created_at": created,
            "importance": float(am.importance[slot]),
            "recency_anchor": int(am.anchor[slot]),
            "ttl": None if deadline == NO_DEADLINE else deadline - created,
            "embedding_ref": version,
            "tokens_estimate": int(am.tokens[slot]),
            "content": content,
            "metadata": meta,
            "redacted": bool(am.redacted[slot]),
            "hash": hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest(),
        })

    def build_many(self, am: AgentMemory, slots: NDArray[np.intp]) -> list[MemoryRecord]:
        """The records in ``slots``, in that order."""
        build = self.build
        return [build(am, s) for s in slots.tolist()]

    def locate(self, record_id: object) -> tuple[AgentMemory, int] | None:
        """``(agent memory, slot)`` of the live record ``record_id``, or ``None``."""
        parts = split_record_id(record_id)
        if parts is None:
            return None
        am = self.store.get(parts[0])
        if am is None:
            return None
        slot = am.slot_of.get(parts[1])
        return None if slot is None else (am, slot)

    def get(self, record_id: str) -> MemoryRecord:
        """The live record ``record_id``. O(1).

        Raises:
            RecordNotFoundError: No live record has that id.
        """
        found = self.locate(record_id)
        if found is None:
            raise RecordNotFoundError(
                f"no live record {str(record_id)[:80]!r}; it may have expired, been summarized "
                "or forgotten, or never existed (ids look like 'agent:0000000042')",
                details={"id": str(record_id)[:200]},
            )
        return self.build(*found)


class IngestedRecords(Sequence[MemoryRecord]):
    """What ``ingest_many`` / ``ingest_batch`` return: the new records, built on access.

    ``ids`` costs nothing; indexing builds the record from the store. A record that has
    left the store since (evicted, expired, summarized, forgotten) raises
    ``RecordNotFoundError`` on access: read what you need right after ingesting.
    """

    __slots__ = ("_ids", "_reader")

    def __init__(self, reader: RecordReader, ids: list[str]) -> None:
        self._reader = reader
        self._ids = ids

    @property
    def ids(self) -> list[str]:
        """The new records' ids, in input order."""
        return list(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, index: int) -> MemoryRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[MemoryRecord]: ...

    def __getitem__(self, index: int | slice) -> MemoryRecord | list[MemoryRecord]:
        if isinstance(index, slice):
            return [self._reader.get(i) for i in self._ids[index]]
        return self._reader.get(self._ids[index])

    def __iter__(self) -> Iterator[MemoryRecord]:
        get = self._reader.get
        return (get(i) for i in self._ids)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IngestedRecords):
            return self._ids == other._ids
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IngestedRecords({self._ids!r})"
