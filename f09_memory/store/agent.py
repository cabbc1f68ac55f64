"""AgentMemory: one agent's records in columnar numpy arrays.

Every record occupies a *slot*; columns are indexed by slot. Freed slots are reused
(LIFO), so the arrays stay as large as the peak live count, not the ingest history. A
record's *key* is its per-agent sequence number: record ids are ``f"{agent_id}:{key:010d}"``
so, within an agent, ``key`` order is exactly id order, and every sort ends in ``key``.

Per-layer structure: episodic keys live in an :class:`EpisodicRing`; every other layer in
a ``SortedList`` of ``(recency_anchor, key)`` (deterministic, time-ordered iteration).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sortedcontainers import SortedList

from f09_memory.protocols import VectorIndex
from f09_memory.schema.enums import LAYERS_BY_CODE, MemoryLayer
from f09_memory.schema.records import MemoryRecord
from f09_memory.store.ring import EpisodicRing

__all__ = ["CLAIM_STATUSES", "NO_DEADLINE", "AgentMemory", "record_id"]

NO_DEADLINE = np.iinfo(np.int64).max
CLAIM_STATUSES: tuple[str, ...] = ("active", "superseded", "quarantined")
"""Record status codes (the ``status`` column): a record without a claim is active; a claim
is superseded by a newer trusted one, or quarantined when a less trusted write conflicts."""
_STATUS_CODE = {name: i for i, name in enumerate(CLAIM_STATUSES)}
_EPISODIC = MemoryLayer.EPISODIC.code
_N_LAYERS = len(LAYERS_BY_CODE)


def record_id(agent_id: str, key: int) -> str:
    """The id of the record with per-agent sequence number ``key``."""
    return f"{agent_id}:{key:010d}"


class AgentMemory:
    """Columnar storage of one agent's live records.

    Columns (length ``capacity``; valid where ``alive``): ``key`` int64, ``layer`` int8,
    ``importance`` float64, ``flagged`` bool, ``created`` int64, ``anchor`` int64,
    ``tokens`` int32, ``deadline`` int64 (``NO_DEADLINE`` when no TTL), ``decayed`` float64
    (importance x exp(-dt/halfLife) as of the last decay pass), ``alive`` bool.

    Runtime complexity: ``add`` amortized O(1) for episodic, O(log n) for other layers;
    ``remove`` O(1) / O(log n); capacity doubles when full.
    """

    def __init__(self, agent_id: str, episodic_max: int, initial_capacity: int = 64) -> None:
        self.agent_id = agent_id
        self.capacity = 0
        self.hi = 0
        self.next_key = 0
        self.slot_of: dict[int, int] = {}
        self.records: list[MemoryRecord | None] = []
        self.free: list[int] = []
        self.compressed: dict[int, tuple[tuple[float, str, bool], MemoryRecord]] = {}
        """Cache of compressed forms by key: ``((ratio, strategy, drop_metadata), record)``."""
        self.layer_counts = np.zeros(_N_LAYERS, dtype=np.int64)
        self.ring = EpisodicRing(episodic_max, self.slot_of.__contains__)
        self.layers: dict[int, SortedList] = {
            code: SortedList() for code in range(_N_LAYERS) if code != _EPISODIC
        }
        self.key = np.zeros(0, dtype=np.int64)
        self.layer = np.zeros(0, dtype=np.int8)
        self.importance = np.zeros(0, dtype=np.float64)
        self.flagged = np.zeros(0, dtype=np.bool_)
        self.created = np.zeros(0, dtype=np.int64)
        self.anchor = np.zeros(0, dtype=np.int64)
        self.tokens = np.zeros(0, dtype=np.int32)
        self.deadline = np.zeros(0, dtype=np.int64)
        self.decayed = np.zeros(0, dtype=np.float64)
        self.alive = np.zeros(0, dtype=np.bool_)
        self.status = np.zeros(0, dtype=np.int8)
        self.claims: dict[str, int] = {}
        """Active claim key (``claimKey`` attribute) -> record key."""
        self.embedded = np.zeros(0, dtype=np.bool_)
        self.vectors: NDArray[np.float32] | None = None
        """Unit embedding per slot (allocated on the first vector); valid where ``embedded``."""
        self.index: VectorIndex | None = None
        """Nearest-neighbour index over the embedded keys (large agents only)."""
        self.index_build: VectorIndex | None = None
        """An index being built in tick slices (keys inserted in order up to ``index_cursor``)."""
        self.index_cursor = 0
        self.by_importance: SortedList | None = None
        """``(-importance, key)`` of live records, kept only for large agents (preselection)."""
        self.by_recency: SortedList | None = None
        """``(-anchor, key)`` of live records, kept with ``by_importance``."""
        self._grow(initial_capacity)

    _COLUMNS = (
        "key", "layer", "importance", "flagged", "created", "anchor", "tokens", "deadline",
        "decayed", "alive", "status", "embedded",
    )

    def _grow(self, capacity: int) -> None:
        for name in self._COLUMNS:
            old: NDArray[Any] = getattr(self, name)
            new = np.zeros(capacity, dtype=old.dtype)
            new[: old.shape[0]] = old
            setattr(self, name, new)
        self.records.extend([None] * (capacity - self.capacity))
        if self.vectors is not None:
            grown = np.zeros((capacity, self.vectors.shape[1]), dtype=np.float32)
            grown[: self.vectors.shape[0]] = self.vectors
            self.vectors = grown
        self.capacity = capacity

    def ensure_vectors(self, dim: int) -> NDArray[np.float32]:
        """The vector column, allocated (or re-allocated for a new ``dim``) on demand."""
        if self.vectors is None or self.vectors.shape[1] != dim:
            self.vectors = np.zeros((self.capacity, dim), dtype=np.float32)
            self.embedded[:] = False
        return self.vectors

    def enable_rank_lists(self) -> None:
        """Build the importance and recency orders (O(n log n)); kept up to date afterwards."""
        if self.by_importance is not None:
            return
        slots = self.live_slots()
        keys = self.key[slots].tolist()
        self.by_importance = SortedList(zip((-self.importance[slots]).tolist(), keys,
                                            strict=True))
        self.by_recency = SortedList(zip((-self.anchor[slots]).tolist(), keys, strict=True))

    def top_keys(self, order: SortedList, k: int, allowed: NDArray[np.bool_]) -> list[int]:
        """The first ``k`` keys of ``order`` whose slots are ``allowed``.

        Runtime complexity: O(k') for the k' entries visited.
        """
        out: list[int] = []
        slot_of = self.slot_of
        for _, key in order:
            if allowed[slot_of[key]]:
                out.append(key)
                if len(out) == k:
                    break
        return out

    def drop_index(self) -> None:
        """Forget the index and any build in progress (a new embedder makes them stale)."""
        self.index = None
        self.index_build = None
        self.index_cursor = 0

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

    def add(self, record: MemoryRecord, key: int, flagged: bool, deadline: int) -> int:
        """Store ``record`` under ``key`` and return its slot.

        The caller evicts first when the episodic ring is full.
        """
        if self.free:
            slot = self.free.pop()
        else:
            if self.hi == self.capacity:
                self._grow(max(64, self.capacity * 2))
            slot = self.hi
            self.hi += 1
        code = record.layer.code
        self.key[slot] = key
        self.layer[slot] = code
        self.importance[slot] = record.importance
        self.flagged[slot] = flagged
        self.created[slot] = record.created_at
        self.anchor[slot] = record.recency_anchor
        self.tokens[slot] = record.tokens_estimate or 0
        self.deadline[slot] = deadline
        self.decayed[slot] = record.importance
        self.alive[slot] = True
        self.embedded[slot] = False
        self._set_claim(slot, key, record)
        self.records[slot] = record
        self.slot_of[key] = slot
        self.layer_counts[code] += 1
        if self.by_importance is not None and self.by_recency is not None:
            self.by_importance.add((-record.importance, key))
            self.by_recency.add((-record.recency_anchor, key))
        if code == _EPISODIC:
            self.ring.append(key)
        else:
            self.layers[code].add((record.recency_anchor, key))
        return slot

    def remove(self, key: int) -> MemoryRecord:
        """Remove the live record ``key`` and return it. Runtime complexity: O(log n)."""
        slot = self.slot_of.pop(key)
        self.compressed.pop(key, None)
        record = self.records[slot]
        claim = record.metadata.attributes.get("claimKey") if record is not None else None
        if isinstance(claim, str) and self.claims.get(claim) == key:
            del self.claims[claim]
        assert record is not None
        code = int(self.layer[slot])
        if self.by_importance is not None and self.by_recency is not None:
            self.by_importance.remove((-float(self.importance[slot]), key))
            self.by_recency.remove((-int(self.anchor[slot]), key))
        if code == _EPISODIC:
            self.ring.discard(key)
        else:
            self.layers[code].remove((int(self.anchor[slot]), key))
        self.alive[slot] = False
        if self.embedded[slot]:
            self.embedded[slot] = False
            gone = np.array([key], dtype=np.int64)
            for index in (self.index, self.index_build):
                if index is not None:
                    index.remove(gone)
        self.records[slot] = None
        self.layer_counts[code] -= 1
        self.free.append(slot)
        return record

    def replace_record(self, key: int, record: MemoryRecord) -> None:
        """Swap the stored object of ``key`` for an updated one with the same id and layer."""
        slot = self.slot_of[key]
        self.compressed.pop(key, None)
        if self.by_importance is not None:
            self.by_importance.remove((-float(self.importance[slot]), key))
            self.by_importance.add((-record.importance, key))
        self.records[slot] = record
        self.importance[slot] = record.importance
        self._set_claim(slot, key, record)

    def _set_claim(self, slot: int, key: int, record: MemoryRecord) -> None:
        attrs = record.metadata.attributes
        if not attrs:  # most records carry no claim
            self.status[slot] = 0
            return
        status = _STATUS_CODE.get(str(attrs.get("claimStatus", "active")), 0)
        self.status[slot] = status
        claim = attrs.get("claimKey")
        if isinstance(claim, str):
            if status == 0:
                self.claims[claim] = key
            elif self.claims.get(claim) == key:
                del self.claims[claim]

    def record(self, key: int) -> MemoryRecord | None:
        """The live record ``key``, or ``None``."""
        slot = self.slot_of.get(key)
        return None if slot is None else self.records[slot]

    def live_slots(self) -> NDArray[np.intp]:
        """Slots of live records in slot order (not a meaningful order by itself)."""
        return np.flatnonzero(self.alive[: self.hi])

    def keys_in_time_order(self, layer: MemoryLayer | None = None) -> Iterator[int]:
        """Live keys ordered by ``(recency_anchor, key)``; episodic alone in ring order."""
        if layer is None:
            slots = self.live_slots()
            order = np.lexsort((self.key[slots], self.anchor[slots]))
            yield from (int(k) for k in self.key[slots][order])
        elif layer is MemoryLayer.EPISODIC:
            yield from self.ring
        else:
            yield from (k for _, k in self.layers[layer.code])

    def _check(self) -> None:
        """Assert every structural invariant (tests call this after each mutation)."""
        hi = self.hi
        alive = self.alive[:hi]
        assert int(alive.sum()) == len(self.slot_of), "alive column disagrees with slot map"
        assert not self.alive[hi:].any(), "live slot above the high-water mark"
        assert not (self.embedded[:hi] & ~alive).any(), "a dead slot is marked embedded"
        if self.index is not None:
            assert len(self.index) <= int(self.embedded[:hi].sum()), "index holds dead keys"
        if self.by_importance is not None and self.by_recency is not None:
            assert len(self.by_importance) == len(self.by_recency) == len(self.slot_of)
        for claim, key in self.claims.items():
            slot = self.slot_of[key]
            rec = self.records[slot]
            assert rec is not None and rec.metadata.attributes.get("claimKey") == claim
            assert int(self.status[slot]) == 0, "a non-active claim is indexed as active"
        assert len(self.free) + len(self.slot_of) == hi, "slots leaked"
        assert len(set(self.free)) == len(self.free), "slot freed twice"
        assert set(self.compressed) <= set(self.slot_of), "compressed cache holds a dead key"
        for slot in self.free:
            assert not self.alive[slot] and self.records[slot] is None
        counts = np.bincount(self.layer[:hi][alive], minlength=_N_LAYERS)
        assert (counts == self.layer_counts).all(), "layer counts drifted"
        for key, slot in self.slot_of.items():
            rec = self.records[slot]
            assert rec is not None and self.alive[slot] and int(self.key[slot]) == key
            assert rec.id == self.id_of(key) and rec.layer.code == int(self.layer[slot])
            assert key < self.next_key
        assert self.ring.live == int(self.layer_counts[_EPISODIC]) <= self.ring.capacity
        assert sorted(self.ring) == sorted(
            k for k, s in self.slot_of.items() if self.layer[s] == _EPISODIC
        )
        ring_keys = list(self.ring)
        assert ring_keys == sorted(ring_keys), "ring out of insertion order"
        for code, index in self.layers.items():
            assert len(index) == int(self.layer_counts[code])
            for anchor, key in index:
                slot = self.slot_of[key]
                assert int(self.anchor[slot]) == anchor and int(self.layer[slot]) == code
