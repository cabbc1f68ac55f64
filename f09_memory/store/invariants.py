"""Structural invariants of an agent's columns (``AgentMemory._check``; tests call it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from f09_memory.schema.enums import LAYERS_BY_CODE, MemoryLayer
from f09_memory.store.records import content_fingerprint, fingerprint

if TYPE_CHECKING:
    from f09_memory.store.agent import AgentMemory

__all__ = ["check_agent"]

_EPISODIC = MemoryLayer.EPISODIC.code
_N_LAYERS = len(LAYERS_BY_CODE)


def check_agent(am: AgentMemory) -> None:
    """Assert every structural invariant of ``am``, one agent's memory."""
    hi = am.hi
    alive = am.alive[:hi]
    assert int(alive.sum()) == len(am.slot_of), "alive column disagrees with slot map"
    assert not am.alive[hi:].any(), "live slot above the high-water mark"
    for name in ("embedded", "hashed", "flagged", "status", "redacted", "tagset"):
        assert not getattr(am, name)[hi:].any(), f"{name} set above the high-water mark"
    assert not (am.embedded[:hi] & ~alive).any(), "a dead slot is marked embedded"
    assert not (am.hashed[:hi] & ~alive).any(), "a dead slot is marked hashed"
    if am.index is not None:  # an updated record keeps its key until re-embedded
        keys = getattr(am.index, "keys", None)
        assert len(am.index) <= len(am.slot_of) and (
            keys is None or set(keys().tolist()) <= set(am.slot_of)), "index holds dead keys"
    for claim, key in am.claims.items():
        slot = am.slot_of[key]
        assert am.extras[key].attributes.get("claimKey") == claim
        assert int(am.status[slot]) == 0, "a non-active claim is indexed as active"
    assert am.inactive_seen or not am.status[:hi].any(), "inactive record not flagged"
    assert len(am.free) + len(am.slot_of) == hi, "slots leaked"
    assert len(set(am.free)) == len(am.free), "slot freed twice"
    assert set(am.extras) <= set(am.slot_of), "extras of a dead key"
    assert set(am.source_event) <= set(am.slot_of), "source event of a dead key"
    for slot in am.free:
        assert not am.alive[slot] and am.content[slot] is None
    counts = np.bincount(am.layer[:hi][alive], minlength=_N_LAYERS)
    assert (counts == am.layer_counts).all(), "layer counts drifted"
    for key, slot in am.slot_of.items():
        assert am.alive[slot] and int(am.key[slot]) == key
        assert am.content[slot] is not None
        assert key < am.next_key
        assert 0 <= int(am.tagset[slot]) < len(am.tags)
    live_deadlines = am.deadline[:hi][alive]
    if live_deadlines.shape[0]:
        assert int(live_deadlines.min()) >= am.min_deadline, "min_deadline too high"
    episodic_anchors = am.anchor[:hi][alive & (am.layer[:hi] == _EPISODIC)]
    if episodic_anchors.shape[0]:
        assert int(episodic_anchors.min()) >= am.min_episodic_anchor, "anchor bound high"
    assert am.ring.live == int(am.layer_counts[_EPISODIC]) <= am.ring.capacity
    assert am.layer_counts.base is am.stats or am.layer_counts.base is am.stats.base
    assert sorted(am.ring) == sorted(
        k for k, s in am.slot_of.items() if am.layer[s] == _EPISODIC
    )
    ring_keys = list(am.ring)
    assert ring_keys == sorted(ring_keys), "ring out of insertion order"
    if am.dedup is not None:
        for fp, key in am.dedup.items():
            slot = am.slot_of[key]
            text = am.content[slot]
            assert text is not None
            assert content_fingerprint(int(am.layer[slot]), text) == fp, "dedup drifted"
        assert am.fprint is not None and am.fprint.shape[0] == am.capacity
        for slot in am.slot_of.values():  # a removal reads the digest of any live record
            text = am.content[slot]
            assert text is not None
            layer = am.layer.item(slot)
            assert fingerprint(layer, am.fprint.item(slot)) == content_fingerprint(
                layer, text), "fprint drifted"
