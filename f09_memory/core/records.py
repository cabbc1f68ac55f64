"""RecordReader: ``MemoryRecord`` objects built from columns at the boundary.

The store keeps no object per record; ``get``, ``records``, ``recent`` and bundles build
one for each record they return. Built objects are cached per agent by slot, with the
record's ``rev`` (unique within the agent, and changed by every change of the record): an
entry serves only while the rev matches, and a new record in a reused slot replaces the
old one's. So an agent that recalls the same memories every frame does not rebuild them,
and the cache never outgrows the slots in use. An agent's cache keeps what its last two
reads asked for: past ``_AGENT_KEEP`` objects (and twice the read), the others go, so the
objects a frame no longer asks for (records that changed, or left the agent's top) do not
pile up for the garbage collector to visit. It holds at most ``capacity`` objects and is
cleared when full (or when the embedder changes); it never changes what is returned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import overload

import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import InputInvalidError, RecordNotFoundError
from f09_memory.retrieval.digest import DIGEST_SIZE, content_hash, record_digest
from f09_memory.schema.base import trusted, trusted_factory
from f09_memory.schema.enums import LAYERS_BY_CODE, MemoryLayer
from f09_memory.schema.records import MemoryRecord, RecordMetadata
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import NO_DEADLINE, RecordExtra
from f09_memory.store.store import MemoryStore, split_record_id

__all__ = ["IngestedRecords", "RecordReader"]

_EMPTY_META = RecordMetadata()
_METAS_MAX = 4096
"""Most shared metadata objects a reader keeps (one per tag tuple and flag)."""
_AGENT_KEEP = 32
"""Objects an agent's cache may hold before it is trimmed to what was asked for last."""


_new_record = trusted_factory(MemoryRecord)


def _record(agent_id: str, key: int, layer: MemoryLayer, created: int, importance: float,
            anchor: int, ttl: int | None, version: str | None, tokens: int, content: str,
            meta: RecordMetadata, redacted: bool, digest: str) -> MemoryRecord:
    return _new_record({
        "id": f"{agent_id}:{key:010d}",
        "layer": layer,
        "agent_id": agent_id,
        "created_at": created,
        "importance": importance,
        "recency_anchor": anchor,
        "ttl": ttl,
        "embedding_ref": version,
        "tokens_estimate": tokens,
        "content": content,
        "metadata": meta,
        "redacted": redacted,
        "hash": digest,
    })


def _full_metadata(tags: tuple[str, ...], flagged: bool, source: str | None,
                   extra: RecordExtra | None) -> RecordMetadata:
    return trusted(RecordMetadata, {
        "tags": tags,
        "source_event": source,
        "source_ref_ids": extra.source_ref_ids if extra is not None else (),
        "spatial": extra.spatial if extra is not None else None,
        "social": extra.social if extra is not None else None,
        "procedural": extra.procedural if extra is not None else None,
        "flagged": flagged,
        "attributes": dict(extra.attributes) if extra is not None else {},
    })


class RecordReader:
    """Builds records from an engine's columns (with a bounded object cache).

    Args:
        store: The engine's store.
        version: Returns the embedder version in force (a record's ``embedding_ref``).
        capacity: Most cached objects.
    """

    def __init__(self, store: MemoryStore, version: Callable[[], str | None],
                 capacity: int = 65_536) -> None:
        self.store = store
        self._version = version
        self._capacity = capacity
        self._cache: dict[str, tuple[dict[int, int], dict[int, MemoryRecord]]] = {}
        """Per agent: slot -> rev and slot -> record; an entry counts only while the rev
        matches. Two maps, not one of pairs: the revs' map holds no object the garbage
        collector visits, and no pair per record is kept."""
        self._cached = 0
        self._metas: dict[tuple[tuple[str, ...], bool, int],
                          tuple[RecordExtra | None, RecordMetadata]] = {}
        """Metadata of records without a source event, by tags, flag and the identity of
        the extra (``None`` for none), each kept beside its extra so that identity is not
        reused."""
        self._last: dict[str, tuple[bytes, bytes, tuple[MemoryRecord, ...]]] = {}
        """Per agent, the revs and slots of its last ``build_many`` (as bytes) and their records."""
        self._digests: dict[str, tuple[NDArray[np.int64], NDArray[np.uint8]]] = {}
        """Per agent, by slot: the rev a record digest was computed at (-1: none) and the
        digest (:meth:`digests`). Plain arrays: no object per record."""

    def in_time_order(self, am: AgentMemory | None, layer: MemoryLayer | None
                      ) -> list[MemoryRecord]:
        """``am``'s live records (of ``layer``), oldest first (``[]`` for no agent)."""
        return [] if am is None else self.build_many(am, am.slots_in_time_order(layer))

    def newest(self, am: AgentMemory | None, k: int, layer: MemoryLayer | None
               ) -> list[MemoryRecord]:
        """``am``'s ``k`` newest live records (of ``layer``), newest first.

        Raises:
            InputInvalidError: ``k`` is not a non-negative integer.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InputInvalidError("k must be a non-negative integer", details={"field": "k"})
        return [] if am is None else self.build_many(am, am.newest_slots(k, layer))

    def count(self, agent_id: str | None, code: int | None) -> int:
        """Live records of one agent (or all), of layer ``code`` (or all). O(agents)."""
        store = self.store
        ams = store if agent_id is None else [a for a in [store.get(agent_id)] if a]
        if code is None:
            return sum(am.live for am in ams)
        return sum(int(am.layer_counts[code]) for am in ams)

    def layer_counts(self) -> dict[str, dict[str, int]]:
        """Live records of every agent by layer, agents in store (id) order. O(agents)."""
        names = [layer.value for layer in MemoryLayer]
        return {am.agent_id: dict(zip(names, am.layer_counts.tolist(), strict=True))
                for am in self.store}

    def clear(self) -> None:
        """Drop every cached object and digest (the embedder changed, the store was replaced)."""
        self._drop_objects()
        self._digests.clear()
        self._metas.clear()

    def _drop_objects(self) -> None:
        self._cache.clear()
        self._last.clear()
        self._cached = 0

    def _agent_cache(self, agent_id: str) -> tuple[dict[int, int], dict[int, MemoryRecord]]:
        if self._cached >= self._capacity:
            self._drop_objects()  # the digests hold no object: they stay
        cache = self._cache.get(agent_id)
        if cache is None:
            cache = self._cache[agent_id] = ({}, {})
        return cache

    def build(self, am: AgentMemory, slot: int) -> MemoryRecord:
        """The record in ``slot`` of ``am`` as a ``MemoryRecord``. O(1)."""
        cache = self._cache.get(am.agent_id)
        if cache is None or self._cached >= self._capacity:
            cache = self._agent_cache(am.agent_id)
        revs, records = cache
        rev = am.rev.item(slot)
        held = revs.get(slot)
        if held == rev:
            return records[slot]
        record = self._make(am, slot, am.key.item(slot),
                            self._version() if am.embedded.item(slot) else None,
                            records.get(slot))
        self._keep(am.agent_id, cache, slot, rev, record)
        return record

    def _keep(self, agent_id: str, cache: tuple[dict[int, int], dict[int, MemoryRecord]],
              slot: int, rev: int, record: MemoryRecord) -> None:
        """Cache ``record`` for ``slot`` at ``rev`` (replacing what the slot held before).

        A new entry past ``_AGENT_KEEP`` first trims the agent's cache.
        """
        revs, records = cache
        if slot not in revs:
            self._cached += 1
            if len(revs) > _AGENT_KEEP:
                self._trim(agent_id, revs, records, [slot])
        revs[slot] = rev
        records[slot] = record

    def _trim(self, agent_id: str, revs: dict[int, int], records: dict[int, MemoryRecord],
              keep: list[int]) -> None:
        """Drop the entries of one agent's cache but ``keep`` and its last read's slots."""
        last = self._last.get(agent_id)
        slots = keep if last is None else [*keep, *np.frombuffer(last[1], dtype=np.intp).tolist()]
        kept = {slot: revs[slot] for slot in slots if slot in revs}
        objects = {slot: records[slot] for slot in kept}
        self._cached -= len(revs) - len(kept)
        revs.clear()
        revs.update(kept)
        records.clear()
        records.update(objects)

    def _metadata(self, tags: tuple[str, ...], flagged: bool,
                  extra: RecordExtra | None = None) -> RecordMetadata:
        """The metadata of a record without a source event (shared: models are frozen).

        Records with the same tags, flag and extra share one: an extra is shared by records
        whose sparse metadata is equal (``store.records.shared_extra``).
        """
        if extra is None and not tags and not flagged:
            return _EMPTY_META
        key = (tags, flagged, id(extra))
        found = self._metas.get(key)
        if found is None:
            if len(self._metas) >= _METAS_MAX:
                self._metas.clear()
            found = self._metas[key] = (extra, _full_metadata(tags, flagged, None, extra))
        return found[1]

    def _make(self, am: AgentMemory, slot: int, key: int, version: str | None,
              before: MemoryRecord | None = None) -> MemoryRecord:
        """The record in ``slot``; ``before``: the slot's previous object (stale), if any.

        A record changed in place (a new importance or anchor) keeps its content object, so
        ``before``'s content hash is reused; a new record in the slot has its own content.
        """
        tags = am.tags.get(am.tagset.item(slot))
        flagged = am.flagged.item(slot)
        source = am.source_event.get(key)
        extra = am.extras.get(key)
        meta = (self._metadata(tags, flagged, extra) if source is None
                else _full_metadata(tags, flagged, source, extra))
        content = am.content[slot]
        assert content is not None
        created = am.created.item(slot)
        deadline = am.deadline.item(slot)
        digest = (before.hash if before is not None and before.content is content
                  and before.hash is not None else content_hash(content))
        return _record(am.agent_id, key, LAYERS_BY_CODE[am.layer.item(slot)], created,
                       am.importance.item(slot), am.anchor.item(slot),
                       None if deadline == NO_DEADLINE else deadline - created, version,
                       am.tokens.item(slot), content, meta, am.redacted.item(slot), digest)

    def built_new(self, am: AgentMemory, slot: int, key: int, layer: MemoryLayer, now: int,
                  importance: float, ttl: int | None, content: str, tag_id: int,
                  flagged: bool, redacted: bool) -> MemoryRecord:
        """:meth:`build` of a record just stored from these values (the single-ingest path).

        The record has no sparse parts and no vector; created and anchor are ``now``. It is
        built from the values given (equal to the columns: the caller just stored them,
        and nothing ran since) and cached like :meth:`build`'s.
        """
        agent_id = am.agent_id
        cache = self._cache.get(agent_id)
        if cache is None or self._cached >= self._capacity:
            cache = self._agent_cache(agent_id)
        record = _new_record({
            "id": f"{agent_id}:{key:010d}",
            "layer": layer,
            "agent_id": agent_id,
            "created_at": now,
            "importance": importance,
            "recency_anchor": now,
            "ttl": ttl,
            "embedding_ref": None,
            "tokens_estimate": am.tokens.item(slot),
            "content": content,
            "metadata": self._metadata(am.tags.get(tag_id), flagged) if tag_id or flagged
            else _EMPTY_META,
            "redacted": redacted,
            "hash": content_hash(content),
        })
        self._keep(agent_id, cache, slot, am.rev.item(slot), record)
        return record

    def build_many(self, am: AgentMemory, slots: NDArray[np.intp]) -> list[MemoryRecord]:
        """The records in ``slots``, in that order (cached ones are not rebuilt).

        An agent asked for the same slots again while none of their records changed (the
        same ``rev`` in each: a rev moves with every change of a record) gets the same
        objects without a lookup per record: a crowd whose top memories did not change
        recalls them in one gather, whatever else the agent stored meanwhile (in a grid
        world's frame, four reads in five).
        """
        picked = slots.tobytes()
        current = am.rev[slots]
        stamp = current.tobytes()
        last = self._last.get(am.agent_id)
        if last is not None and last[1] == picked and last[0] == stamp:
            return list(last[2])
        held, records = self._agent_cache(am.agent_id)
        slot_list = slots.tolist()
        revs = current.tolist()
        out: list[MemoryRecord | None] = list(map(records.get, slot_list))
        cached_revs = list(map(held.get, slot_list))
        if cached_revs != revs:  # some missing or stale (all current: one compare in C)
            out = [record if have == rev else None
                   for record, have, rev in zip(out, cached_revs, revs, strict=True)]
        if not all(out):  # a record object is always true: only misses are None
            version = self._version()
            make = self._make
            for i in [i for i, record in enumerate(out) if record is None]:
                slot = slot_list[i]
                if slot not in held:
                    self._cached += 1
                record = make(am, slot, am.key.item(slot),
                              version if am.embedded.item(slot) else None, records.get(slot))
                held[slot] = revs[i]
                records[slot] = record
                out[i] = record
            if len(held) > _AGENT_KEEP and len(held) > 2 * len(slot_list):
                self._trim(am.agent_id, held, records, slot_list)
        done = tuple(out)
        self._last[am.agent_id] = (stamp, picked, done)  # type: ignore[assignment]
        return list(done)  # type: ignore[arg-type]

    def digests(self, am: AgentMemory, slots: NDArray[np.intp],
                records: Sequence[MemoryRecord]) -> bytes:
        """The ``record_digest`` of each record in ``slots``, concatenated in order.

        ``records`` are those slots' records as :meth:`build_many` gave them. A digest is
        kept per slot with the ``rev`` it was computed at, so only records that changed
        since are digested again; the rest is one gather (the bundle hashes of
        ``retrieve_many(..., hashes=True)``).
        """
        held = self._digests.get(am.agent_id)
        size = am.rev.shape[0]
        if held is None or held[0].shape[0] < size:
            revs = np.full(size, -1, dtype=np.int64)
            digests = np.zeros((size, DIGEST_SIZE), dtype=np.uint8)
            if held is not None:
                revs[: held[0].shape[0]] = held[0]
                digests[: held[0].shape[0]] = held[1]
            held = self._digests[am.agent_id] = (revs, digests)
        revs, digests = held
        current = am.rev[slots]
        stale = np.flatnonzero(revs[slots] != current)
        if stale.shape[0]:
            for i, slot in zip(stale.tolist(), slots[stale].tolist(), strict=True):
                digests[slot] = np.frombuffer(record_digest(records[i]), dtype=np.uint8)
            revs[slots[stale]] = current[stale]
        return digests[slots].tobytes()

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

    def contents_of(self, agent_id: str, record_ids: object) -> list[str]:
        """The contents of ``record_ids``, in order, all live records of ``agent_id``.

        Raises:
            InputInvalidError: ``record_ids`` is not a list of ids.
            RecordNotFoundError: An id is not a live record of the agent.
        """
        if isinstance(record_ids, str | bytes | Mapping) or not isinstance(record_ids, Iterable):
            raise InputInvalidError("record_ids must be a list of record ids",
                                    details={"field": "record_ids"})
        out = []
        for rid in record_ids:
            rec = self.get(rid)
            if rec.agent_id != agent_id:
                raise RecordNotFoundError("a record id is not a record of the agent",
                                          details={"field": "record_ids"})
            out.append(rec.content)
        return out

    def get(self, record_id: str) -> MemoryRecord:
        """The live record ``record_id``. O(1).

        Raises:
            RecordNotFoundError: No live record has that id.
        """
        found = self.locate(record_id)
        if found is None:
            raise RecordNotFoundError(
                "no live record has that id; it may have expired, been summarized or "
                "forgotten, or never existed (ids look like 'agent:0000000042')",
                details={"field": "record_id"},
            )
        return self.build(*found)


class IngestedRecords(Sequence[MemoryRecord]):
    """What ``ingest_many`` / ``ingest_batch`` return: the new records, built on access.

    ``ids`` are formatted on first use; indexing builds the record from the store. A record
    that has left the store since (evicted, expired, summarized, forgotten) raises
    ``RecordNotFoundError`` on access: read what you need right after ingesting.
    """

    __slots__ = ("_count", "_ids", "_make_ids", "_reader")

    def __init__(self, reader: RecordReader, ids: list[str]) -> None:
        self._reader = reader
        self._ids: list[str] | None = ids
        self._make_ids: Callable[[], list[str]] | None = None
        self._count = len(ids)

    @classmethod
    def deferred(cls, reader: RecordReader, count: int,
                 make_ids: Callable[[], list[str]]) -> IngestedRecords:
        """The records whose ``count`` ids ``make_ids`` formats when first needed.

        ``make_ids`` must depend only on what it captured at ingest (agent ids and keys).
        """
        records = cls(reader, [])
        records._ids = None
        records._make_ids = make_ids
        records._count = count
        return records

    def _all(self) -> list[str]:
        ids = self._ids
        if ids is None:
            assert self._make_ids is not None
            ids = self._ids = self._make_ids()
            self._make_ids = None
        return ids

    @property
    def ids(self) -> list[str]:
        """The new records' ids, in input order."""
        return list(self._all())

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> MemoryRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[MemoryRecord]: ...

    def __getitem__(self, index: int | slice) -> MemoryRecord | list[MemoryRecord]:
        if isinstance(index, slice):
            return [self._reader.get(i) for i in self._all()[index]]
        return self._reader.get(self._all()[index])

    def __iter__(self) -> Iterator[MemoryRecord]:
        get = self._reader.get
        return (get(i) for i in self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IngestedRecords):
            return self._all() == other._all()
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IngestedRecords({self._all()!r})"
