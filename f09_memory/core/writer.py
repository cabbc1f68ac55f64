"""Writer: the write path (validate, redact, score, store as columns, embed, publish).

Every state change to records goes through here: ingest of one item, of many for one agent,
of a whole crowd's frame (``ingest_batch``), summary records, removals with their events,
and in-place updates. Events are queued while the state changes and published after it is
complete; nobody-listening events are never built.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from f09_memory.bus import (
    EngineBus,
    MemoryCompaction,
    RecordCreated,
    RecordExpired,
    RecordRedacted,
    RecordUpdated,
)
from f09_memory.core.dedup import IngestDedup, Stored
from f09_memory.core.frames import group_frame, indexed
from f09_memory.core.records import IngestedRecords, RecordReader
from f09_memory.core.state import EngineState
from f09_memory.errors import (
    CapacityExceededError,
    InputInvalidError,
    MemoryEngineError,
    RecordNotFoundError,
)
from f09_memory.ingestion.pipeline import Ingestor
from f09_memory.ingestion.validation import (
    PendingRecord,
    simple_pending,
    validate_agent_id,
    validate_item,
    validate_mapping,
)
from f09_memory.retention.compaction import Compactor
from f09_memory.retrieval.semantic import SemanticMemory
from f09_memory.schema.enums import LAYERS_BY_CODE, MemoryLayer
from f09_memory.schema.records import MemoryRecord, ProceduralMeta
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import (
    NewRecords,
    Removed,
)

__all__ = ["Writer"]

logger = logging.getLogger("f09_memory")
_EPISODIC = MemoryLayer.EPISODIC
_CREATED, _EXPIRED, _REDACTED = RecordCreated.name, RecordExpired.name, RecordRedacted.name
_COMPACTION = MemoryCompaction.name
_TAGS = {"memory:record:created": "[MEM][CREATE]", "memory:record:redacted": "[MEM][REDACT]",
         "memory:record:expired": "[MEM][EXPIRE]", "memory:compaction": "[MEM][COMPACT]",
         "memory:embedding:failed": "[MEM][ERROR]", **dict.fromkeys(
             [f"memory:summarization:{s}" for s in ("queued", "completed", "failed", "timeout",
                                                    "late")], "[MEM][SUMMARY]")}
# Their ``reason`` is outside text (the host's, an adapter's exception): never logged.
_FREE_TEXT_REASON = frozenset({"memory:summarization:failed", "memory:embedding:failed"})


class Writer:
    """The write path of one engine.

    Args:
        state: The engine state.
        bus: The event bus.
        ingestor: Redaction, token estimate, importance.
        semantic: Embeds new records.
        reader: Builds the records handed back.
    """

    def __init__(self, state: EngineState, bus: EngineBus, ingestor: Ingestor,
                 semantic: SemanticMemory, reader: RecordReader) -> None:
        self.state = state
        self.bus = bus
        self.ingestor = ingestor
        self.semantic = semantic
        self.reader = reader
        self._compactor = Compactor(state.config)
        codes, caps = self._compactor.caps
        share = state.config.hard_cap_slack
        if share is None:
            codes = codes[:0]
        slack = np.maximum(1, np.floor(caps * (share or 0.0))).astype(np.int64)
        self._hard = (codes, caps[: codes.shape[0]], (caps + slack)[: codes.shape[0]])
        # Below this many records outside the episodic layer no capped layer can pass its
        # hard bound (-1: always look; an empty tuple of codes: never).
        bound = int(self._hard[2].min()) if codes.shape[0] else np.iinfo(np.int64).max
        self._free_below = -1 if _EPISODIC.code in codes.tolist() else bound
        self._dedup_on = bool(state.config.dedup_window_ms)
        self._dedup = IngestDedup(state, ingestor, self.wants)
        self._limit = state.config.max_records_per_agent
        self.on_stored: Callable[[AgentMemory, NewRecords], None] | None = None
        """Called with each agent's new records that carry metadata or a source event,
        once stored (the procedural miner notes its action records there)."""
        self.forget_hooks: list[Callable[[str], None]] = []
        """Called in order with the agent id after ``forget(agent_id=...)``: the layers drop
        the agent's own state (the miner's patterns, its opinions, its placement)."""

    # ------------------------------------------------------------------ events
    def publish(self, events: list[Any]) -> None:
        """Emit queued events in order (logged at DEBUG with the spec's tags, no free text)."""
        bus = self.bus
        debug = logger.isEnabledFor(logging.DEBUG)
        for ev in events:
            if debug:
                payload = ev.to_dict()
                if ev.name in _FREE_TEXT_REASON:
                    payload.pop("reason", None)
                logger.debug("%s %s %s", _TAGS.get(ev.name, "[MEM]"), ev.name, payload)
            if bus.wants(ev.name):
                bus.emit(ev)

    def wants(self, name: str) -> bool:
        """Whether an event ``name`` would reach anyone (a subscriber or the DEBUG log)."""
        return self.bus.wants(name) or logger.isEnabledFor(logging.DEBUG)

    # ------------------------------------------------------------------ checks
    def check_capacity(self, am: AgentMemory | None, agent_id: str,
                       items: Sequence[PendingRecord]) -> None:
        """Raise if storing ``items`` would pass ``max_records_per_agent``.

        Raises:
            CapacityExceededError: The agent would pass the ceiling (state unchanged).
        """
        limit = self.state.config.max_records_per_agent
        live = am.live if am is not None else 0
        if live + len(items) <= limit:
            return  # the common case: far from the ceiling
        ring_live = am.ring.live if am is not None else 0
        episodic_new = sum(1 for it in items if it.layer is _EPISODIC)
        evictions = max(0, ring_live + episodic_new - self.state.config.episodic_max)
        after = live + len(items) - evictions
        if after > limit:
            raise CapacityExceededError(
                f"the agent would hold {after} records, above max_records_per_agent={limit}; "
                "raise the ceiling, lower retention caps, or let compaction run (engine.tick)",
                details={"live": live, "limit": limit},
            )

    def validate_items(self, items: object) -> list[PendingRecord]:
        """Validate an ``ingest_many`` item list (all before any is stored), within the limits.

        Raises:
            InputInvalidError: Not a list, or an item is malformed (the message gives its
                index).
        """
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InputInvalidError("items must be a list of mappings or strings",
                                    details={"field": "items"})
        pending: list[PendingRecord] = []
        append = pending.append
        limits = self.ingestor.limits
        for i, raw in enumerate(items):
            item = simple_pending(raw, False, limits)
            if item is None:
                try:
                    item = validate_mapping(raw, limits)
                except MemoryEngineError as exc:
                    raise indexed(exc, i) from None
            append(item)
        return pending

    # ------------------------------------------------------------------ storing
    def store(self, am: AgentMemory, items: Sequence[PendingRecord], now: int,
              events: list[Any], anchor: int | None = None,
              own_refs: bool = False) -> Sequence[int]:
        """Build, store and embed validated items of one agent; queue their events.

        ``anchor`` and ``own_refs``: a summary's (``Ingestor.build_groups``).

        Returns:
            The new records' keys, in order.
        """
        return self.store_groups([(am, items)], now, events, anchor, own_refs)[0]

    def store_groups(self, groups: Sequence[tuple[AgentMemory, Sequence[PendingRecord]]],
                     now: int, events: list[Any], anchor: int | Sequence[int] | None = None,
                     own_refs: bool = False) -> list[Sequence[int]]:
        """:meth:`store` for several agents, with one embedding call for all their texts.

        ``anchor``: one for every group, or each group's (a round of summaries).

        Returns:
            Each group's new keys, in order.
        """
        window = self.state.config.dedup_window_ms if anchor is None else 0
        if not window:
            return self._store(groups, now, events, anchor, 0, None, own_refs)
        parts, planned, owners = self._dedup.plan(groups)
        stored = self._store(parts, now, events, None, window, planned)
        if owners is None:
            return stored
        merged: list[list[int]] = [[] for _ in groups]
        for g, keys in zip(owners, stored, strict=True):
            merged[g].extend(keys)
        return list[Sequence[int]](merged)

    def _store(self, groups: Sequence[tuple[AgentMemory, Sequence[PendingRecord]]], now: int,
               events: list[Any], anchor: int | Sequence[int] | None, window: int,
               planned: Sequence[Stored] | None,
               own_refs: bool = False) -> list[Sequence[int]]:
        state = self.state
        tags = state.store.tags
        vocabulary = state.vocabulary
        added = []
        results: list[Sequence[int]] = []
        if not window:  # the groups' column values in one pass (the ingestor reads no store)
            built = self.ingestor.build_groups(
                [(items, am.reserve_keys(len(items)), vocabulary(am.agent_id))
                 for am, items in groups], now, tags, anchor, own_refs)
            for (am, _), (new, labels) in zip(groups, built, strict=True):
                results.append(new.keys)
                slots, evicted = am.add_batch(new)
                capped = self._hold_caps(am, now, new.keys[0] if len(new.keys) == 1 else None)
                added.append((am, new, slots, evicted, labels, capped))
        else:
            assert planned is not None
            for am, new, slots, evicted, labels, placed in self._dedup.store(
                    groups, planned, now, window, events):
                results.append(placed)
                if not slots:  # repeats only: reinforcements never pass a cap
                    continue
                capped = self._hold_caps(am, now, new.keys[0] if len(new.keys) == 1 else None)
                added.append((am, new, slots, evicted, labels, capped))
        stored = self.on_stored
        if stored is not None:
            for am, new, *_ in added:
                if new.extras or new.source_event:
                    stored(am, new)
        semantic = self.semantic
        if semantic.available:
            texts = [text for _, new, *_ in added for text in new.content]
            keys = [(am, k) for am, new, *_ in added for k in new.keys]
            if semantic.pending is not None:  # async mode: a later tick attaches them
                if texts:
                    semantic.submit(keys, texts, now)
                vectors = None
            else:
                vectors = semantic.embed_keys(keys, texts, events)
            if vectors is not None:
                row = 0
                once = len({id(item[0]) for item in added}) == len(added)
                for am, new, slot_list, evicted, _, capped in added:
                    n = len(new.keys)
                    if once and not evicted and not capped:  # every record is still stored
                        semantic.attach_many(am, slot_list, new.keys, vectors[row:row + n])
                    else:
                        keep = [i for i, key in enumerate(new.keys)
                                if am.slot_of.get(key) == slot_list[i]]
                        semantic.attach_many(am, [slot_list[i] for i in keep],
                                             [new.keys[i] for i in keep],
                                             vectors[[row + i for i in keep]])
                    row += n
        report_created = self.wants(RecordCreated.name)
        report_expired = self.wants(RecordExpired.name)
        report_redacted = self.wants(RecordRedacted.name)
        report_compaction = self.wants(_COMPACTION)
        if report_created or report_expired or report_redacted or report_compaction:
            for am, new, _, evicted, labels, capped in added:
                agent_id = am.agent_id
                for i, key in enumerate(new.keys):
                    if report_expired and i in evicted:
                        events.extend(RecordExpired(id=r.id, layer=r.layer.value,
                                                    reason="overflow") for r in evicted[i])
                    rid = am.id_of(key)
                    if report_created:
                        events.append(RecordCreated(
                            id=rid, layer=LAYERS_BY_CODE[new.layer[i]].value,
                            agent_id=agent_id, importance=new.importance[i]))
                    if labels[i] and report_redacted:
                        events.append(RecordRedacted(id=rid, patterns=labels[i]))
                if report_expired:
                    events.extend(RecordExpired(id=r.id, layer=r.layer.value,
                                                reason="retention") for r in capped)
                if capped and report_compaction:
                    events.append(MemoryCompaction(agent_id=agent_id, removed=len(capped),
                                                   remaining=am.live))
        return results

    def _hold_caps(self, am: AgentMemory, now: int,
                   keep: int | None = None) -> Sequence[Removed]:
        """Evict down to the cap every capped layer of ``am`` past ``cap + slack``.

        The records go in compaction order (lowest decayed score first, flagged last, the
        ``protected_min`` best kept), so a layer never holds more than ``cap + slack``
        records whatever the tick budget: O(1) per ingest until the slack fills, then one
        O(n) numpy selection per ``slack`` ingests. ``keep`` (a single ingest's new key) is
        never the one evicted. The caller reports them (``memory:record:expired`` reason
        ``retention``, then one ``memory:compaction``).

        Returns:
            The records removed, in order (an empty tuple, the common case, when none).
        """
        if len(am.slot_of) - am.ring.live <= self._free_below:  # the common case: far below
            return ()
        codes, caps, hard = self._hard
        counts = am.layer_counts[codes]
        if not (counts > hard).any():
            return ()
        out: list[Removed] = []
        for i in np.flatnonzero(counts > hard).tolist():
            code = int(codes[i])
            excess = int(counts[i] - caps[i])
            victims = self._compactor.select(am, code, now, excess + (keep is not None))
            chosen = [key for key in victims.tolist() if key != keep][:excess]
            out.extend(am.remove(key) for key in chosen)
        return out

    def remove(self, am: AgentMemory, key: int, reason: str, events: list[Any]) -> Removed:
        """Remove one live record and queue ``memory:record:expired`` with ``reason``."""
        return self.remove_many(am, (key,), reason, events)[0]

    def remove_many(self, am: AgentMemory, keys: Sequence[int], reason: str,
                    events: list[Any]) -> list[Removed]:
        """:meth:`remove` of each of the live, distinct ``keys``, in order (one pass)."""
        removed = am.remove_many(keys)
        if self.wants(RecordExpired.name):
            events.extend(RecordExpired(id=r.id, layer=r.layer.value, reason=reason)
                          for r in removed)
        return removed

    # ------------------------------------------------------------------ forget / update
    def forget(self, record_ids: object, agent_id: object) -> int:
        """Remove records by id (all or nothing), or every record of one agent.

        Returns:
            How many records were removed (``memory:record:expired`` reason ``forgotten``).

        Raises:
            InputInvalidError: Neither or both of ``record_ids`` and ``agent_id``.
            RecordNotFoundError: An id is not a live record (nothing removed).
        """
        if (record_ids is None) == (agent_id is None):
            raise InputInvalidError("forget needs record_ids or agent_id (exactly one)",
                                    details={"field": "record_ids"})
        targets: list[tuple[AgentMemory, int]] = []
        if agent_id is not None:
            am = self.state.store.get(validate_agent_id(agent_id, self.ingestor.limits.agent_id))
            if am is not None:
                targets = [(am, key) for key in sorted(am.slot_of)]
        else:
            if isinstance(record_ids, str | bytes) or not isinstance(record_ids, Iterable):
                raise InputInvalidError("record_ids must be a list of record ids",
                                        details={"field": "record_ids"})
            seen: set[str] = set()
            for i, rid in enumerate(record_ids):
                found = self.reader.locate(rid)
                if found is None:
                    raise RecordNotFoundError(
                        f"forget: record_ids[{i}] is not a live record (nothing was removed); "
                        "pass ids of live records such as 'agent:0000000042'",
                        details={"field": "record_ids", "index": i})
                if rid not in seen:
                    seen.add(rid)
                    am, slot = found
                    targets.append((am, am.key.item(slot)))
        events: list[Any] = []
        for am, key in targets:
            self.remove(am, key, "forgotten", events)
        if agent_id is not None:
            for hook in self.forget_hooks:
                hook(str(agent_id))
        self.publish(events)
        return len(targets)

    def update(self, record_id: str, importance: object, tags: object,
               content: object) -> tuple[AgentMemory, int]:
        """Change a live record's importance, tags and/or content in place.

        The new content and tags are redacted like an ingest; a new content gets a new token
        estimate and is re-embedded by a later tick. Emits ``memory:record:updated``.

        Returns:
            The record's agent memory and slot.

        Raises:
            RecordNotFoundError: ``record_id`` is not a live record.
            InputInvalidError: A malformed value, or nothing to change (state unchanged).
        """
        found = self.reader.locate(record_id)
        if found is None:
            raise RecordNotFoundError(
                "update: no live record with that id (it may have expired or been "
                "forgotten); ids look like 'agent:0000000042'",
                details={"field": "record_id"})
        if importance is None and tags is None and content is None:
            raise InputInvalidError("update needs importance, tags or content",
                                    details={"field": "update"})
        item = validate_item("x" if content is None else content, MemoryLayer.EPISODIC,
                             importance, tags, limits=self.ingestor.limits)
        am, slot = found
        key = am.key.item(slot)
        redact = self.ingestor.redactor.redact
        fields: list[str] = []
        labels: tuple[str, ...] = ()
        changes: dict[str, Any] = {}
        if importance is not None:
            changes["importance"] = item.importance
            fields.append("importance")
        if tags is not None:
            red: list[str] = []
            for tag in item.tags:
                text, hits = redact(tag)
                red.append(text)
                labels += hits
            changes["tagset"] = self.state.store.tags.intern(tuple(dict.fromkeys(red)))
            fields.append("tags")
        if content is not None:
            text, hits = redact(item.content)
            labels += hits
            changes["content"] = text
            changes["tokens"] = self.ingestor.counter.count(text)
            fields.append("content")
        if labels:
            changes["redacted"] = True
        am.update(key, **changes)
        if content is not None:
            am.mark_embedded(slot, False)  # re-embedded by a later tick
            self.semantic.retry_agents.add(am.agent_id)
        events: list[Any] = []
        if self.wants(RecordUpdated.name):
            events.append(RecordUpdated(id=am.id_of(key), fields=tuple(fields)))
        if labels and self.wants(RecordRedacted.name):
            events.append(RecordRedacted(id=am.id_of(key),
                                         patterns=tuple(dict.fromkeys(labels))))
        self.publish(events)
        return am, slot

    def set_procedural(self, am: AgentMemory, key: int, importance: float,
                       meta: ProceduralMeta, now: int, events: list[Any]) -> None:
        """Reinforce the live procedural record ``key``: importance, ``metadata.procedural``.

        The recency anchor moves to ``now``; the rest of the record's metadata is kept.
        Queues ``memory:record:updated`` (reason ``procedural``). The change is the store's
        ``update`` (journaled as ``record.update`` in durable mode). O(1).
        """
        slot = am.slot_of[key]
        extra = replace(am.extra_of(key), procedural=meta)
        am.update(key, importance=importance, anchor=max(now, int(am.anchor[slot])),
                  extra=extra)
        if self.wants(RecordUpdated.name):
            events.append(RecordUpdated(id=am.id_of(key),
                                        fields=("importance", "recency_anchor", "metadata"),
                                        reason="procedural"))

    # ------------------------------------------------------------------ public operations
    def ingest_items(self, agent_id: str, pending: Sequence[PendingRecord],
                     now: int) -> list[str]:
        """Store validated items of one agent (capacity checked first); return their ids."""
        am, keys = self.ingest_keys(agent_id, pending, now)
        return [] if am is None else [am.id_of(k) for k in keys]

    def ingest_records(self, agent_id: str, pending: Sequence[PendingRecord],
                       now: int) -> IngestedRecords:
        """:meth:`ingest_items`, returning the records (ids formatted when first needed)."""
        _, keys = self.ingest_keys(agent_id, pending, now)
        return IngestedRecords.deferred(
            self.reader, len(keys), lambda: [f"{agent_id}:{key:010d}" for key in keys])

    def ingest_record(self, agent_id: str, item: PendingRecord, now: int) -> MemoryRecord:
        """Store one validated item (capacity checked first) and return its record.

        The common item (no metadata, no source event, no dedup window, no embedder) is
        stored by scalar stores, with no per-batch structure built; when no event reaches
        anyone (so no handler ran since), its record is built from the values stored.
        """
        state = self.state
        if item.metadata is not None or item.source_event is not None or self._dedup_on or (
                self.semantic.provider is not None and self.semantic.available):
            found, (key,) = self.ingest_keys(agent_id, (item,), now)
            assert found is not None
            return self.reader.build(found, found.slot_of[key])
        store = state.store
        am = store.get(agent_id)
        if am is None or len(am.slot_of) >= self._limit:
            if am is None:
                self.ingestor.redactor.refuse_private(agent_id, field="agent_id")
            self.check_capacity(am, agent_id, (item,))
            am = store.get_or_create(agent_id)
        vocabulary = state.vocabularies.get(agent_id)
        if vocabulary is None:
            vocabulary = state.vocabulary(agent_id)
        content, importance, tokens, deadline, tag_id, labels = self.ingestor.build_one(
            item, now, vocabulary, store.tags)
        key = am.reserve_key()
        layer = item.layer
        slot, evicted = am.add_one(key, layer.code, importance, item.flagged, now, tokens,
                                   deadline, tag_id, bool(labels), content)
        capped = self._hold_caps(am, now, keep=key)
        wants = self.bus.wants
        if wants(_CREATED) or ((evicted is not None or capped) and wants(_EXPIRED)) or (
                labels and wants(_REDACTED)) or (capped and wants(_COMPACTION)) or (
                logger.isEnabledFor(logging.DEBUG)):
            events: list[Any] = []
            if evicted is not None and self.wants(RecordExpired.name):
                events.append(RecordExpired(id=evicted.id, layer=evicted.layer.value,
                                            reason="overflow"))
            if capped and self.wants(RecordExpired.name):
                events.extend(RecordExpired(id=r.id, layer=r.layer.value, reason="retention")
                              for r in capped)
            if capped and self.wants(_COMPACTION):
                events.append(MemoryCompaction(agent_id=agent_id, removed=len(capped),
                                               remaining=am.live))
            if self.wants(RecordCreated.name):
                events.append(RecordCreated(id=am.id_of(key), layer=layer.value,
                                            agent_id=agent_id, importance=importance))
            if labels and self.wants(RecordRedacted.name):
                events.append(RecordRedacted(id=am.id_of(key), patterns=labels))
            self.publish(events)
            return self.reader.build(am, slot)  # a handler may have changed the record
        return self.reader.built_new(am, slot, key, layer, now, importance, item.ttl, content,
                                     tag_id, item.flagged, bool(labels))

    def ingest_keys(self, agent_id: str, pending: Sequence[PendingRecord],
                    now: int) -> tuple[AgentMemory | None, Sequence[int]]:
        """:meth:`ingest_items`, returning the agent's memory and the new records' keys."""
        state = self.state
        am = state.store.get(agent_id)
        if am is None and pending:
            self.ingestor.redactor.refuse_private(agent_id, field="agent_id")
        self.check_capacity(am, agent_id, pending)
        if not pending:
            return am, []
        if am is None:
            am = state.store.get_or_create(agent_id)
            state.vocabulary(agent_id)
        events: list[Any] = []
        keys = self.store(am, pending, now, events)
        self.publish(events)
        return am, keys

    def ingest_batch(self, items: object, now: int) -> IngestedRecords:
        """Store a whole frame of items, each naming its agent, all or nothing.

        Items are grouped by agent (first-appearance order kept within an agent); agents are
        stored in sorted id order, so the result does not depend on how the host interleaved
        them, and the returned records are in input order.

        Raises:
            InputInvalidError: A malformed item (the message gives its index).
            CapacityExceededError: An agent would pass ``max_records_per_agent``.
        """
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InputInvalidError("items must be a list of mappings, each with 'agent_id' "
                                    "and 'content'", details={"field": "items"})
        groups, owners = group_frame(items, self.ingestor.limits)
        n = len(owners)
        store = self.state.store
        limit = self._limit
        order = sorted(groups)
        pairs: list[tuple[AgentMemory, Sequence[PendingRecord]]] = []
        missing = False
        for agent_id in order:
            found = store.get(agent_id)
            group = groups[agent_id]
            if found is None or len(found.slot_of) + len(group) > limit:
                if found is None:
                    self.ingestor.redactor.refuse_private(agent_id, field="agent_id")
                self.check_capacity(found, agent_id, group)
                missing = missing or found is None
            pairs.append((found, group))  # type: ignore[arg-type]  # created below
        if missing:  # every agent passed the checks: create the new ones
            pairs = [(store.get_or_create(agent_id), group) if found is None else (found, group)
                     for agent_id, (found, group) in zip(order, pairs, strict=True)]
        events: list[Any] = []
        stored = self.store_groups(pairs, now, events)
        self.publish(events)

        def make_ids() -> list[str]:
            keys_of = {agent_id: iter(keys) for agent_id, keys in zip(order, stored, strict=True)}
            return [f"{agent_id}:{next(keys_of[agent_id]):010d}" for agent_id in owners]

        return IngestedRecords.deferred(self.reader, n, make_ids)

