"""AgentMemory: one agent's records as columns; no Python object per record.

Every record occupies a *slot*; columns are indexed by slot. Freed slots are reused (LIFO),
so the arrays stay as large as the peak live count, not the ingest history. A record's *key*
is its per-agent sequence number: record ids are ``f"{agent_id}:{key:010d}"``, so within an
agent key order is id order, and every sort ends in the key.

What a record is made of:

- numeric columns (numpy, by slot): ``key``, ``layer``, ``importance``, ``flagged``,
  ``created``, ``anchor``, ``tokens``, ``deadline``, ``status``, ``redacted``, ``tagset``
  (an id in the store's :class:`~f09_memory.store.tags.TagTable`), ``embedded``, ``alive``;
- ``content``: the stored (redacted) text by slot;
- sparse maps by key, only where present: ``source_event`` and ``extras``
  (:class:`RecordExtra`: source refs, spatial/social/procedural metadata, attributes).

``MemoryRecord`` objects are built at the boundary (``core.records``), never kept here.
The class's bases hold parts of it: ``store.order`` (time-ordered views), ``store.vectors``
(vector column, embedded flags, index builds), ``store.dedup`` (the ingest-dedup index) and
``store.columns`` (a batch's values written into the columns); ``store.invariants`` holds
the structural checks of ``_check``.
Episodic keys also live in an :class:`EpisodicRing` (insertion order, O(1) eviction); the
other layers need no order structure: time order is a numpy ``lexsort`` when asked for.

The agent's survey row (:attr:`AgentMemory.stats`, int64): its live records per layer, the
maintained lower bounds of its TTL deadlines and episodic anchors, whether an index is being
built, and how many records it has removed. A :class:`~f09_memory.store.store.MemoryStore`
keeps every agent's row in one matrix (the row is a view into it), so a tick surveys the
whole crowd in a few numpy calls instead of reading each agent's attributes.

Each agent keeps an order-independent digest of its records for the incremental state hash:
a record's digest is computed lazily (first ``state_hash`` after it changed) and summed
modulo 2**128; removing or changing a record subtracts its old digest.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.protocols import VectorIndex
from f09_memory.schema.enums import LAYERS_BY_CODE, MemoryLayer
from f09_memory.store.columns import (
    SCALAR_COLUMNS,
    STAT_BUILDING,
    STAT_DEADLINE,
    STAT_EPISODIC_ANCHOR,
    STAT_REMOVED,
    STAT_WIDTH,
    AgentColumns,
    grown,
)
from f09_memory.store.dedup import AgentDedup
from f09_memory.store.invariants import check_agent
from f09_memory.store.order import AgentOrder
from f09_memory.store.records import (
    EMPTY_EXTRA,
    NO_DEADLINE,
    SCALAR_MAX,
    NewRecords,
    RecordExtra,
    Removed,
    content_fingerprint,
    record_id,
)
from f09_memory.store.removal import AgentRemoval
from f09_memory.store.ring import EpisodicRing
from f09_memory.store.tags import TagTable
from f09_memory.store.vectors import AgentVectors

__all__ = ["STAT_BUILDING", "STAT_DEADLINE", "STAT_EPISODIC_ANCHOR", "STAT_REMOVED",
           "STAT_WIDTH", "AgentMemory"]

_EPISODIC = MemoryLayer.EPISODIC.code
_N_LAYERS = len(LAYERS_BY_CODE)


class AgentMemory(AgentRemoval, AgentOrder, AgentVectors, AgentDedup, AgentColumns):
    """Columnar storage of one agent's live records.

    Runtime complexity: ``add_batch`` O(k) numpy plus amortized O(1) per episodic record;
    ``remove`` O(1); capacity doubles when full.
    """

    _COLUMNS: tuple[tuple[str, Any], ...] = (
        ("key", np.int64), ("layer", np.int8), ("importance", np.float64),
        ("flagged", np.bool_), ("created", np.int64), ("anchor", np.int64),
        ("tokens", np.int32), ("deadline", np.int64), ("alive", np.bool_),
        ("status", np.int8), ("redacted", np.bool_), ("tagset", np.int32),
        ("embedded", np.bool_), ("hashed", np.bool_), ("digest_hi", np.uint64),
        ("digest_lo", np.uint64), ("rev", np.int64),
    )
    COLUMN_NAMES: tuple[str, ...] = tuple(name for name, _ in _COLUMNS)

    def __init__(self, agent_id: str, episodic_max: int, tags: TagTable,
                 initial_capacity: int = 64) -> None:
        self.agent_id = agent_id
        self.tags = tags
        self.capacity = 0
        self.hi = 0
        self.next_key = 0
        self.slot_of: dict[int, int] = {}
        self.free = array("q")
        """Free slots below ``hi`` (raw int64: nothing for the garbage collector to visit)."""
        self.content: NDArray[np.object_] = np.empty(0, dtype=object)
        """Each slot's text (``None`` when free): an object array, not a list, so a full
        garbage collection does not visit every text (numpy arrays are not traversed)."""
        self.source_event: dict[int, str] = {}
        self.extras: dict[int, RecordExtra] = {}
        row = np.zeros(STAT_WIDTH, dtype=np.int64)
        row[STAT_DEADLINE] = row[STAT_EPISODIC_ANCHOR] = NO_DEADLINE
        self.bind_stats(row)
        self.survey_row = -1
        """This agent's row in its store's survey matrix (-1: not in a store)."""
        self.ring = EpisodicRing(episodic_max, self.slot_of.__contains__)
        self.claims: dict[str, int] = {}
        self.inactive_seen = False
        """Whether a record with a status other than active was ever stored here (set when
        one is written, never cleared): without one, a status filter has nothing to do."""
        """Active claim key (``claimKey`` attribute) -> record key."""
        self.dedup: dict[int, int] | None = None
        """Ingest dedup index, :func:`content_fingerprint` -> key (built on first use)."""
        self.digest_sum = 0
        """Sum of the digests of the hashed records, modulo 2**128."""
        self.dirty = True
        """Whether the agent changed since its digest was last computed."""
        self.key = np.zeros(0, dtype=np.int64)
        self.layer = np.zeros(0, dtype=np.int8)
        self.importance = np.zeros(0, dtype=np.float64)
        self.flagged = np.zeros(0, dtype=np.bool_)
        self.created = np.zeros(0, dtype=np.int64)
        self.anchor = np.zeros(0, dtype=np.int64)
        self.tokens = np.zeros(0, dtype=np.int32)
        self.deadline = np.zeros(0, dtype=np.int64)
        self.alive = np.zeros(0, dtype=np.bool_)
        self.status = np.zeros(0, dtype=np.int8)
        self.redacted = np.zeros(0, dtype=np.bool_)
        self.tagset = np.zeros(0, dtype=np.int32)
        self.embedded = np.zeros(0, dtype=np.bool_)
        self.hashed = np.zeros(0, dtype=np.bool_)
        self.digest_hi = np.zeros(0, dtype=np.uint64)
        self.digest_lo = np.zeros(0, dtype=np.uint64)
        self.rev = np.zeros(0, dtype=np.int64)
        """Changes whenever the slot's record does (readers cache built objects by it)."""
        self.fprint: NDArray[np.uint64] | None = None  # with the dedup index (AgentDedup)
        self.next_rev = 0
        self.vectors: NDArray[np.float32] | None = None
        """Unit embedding per slot (allocated on the first vector); valid where ``embedded``."""
        self.index: VectorIndex | None = None
        """Nearest-neighbour index over the embedded keys (large agents only)."""
        self.index_build: VectorIndex | None = None
        """An index being built in tick slices (keys inserted in order up to ``index_cursor``)."""
        self.index_cursor = 0
        self.sims_memo: Any = None
        """Retrieval's similarities to the last query vector (``retrieval.similarity``),
        valid by ``rev``; not state (a loaded agent starts without one)."""
        self._grow(initial_capacity)

    # ------------------------------------------------------------------ survey row
    def bind_stats(self, row: NDArray[np.int64]) -> None:
        """Keep the survey row in ``row`` (a view into the store's matrix), values copied.

        ``layer_counts`` becomes a view of its first columns.
        """
        old: NDArray[np.int64] | None = getattr(self, "stats", None)
        if old is not None and old is not row:
            row[:] = old
        self.stats = row
        """The survey row: live records per layer, bounds, build flag, removals."""
        self.layer_counts = row[:_N_LAYERS]
        """Live records per layer code (a view of :attr:`stats`)."""
        self._counts: Any = row.data  # a memoryview: scalar updates (counts, bounds, ...)

    @property
    def min_deadline(self) -> int:
        """A lower bound of the live records' TTL deadlines (expiry skips the agent before)."""
        value: int = self._counts[STAT_DEADLINE]
        return value

    @min_deadline.setter
    def min_deadline(self, value: int) -> None:
        self._counts[STAT_DEADLINE] = value

    @property
    def min_episodic_anchor(self) -> int:
        """A lower bound of the live episodic records' anchors.

        Summary selection skips the agent while none can be old enough; the selection
        refreshes it.
        """
        value: int = self._counts[STAT_EPISODIC_ANCHOR]
        return value

    @min_episodic_anchor.setter
    def min_episodic_anchor(self, value: int) -> None:
        self._counts[STAT_EPISODIC_ANCHOR] = value

    @property
    def removed_count(self) -> int:
        """Records removed from this agent so far (any reason), in this process.

        A change detector: a reader that remembers it knows whether anything was removed
        since, without scanning. Not saved (a loaded agent starts at 0).
        """
        value: int = self._counts[STAT_REMOVED]
        return value

    def holds_any(self, layer_codes: list[int]) -> bool:
        """Whether a live record of one of ``layer_codes`` is held (O(len(layer_codes)))."""
        counts = self._counts
        return any(counts[code] for code in layer_codes)

    def _set_building(self, building: bool) -> None:
        self._counts[STAT_BUILDING] = int(building)

    # ------------------------------------------------------------------ capacity
    def _grow(self, capacity: int) -> None:
        for name, _ in self._COLUMNS:
            setattr(self, name, grown(getattr(self, name), capacity))
        self._arrays = tuple(getattr(self, name) for name in SCALAR_COLUMNS)
        self._views = None  # built again by the next single store (scalar_views)
        content = np.empty(capacity, dtype=object)
        content[: self.capacity] = self.content
        self.content = content
        if self.vectors is not None:
            self.vectors = grown(self.vectors, capacity)
        if self.fprint is not None:
            self.fprint = grown(self.fprint, capacity)
        self.capacity = capacity

    @classmethod
    def column_dtype(cls, name: str) -> np.dtype[Any]:
        """The dtype of column ``name``."""
        dtype: np.dtype[Any] = np.dtype(dict(cls._COLUMNS)[name])
        return dtype

    def ensure_capacity(self, n: int) -> None:
        """Grow the columns to hold at least ``n`` slots."""
        if n > self.capacity:
            cap = max(64, self.capacity)
            while cap < n:
                cap *= 2
            self._grow(cap)

    # ------------------------------------------------------------------ reading
    @property
    def live(self) -> int:
        """Number of live records."""
        return len(self.slot_of)

    def id_of(self, key: int) -> str:
        """The record id for ``key``."""
        return record_id(self.agent_id, key)

    def reserve_key(self) -> int:
        """Take the next sequence number (ids are never reused)."""
        key = self.next_key
        self.next_key += 1
        return key

    def reserve_keys(self, n: int) -> int:
        """Take the next ``n`` sequence numbers; returns the first."""
        key = self.next_key
        self.next_key += n
        return key

    def tags_of(self, slot: int) -> tuple[str, ...]:
        """The tags of the record in ``slot``."""
        return self.tags.get(int(self.tagset[slot]))

    def extra_of(self, key: int) -> RecordExtra:
        """The sparse metadata of record ``key`` (empty when it has none)."""
        return self.extras.get(key, EMPTY_EXTRA)

    # ------------------------------------------------------------------ writing
    def _take_slots(self, n: int) -> list[int]:
        slots: list[int] = []
        while self.free and len(slots) < n:
            slots.append(self.free.pop())
        rest = n - len(slots)
        if rest:
            self.ensure_capacity(self.hi + rest)
            slots.extend(range(self.hi, self.hi + rest))
            self.hi += rest
        return slots

    def add_batch(self, new: NewRecords, fingerprints: Sequence[int] | None = None
                  ) -> tuple[Sequence[int], dict[int, list[Removed]]]:
        """Store ``new`` (keys already reserved) and return their slots and evictions.

        ``fingerprints``: the records' :func:`content_fingerprint` if the caller has them.

        Episodic records enter the ring in order; each one that finds the ring full first
        evicts the oldest live episodic record (possibly an earlier one of the same batch).
        ``evicted[i]`` lists what record ``i`` evicted (only records that evicted are
        keys), so events keep their order.

        Runtime complexity: O(k) numpy plus amortized O(1) C-level work per record.
        """
        n = len(new.keys)
        if not self.inactive_seen and any(new.status):
            self.inactive_seen = True
        ring = self.ring
        layers = new.layer
        keys = new.keys
        evicted: dict[int, list[Removed]] = {}
        n_episodic = layers.count(_EPISODIC)
        all_episodic = n_episodic == n
        # The j-th episodic record of the batch evicts when live + j >= capacity; old keys go
        # first (before slots are taken, so their slots are reused), then, if the batch
        # alone overflows the ring, its own earliest records (below).
        old_live = ring.live
        overflow = old_live + n_episodic > ring.capacity
        episodic: range | list[int] = range(n) if all_episodic else [
            i for i, code in enumerate(layers) if code == _EPISODIC]
        if overflow:
            first = max(0, ring.capacity - old_live)
            evicting = episodic[first:first + old_live]
            if len(evicting) == 1:
                evicted[evicting[0]] = [self.remove(ring.oldest())]
            elif evicting:
                for i, gone in zip(evicting, self.remove_oldest(len(evicting)), strict=True):
                    evicted[i] = [gone]
        if self.free:
            fresh = -1
            slot_list: Sequence[int] = self._take_slots(n)
        else:  # the slots are hi, hi + 1, ... (none to reuse)
            fresh = self.hi
            if fresh + n > self.capacity:
                self.ensure_capacity(fresh + n)
            self.hi = fresh + n
            slot_list = range(fresh, fresh + n)
        rev = self.next_rev
        self.next_rev = rev + n
        if n == 1:
            self._store_one(slot_list[0], new, rev)
        else:
            self._store_columns(slot_list, new, rev, fresh, all_episodic)
        self.dirty = True
        if n <= SCALAR_MAX:  # a few: item stores beat a list-indexed (or slice) store
            content = self.content
            for slot, text in zip(slot_list, new.content, strict=True):
                content[slot] = text
        elif fresh >= 0:
            self.content[fresh:fresh + n] = new.content
        else:
            self.content[slot_list] = new.content
        self.slot_of.update(zip(keys, slot_list, strict=True))
        if self.dedup is not None:
            self._index_fingerprints(slot_list, keys, map(
                content_fingerprint, layers, new.content) if fingerprints is None
                else fingerprints)
        if new.source_event:
            for i, text in new.source_event.items():
                self.source_event[keys[i]] = text
        if new.extras:
            for i, extra in new.extras.items():
                key = keys[i]
                self.extras[key] = extra
                self._index_claim(key, extra, new.status[i])
        if n:
            lowest = min(new.deadline)
            if lowest < self.min_deadline:
                self.min_deadline = lowest
            if n_episodic:
                lowest = min(new.anchor) if all_episodic else min(
                    new.anchor[i] for i in episodic)
                if lowest < self.min_episodic_anchor:
                    self.min_episodic_anchor = lowest
        if not overflow or ring.live + len(episodic) <= ring.capacity:  # no more evictions
            ring.extend(keys if all_episodic else [keys[i] for i in episodic])
        else:
            for i in episodic:
                if ring.full:
                    evicted.setdefault(i, []).append(self.remove(ring.oldest()))
                ring.append(keys[i])
        return slot_list, evicted

    def add_one(self, key: int, layer: int, importance: float, flagged: bool, now: int,
                tokens: int, deadline: int, tagset: int, redacted: bool,
                content: str) -> tuple[int, Removed | None]:
        """:meth:`add_batch` of one record without sparse parts; returns its slot and eviction.

        Created and anchor are ``now``, the status active; the eviction is the record a
        full ring gave up for it, if any.

        Runtime complexity: O(1) amortized.
        """
        ring = self.ring
        episodic = layer == _EPISODIC
        evicted = self.remove(ring.oldest()) if episodic and ring.live >= ring.capacity else None
        if self.free:
            slot = self.free.pop()
        else:
            slot = self.hi
            self.ensure_capacity(slot + 1)
            self.hi = slot + 1
        key_, layer_, importance_, flagged_, created_, anchor_, deadline_, status_, \
            redacted_, tagset_, alive_, rev_ = self.scalar_views()
        key_[slot] = key
        layer_[slot] = layer
        importance_[slot] = importance
        flagged_[slot] = flagged
        created_[slot] = now
        anchor_[slot] = now
        self.tokens[slot] = tokens
        deadline_[slot] = deadline
        status_[slot] = 0
        redacted_[slot] = redacted
        tagset_[slot] = tagset
        alive_[slot] = True  # embedded and hashed are clear in a free slot
        rev_[slot] = self.next_rev
        self.next_rev += 1
        self._counts[layer] += 1
        self.dirty = True
        self.content[slot] = content
        self.slot_of[key] = slot
        if self.dedup is not None:
            self._index_fingerprints((slot,), (key,), (content_fingerprint(layer, content),))
        if deadline < self.min_deadline:
            self.min_deadline = deadline
        if episodic:
            if now < self.min_episodic_anchor:
                self.min_episodic_anchor = now
            ring.append(key)
        return slot, evicted

    def _index_claim(self, key: int, extra: RecordExtra, status: int) -> None:
        claim = extra.attributes.get("claimKey")
        if isinstance(claim, str):
            if status == 0:
                self.claims[claim] = key
            elif self.claims.get(claim) == key:
                del self.claims[claim]

    def update(
        self,
        key: int,
        *,
        importance: float | None = None,
        anchor: int | None = None,
        content: str | None = None,
        tokens: int | None = None,
        redacted: bool | None = None,
        tagset: int | None = None,
        extra: RecordExtra | None = None,
        status: int | None = None,
    ) -> int:
        """Change fields of the live record ``key`` in place; returns its slot.

        Runtime complexity: O(1).
        """
        slot = self.slot_of[key]
        self._unhash(slot)
        if importance is not None:
            self.importance[slot] = importance
        if anchor is not None:
            self.anchor[slot] = anchor
        if content is not None:
            if self.dedup is not None:
                self._forget_fingerprint(slot, key)
                self._index_fingerprints((slot,), (key,), (
                    content_fingerprint(self.layer.item(slot), content),))
            self.content[slot] = content
        if tokens is not None:
            self.tokens[slot] = tokens
        if redacted is not None:
            self.redacted[slot] = redacted
        if tagset is not None:
            self.tagset[slot] = tagset
        if status is not None:
            self.status[slot] = status
            self.inactive_seen = self.inactive_seen or status != 0
        if extra is not None:
            old = self.extras.pop(key, None)
            if old is not None:
                claim = old.attributes.get("claimKey")
                if isinstance(claim, str) and self.claims.get(claim) == key:
                    del self.claims[claim]
            if not extra.is_empty():
                self.extras[key] = extra
            self._index_claim(key, extra, int(self.status[slot]))
        elif status is not None and key in self.extras:
            self._index_claim(key, self.extras[key], status)
        return slot

    def reinforce(self, slots: Sequence[int], importance: Sequence[float],
                  now: int) -> None:
        """Set the importance of the records in ``slots`` and move each anchor up to ``now``.

        The batch form of ``update(key, importance=..., anchor=max(now, anchor))`` over
        distinct slots (a frame's dedup reinforcements of one agent).
        Runtime complexity: O(n) numpy (scalar stores for a few slots).
        """
        if len(slots) <= SCALAR_MAX:  # a frame's usual few: cheaper than five numpy calls
            column, anchor = self.importance, self.anchor
            for slot, value in zip(slots, importance, strict=True):
                self._unhash(slot)
                column[slot] = value
                if anchor.item(slot) < now:
                    anchor[slot] = now
            return
        index = np.asarray(slots, dtype=np.intp)
        self._unhash_many(index)
        self.importance[index] = importance
        self.anchor[index] = np.maximum(self.anchor[index], now)

    def set_bounds(self, min_deadline: int | None = None,
                   min_episodic_anchor: int | None = None) -> None:
        """Refresh the maintained lower bounds (a tick's expiry or summary selection)."""
        if min_deadline is not None:
            self.min_deadline = min_deadline
        if min_episodic_anchor is not None:
            self.min_episodic_anchor = min_episodic_anchor

    # ------------------------------------------------------------------ checks
    def _check(self) -> None:
        """Assert every structural invariant (tests call this after each mutation)."""
        check_agent(self)
        assert int(self.stats[STAT_BUILDING]) == (self.index_build is not None), "build flag"
