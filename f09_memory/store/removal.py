"""AgentRemoval: taking an agent's live records out (a base of ``AgentMemory``).

One record (``remove``), the ring's oldest (``remove_oldest``, an overflow) or a list
(``remove_many``, a summary's sources): each clears the record's slot (alive, embedded,
content, its digest out of the agent's sum, a new ``rev``), its sparse parts (extras, claim,
source event), its dedup entry and its vector-index entry, and frees the slot for reuse.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.schema.enums import LAYERS_BY_CODE, MemoryLayer
from f09_memory.store.columns import STAT_REMOVED
from f09_memory.store.digests import MASK128
from f09_memory.store.records import RecordExtra, Removed
from f09_memory.store.ring import EpisodicRing

__all__ = ["AgentRemoval"]

_EPISODIC = MemoryLayer.EPISODIC.code
_N_LAYERS = len(LAYERS_BY_CODE)
_new_tuple = tuple.__new__  # a NamedTuple without its Python-level __new__


class AgentRemoval:
    """Removal primitives of :class:`~f09_memory.store.agent.AgentMemory`."""

    agent_id: str
    slot_of: dict[int, int]
    extras: dict[int, RecordExtra]
    claims: dict[str, int]
    source_event: dict[int, str]
    ring: EpisodicRing
    dedup: dict[int, int] | None
    free: array[int]
    next_rev: int
    dirty: bool
    digest_sum: int
    layer: NDArray[np.int8]
    alive: NDArray[np.bool_]
    embedded: NDArray[np.bool_]
    hashed: NDArray[np.bool_]
    digest_hi: NDArray[np.uint64]
    digest_lo: NDArray[np.uint64]
    rev: NDArray[np.int64]
    content: NDArray[np.object_]
    stats: NDArray[np.int64]
    layer_counts: NDArray[np.int64]
    _counts: Any

    if TYPE_CHECKING:  # the other bases' (never shadowed here: this base comes first)
        def _forget_fingerprint(self, slot: int, key: int) -> None: ...

        def _unindex(self, keys: list[int]) -> None: ...

    def _unhash(self, slot: int) -> None:
        if self.hashed.item(slot):
            value = (int(self.digest_hi[slot]) << 64) | int(self.digest_lo[slot])
            self.digest_sum = (self.digest_sum - value) & MASK128
            self.hashed[slot] = False
        self.rev[slot] = self.next_rev
        self.next_rev += 1
        self.dirty = True

    def _unhash_many(self, slots: NDArray[np.intp]) -> None:
        """:meth:`_unhash` of distinct ``slots``: their revs move in one numpy pass."""
        for slot in slots[self.hashed[slots]].tolist():
            self._unhash(slot)
        self.rev[slots] = np.arange(self.next_rev, self.next_rev + len(slots), dtype=np.int64)
        self.next_rev += len(slots)
        self.dirty = True

    def remove(self, key: int) -> Removed:
        """Remove the live record ``key``. Runtime complexity: O(1) amortized."""
        slot = self.slot_of.pop(key)
        if self.extras or self.source_event:
            self._drop_sparse(key)
        code = self.layer.item(slot)
        if code == _EPISODIC:
            self.ring.discard(key)
        if self.dedup is not None:
            self._forget_fingerprint(slot, key)
        self._unhash(slot)
        self.alive[slot] = False
        if self.embedded.item(slot):
            self.embedded[slot] = False
        self._unindex([key])
        self.content[slot] = None
        counts = self._counts
        counts[code] -= 1
        counts[STAT_REMOVED] += 1
        self.free.append(slot)
        removed: Removed = _new_tuple(Removed, (self.agent_id, LAYERS_BY_CODE[code], key))
        return removed

    def remove_oldest(self, count: int) -> list[Removed]:
        """Remove the ``count`` oldest live episodic records in one pass, oldest first.

        The batch form of ``remove(ring.oldest())`` (ring overflow of a large ingest).
        Runtime complexity: O(count) plus numpy over the removed slots.
        """
        keys = self.ring.pop_oldest(count)
        slots = [self.slot_of.pop(key) for key in keys]
        self._drop(keys, slots)
        self.layer_counts[_EPISODIC] -= len(slots)
        layer = LAYERS_BY_CODE[_EPISODIC]
        return [Removed(self.agent_id, layer, key) for key in keys]

    def remove_many(self, keys: Sequence[int]) -> list[Removed]:
        """:meth:`remove` of each of the live, distinct ``keys``, in order, in one pass.

        A summary's sources. A key that is not live raises ``KeyError`` before anything
        changes. Runtime complexity: O(k) plus numpy over the removed slots.
        """
        if len(keys) <= 1:
            return [self.remove(key) for key in keys]
        slot_of = self.slot_of
        slots = list(map(slot_of.__getitem__, keys))  # a key not live raises: no change
        for key in keys:
            del slot_of[key]
        codes = self.layer[slots].tolist()
        ring = self.ring
        for key, code in zip(keys, codes, strict=True):
            if code == _EPISODIC:
                ring.discard(key)
        self._drop(keys, slots)
        self.layer_counts -= np.bincount(codes, minlength=_N_LAYERS)
        layers = LAYERS_BY_CODE
        agent_id = self.agent_id
        return [Removed(agent_id, layers[code], key)
                for key, code in zip(keys, codes, strict=True)]

    def _drop(self, keys: Sequence[int], slots: list[int]) -> None:
        """The batch part of removing ``keys`` from ``slots``.

        The keys are out of ``slot_of`` and the ring already; this clears their sparse
        parts, fingerprints, columns and frees the slots. The caller updates the layer
        counts.
        """
        if self.extras or self.source_event:
            for key in keys:
                self._drop_sparse(key)
        if self.dedup is not None:
            for slot, key in zip(slots, keys, strict=True):
                self._forget_fingerprint(slot, key)
        index = np.asarray(slots, dtype=np.intp)
        self._unhash_many(index)
        self.alive[index] = False
        self.embedded[index] = False
        self._unindex(list(keys))
        self.content[index] = None
        self.stats[STAT_REMOVED] += len(slots)
        self.free.extend(slots)

    def _drop_sparse(self, key: int) -> None:
        """Drop ``key``'s source event and extra, and its claim if the record holds it."""
        self.source_event.pop(key, None)
        extra = self.extras.pop(key, None)
        if extra is not None:
            claim = extra.attributes.get("claimKey")
            if isinstance(claim, str) and self.claims.get(claim) == key:
                del self.claims[claim]
