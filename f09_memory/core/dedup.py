"""Ingest dedup (``MemoryConfig.dedup_window_ms``): a repeat reinforces, not a copy.

An item whose normalized text (per layer) matches a live record created within the window
reinforces that record (importance + ``dedup_importance_step``, capped at 1; recency anchor
moved to now; ``memory:record:updated`` reason ``dedup``) instead of adding a copy; a repeat
inside the batch reinforces the batch's own record. A frame ends as its items ingested one
by one would: :meth:`IngestDedup.plan` splits the groups for which a batch could end
otherwise, :meth:`IngestDedup.store` dedups, builds and stores them. The writer
(``core.writer``) calls both and does the rest of a store (caps, embedding, events).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from typing import Any

from f09_memory.bus import RecordUpdated
from f09_memory.core.state import EngineState
from f09_memory.ingestion.frame_checks import item_column, take_items
from f09_memory.ingestion.pipeline import Ingestor
from f09_memory.ingestion.validation import PendingRecord
from f09_memory.schema.enums import MemoryLayer
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import (
    NewRecords,
    Removed,
    content_fingerprint,
    normalized_content,
)

__all__ = ["Group", "IngestDedup", "Stored", "reinforced"]

_EPISODIC = MemoryLayer.EPISODIC
_NOTHING = NewRecords()
"""What a group of repeats only adds (never changed: no record is added)."""
_CODE = operator.attrgetter("code")
Group = tuple[AgentMemory, Sequence[PendingRecord]]
"""One agent's items of a store, in order."""
Stored = tuple[list[str], list[int]]
"""A group's texts as stored and their :func:`content_fingerprint`, in item order."""


def reinforced(importance: float, step: float) -> float:
    """Importance after one dedup reinforcement: ``+ step``, capped at 1 (6 decimals)."""
    return min(1.0, round(importance + step, 6))


class IngestDedup:
    """The dedup part of the write path.

    Args:
        state: The engine state (the store, the config's step, the vocabularies).
        ingestor: Redacts texts to compare and builds what is left to store.
        wants: Whether an event would reach anyone (the writer's).
    """

    def __init__(self, state: EngineState, ingestor: Ingestor,
                 wants: Callable[[str], bool]) -> None:
        self.state = state
        self.ingestor = ingestor
        self.wants = wants

    def plan(self, groups: Sequence[Group]
             ) -> tuple[Sequence[Group], list[Stored], list[int] | None]:
        """The groups as dedup must store them, with their texts as stored.

        The frame's texts are redacted once, uncounted (the items stored are counted when
        they are built), and fingerprinted once (:func:`content_fingerprint`: dedup looks
        them up, the store indexes the new records by them). A group that overflows its
        agent's episodic ring with a repeat of a record the frame evicts goes one item at a
        time, in order (dedup must see each eviction before the next item); the others stay
        batches: dedup ends alike for them.

        Returns:
            The groups to store, each one's texts and fingerprints, and each one's group in
            ``groups`` when some were split (``None``: the groups as given).
        """
        flat = self._stored_texts(list(chain.from_iterable(
            item_column(items, "content") for _, items in groups)))
        codes = map(_CODE, chain.from_iterable(item_column(items, "layer") for _, items in groups))
        flat_fps = list(map(content_fingerprint, codes, flat))
        stored: list[Stored] = []
        row = 0
        for _, items in groups:
            end = row + len(items)
            stored.append((flat[row:end], flat_fps[row:end]))
            row = end
        alone = [self._evicts_a_repeat(am, items, fps)
                 for (am, items), (_, fps) in zip(groups, stored, strict=True)]
        if not any(alone):
            return groups, stored, None
        owners: list[int] = []
        parts: list[Group] = []
        part_stored: list[Stored] = []
        for g, (am, items) in enumerate(groups):
            if alone[g]:
                texts, fps = stored[g]
                parts.extend((am, [item]) for item in items)
                part_stored.extend(([text], [fp]) for text, fp in zip(texts, fps, strict=True))
                owners.extend(g for _ in items)
            else:
                parts.append((am, items))
                part_stored.append(stored[g])
                owners.append(g)
        return parts, part_stored, owners

    def store(self, groups: Sequence[Group], stored: Sequence[Stored], now: int, window: int,
              events: list[Any]) -> Iterator[tuple[AgentMemory, NewRecords, Sequence[int],
                                                   dict[int, list[Removed]],
                                                   Sequence[tuple[str, ...]], list[int]]]:
        """Dedup each group, build what is left, store it; yield each group as stored.

        Yields ``(am, new records, slots, evictions, labels, each item's key)`` per group, in
        order. When every group is a different agent, the groups are all deduped first and
        what is left is built in one pass (one redaction and token pass for the frame): an
        agent's dedup reads only its own records, so each agent sees the same sequence of
        changes as group by group. A group's events keep their order (its reinforcements,
        then the repeats inside the batch), and the groups theirs.
        """
        state = self.state
        step = state.config.dedup_importance_step
        report_updated = self.wants(RecordUpdated.name)
        if len({id(am) for am, _ in groups}) == len(groups):
            stages = [list(zip(groups, stored, strict=True))]
        else:  # an agent in several groups: its later group must see the earlier stored
            stages = [[pair] for pair in zip(groups, stored, strict=True)]
        vocabulary = state.vocabulary
        for stage in stages:
            deduped = []
            for (am, items), (texts, fps) in stage:
                placed: list[int] = []
                repeats: list[int] = []
                own: list[Any] = []
                fresh_fps: list[int] = []
                fresh = self._dedup(am, items, texts, fps, now, window, placed, repeats, own,
                                    fresh_fps)
                deduped.append((am, fresh, fresh_fps, placed, repeats, own))
            built = iter(self.ingestor.build_groups(
                [(fresh, am.reserve_keys(len(fresh)), vocabulary(am.agent_id))
                 for am, fresh, *_ in deduped if fresh], now, state.store.tags))
            for am, fresh, fresh_fps, placed, repeats, own in deduped:
                if not fresh:  # every item reinforced a stored record: nothing to add
                    events.extend(own)
                    yield am, _NOTHING, (), {}, (), placed
                    continue
                new, labels = next(built)
                if any(repeats):  # repeats inside the batch reinforce it
                    importance = list(new.importance)
                    for i, times in enumerate(repeats):
                        for _ in range(times):
                            importance[i] = reinforced(importance[i], step)
                            if report_updated:
                                own.append(RecordUpdated(
                                    id=am.id_of(new.keys[i]),
                                    fields=("importance", "recency_anchor"), reason="dedup"))
                    new.importance = importance
                events.extend(own)
                slots, evicted = am.add_batch(new, fresh_fps)
                yield am, new, slots, evicted, labels, [
                    new.keys[-k - 1] if k < 0 else k for k in placed]

    def _evicts_a_repeat(self, am: AgentMemory, items: Sequence[PendingRecord],
                         fps: Sequence[int]) -> bool:
        """Whether dedup over ``items`` as one batch could end otherwise than item by item.

        Only when the batch overflows the episodic ring: an item that repeats a record the
        batch evicts (one of the ring's oldest) must not reinforce it, nor may a repeat of
        the batch's own record that the batch itself evicts (a batch larger than the ring).
        ``fps`` are the fingerprints of the items' texts as stored (:meth:`plan`).
        """
        ring = am.ring
        episodic = item_column(items, "layer").count(_EPISODIC)
        over = ring.live + episodic - ring.capacity
        if len(items) < 2 or over <= 0:
            return False
        if episodic > ring.capacity:
            return True
        gone = set(ring.oldest_keys(min(over, ring.live)))
        index = am.dedup_index()
        return any(index.get(fp) in gone for fp in fps)

    def _stored_texts(self, contents: list[str]) -> list[str]:
        """Items' texts as they would be stored (redacted in one batch, not counted).

        The items stored are counted when they are built.
        """
        return self.ingestor.redactor.redact_many(contents, count=False)[0]

    def _dedup(self, am: AgentMemory, items: Sequence[PendingRecord], texts: Sequence[str],
               fps: Sequence[int], now: int, window: int, out: list[int], repeats: list[int],
               events: list[Any], fresh_fps: list[int]) -> Sequence[PendingRecord]:
        """Reinforce live records that ``items`` repeat; return the items still to store.

        ``texts`` are the items' texts as stored and ``fps`` their fingerprints
        (:meth:`plan`); ``fresh_fps`` receives those of the items returned. ``out`` receives,
        per input item, the key of the record it became: an existing key, or ``-(1 + i)``
        for the i-th item to store (resolved by the caller); ``repeats[i]`` counts the later
        items of the batch that repeat that i-th item (the caller reinforces it that many
        times), so a batch ends as the same items ingested one by one would.
        """
        index = am.dedup_index()
        slot_of, created, content = am.slot_of, am.created, am.content
        fresh: list[int] = []  # the rows of the items to store
        seen: dict[int, int] = {}
        hits: dict[int, int] = {}  # slot -> reinforcements, applied at the end in one pass
        report = self.wants(RecordUpdated.name)
        for row, (text, fp) in enumerate(zip(texts, fps, strict=True)):
            earlier = seen.get(fp)
            if earlier is not None:  # a repeat inside the batch
                target = out[earlier]
                if target < 0:
                    repeats[-target - 1] += 1
                    out.append(target)
                    continue
                key = target
                slot: int | None = slot_of[key]
            else:
                found = index.get(fp)
                slot = slot_of.get(found) if found is not None else None
                if found is None or slot is None or created.item(slot) <= now - window or (
                        (stored := content[slot]) != text  # most repeats are verbatim
                        and normalized_content(stored or "") != normalized_content(text)):
                    seen[fp] = len(out)
                    out.append(-(1 + len(fresh)))
                    fresh.append(row)
                    fresh_fps.append(fp)
                    repeats.append(0)
                    continue
                key = found
                seen[fp] = len(out)
            assert slot is not None
            hits[slot] = hits.get(slot, 0) + 1
            if report:
                events.append(RecordUpdated(id=am.id_of(key), fields=(
                    "importance", "recency_anchor"), reason="dedup"))
            out.append(key)
        if hits:
            self._reinforce(am, hits, now)
        return take_items(items, fresh)

    def _reinforce(self, am: AgentMemory, hits: dict[int, int], now: int) -> None:
        """Dedup reinforcements of ``am``'s records: per slot, its count of them.

        Each one adds the importance step (capped at 1, rounded as :func:`reinforced`) and
        moves the anchor up to ``now``; the records' columns are written once.
        """
        step = self.state.config.dedup_importance_step
        importance = am.importance
        values: list[float] = []
        for slot, times in hits.items():
            value = importance.item(slot)
            for _ in range(times):
                value = reinforced(value, step)
            values.append(value)
        am.reinforce(list(hits), values, now)
