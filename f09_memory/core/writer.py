"""Writer: the write path (validate, redact, score, store as columns, embed, publish).

Every state change to records goes through here: ingest of one item, of many for one agent,
of a whole crowd's frame (``ingest_batch``), summary records, removals with their events,
and in-place updates. Events are queued while the state changes and published after it is
complete; nobody-listening events are never built.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from f09_memory.bus import EngineBus, RecordCreated, RecordExpired, RecordRedacted
from f09_memory.core.records import IngestedRecords, RecordReader
from f09_memory.core.state import EngineState
from f09_memory.errors import CapacityExceededError, InputInvalidError, MemoryEngineError
from f09_memory.ingestion.pipeline import (
    Ingestor,
    PendingRecord,
    validate_agent_id,
    validate_mapping,
)
from f09_memory.retrieval.semantic import SemanticMemory
from f09_memory.schema.enums import LAYERS_BY_CODE, MemoryLayer
from f09_memory.store.agent import AgentMemory, NewRecords, Removed

__all__ = ["Writer"]

logger = logging.getLogger("f09_memory")
_EPISODIC = MemoryLayer.EPISODIC
_TAGS = {"memory:record:created": "[MEM][CREATE]", "memory:record:redacted": "[MEM][REDACT]",
         "memory:record:expired": "[MEM][EXPIRE]"}


def _indexed(exc: MemoryEngineError, i: int) -> MemoryEngineError:
    exc.details["index"] = i
    exc.message = f"item {i}: {exc.message}"
    exc.args = (exc.message,)
    return exc


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

    # ------------------------------------------------------------------ events
    def publish(self, events: list[Any]) -> None:
        """Emit queued events in order (and log them at DEBUG with the spec's tags)."""
        bus = self.bus
        debug = logger.isEnabledFor(logging.DEBUG)
        for ev in events:
            if debug:
                logger.debug("%s %s %s", _TAGS.get(ev.name, "[MEM]"), ev.name, ev.to_dict())
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
                f"agent {agent_id!r:.80} would hold {after} records, above "
                f"max_records_per_agent={limit}; raise the ceiling, lower retention caps, or "
                "let compaction run (engine.tick)",
                details={"agentId": agent_id, "live": live, "limit": limit},
            )

    @staticmethod
    def validate_items(items: object) -> list[PendingRecord]:
        """Validate an ``ingest_many`` item list (all before any is stored).

        Raises:
            InputInvalidError: Not a list, or an item is malformed (the message gives its
                index).
        """
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InputInvalidError("items must be a list of mappings or strings",
                                    details={"field": "items"})
        pending: list[PendingRecord] = []
        for i, raw in enumerate(items):
            try:
                pending.append(validate_mapping(raw))
            except MemoryEngineError as exc:
                raise _indexed(exc, i) from None
        return pending

    # ------------------------------------------------------------------ storing
    def store(self, am: AgentMemory, items: Sequence[PendingRecord], now: int,
              events: list[Any], anchor: int | None = None) -> list[int]:
        """Build, store and embed validated items of one agent; queue their events.

        Returns:
            The new records' keys, in order.
        """
        return self.store_groups([(am, items)], now, events, anchor)[0]

    def store_groups(self, groups: Sequence[tuple[AgentMemory, Sequence[PendingRecord]]],
                     now: int, events: list[Any],
                     anchor: int | None = None) -> list[list[int]]:
        """:meth:`store` for several agents, with one embedding call for all their texts.

        Returns:
            Each group's new keys, in order.
        """
        state = self.state
        tags = state.store.tags
        build = self.ingestor.build
        added = []
        for am, items in groups:
            vocabulary = state.vocabulary(am.agent_id)
            new = NewRecords()
            labels = [build(item, am.reserve_key(), now, vocabulary, tags, new, anchor)
                      for item in items]
            slots, evicted = am.add_batch(new)
            added.append((am, new, slots.tolist(), evicted, labels))
        semantic = self.semantic
        if semantic.available:
            texts = [text for _, new, _, _, _ in added for text in new.content]
            keys = [(am, k) for am, new, _, _, _ in added for k in new.keys]
            vectors = semantic.embed_keys(keys, texts, events)
            if vectors is not None:
                row = 0
                for am, new, slot_list, _, _ in added:
                    for i, key in enumerate(new.keys):
                        if am.slot_of.get(key) == slot_list[i]:  # not evicted by a later one
                            semantic.attach(am, slot_list[i], key, vectors[row + i])
                    row += len(new.keys)
        report_created = self.wants(RecordCreated.name)
        report_expired = self.wants(RecordExpired.name)
        report_redacted = self.wants(RecordRedacted.name)
        if report_created or report_expired or report_redacted:
            for am, new, _, evicted, labels in added:
                agent_id = am.agent_id
                for i, key in enumerate(new.keys):
                    if report_expired:
                        events.extend(RecordExpired(id=r.id, layer=r.layer.value,
                                                    reason="overflow") for r in evicted[i])
                    rid = am.id_of(key)
                    if report_created:
                        events.append(RecordCreated(
                            id=rid, layer=LAYERS_BY_CODE[new.layer[i]].value,
                            agent_id=agent_id, importance=new.importance[i]))
                    if labels[i] and report_redacted:
                        events.append(RecordRedacted(id=rid, patterns=labels[i]))
        return [new.keys for _, new, _, _, _ in added]

    def remove(self, am: AgentMemory, key: int, reason: str, events: list[Any]) -> Removed:
        """Remove one live record and queue ``memory:record:expired`` with ``reason``."""
        removed = am.remove(key)
        if self.wants(RecordExpired.name):
            events.append(RecordExpired(id=removed.id, layer=removed.layer.value, reason=reason))
        return removed

    # ------------------------------------------------------------------ public operations
    def ingest_items(self, agent_id: str, pending: Sequence[PendingRecord],
                     now: int) -> list[str]:
        """Store validated items of one agent (capacity checked first); return their ids."""
        state = self.state
        am = state.store.get(agent_id)
        self.check_capacity(am, agent_id, pending)
        if not pending:
            return []
        if am is None:
            am = state.store.get_or_create(agent_id)
            state.vocabulary(agent_id)
        events: list[Any] = []
        keys = self.store(am, pending, now, events)
        self.publish(events)
        return [am.id_of(k) for k in keys]

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
        groups: dict[str, list[tuple[int, PendingRecord]]] = {}
        n = 0
        for i, raw in enumerate(items):
            n += 1
            try:
                if not isinstance(raw, Mapping):
                    raise InputInvalidError(
                        "item must be a mapping with 'agent_id' and 'content'",
                        details={"field": "item"})
                body = dict(raw)
                agent_id = validate_agent_id(body.pop("agent_id", None))
                pending = validate_mapping(body)
            except MemoryEngineError as exc:
                raise _indexed(exc, i) from None
            groups.setdefault(agent_id, []).append((i, pending))
        store = self.state.store
        for agent_id in sorted(groups):
            self.check_capacity(store.get(agent_id), agent_id, [p for _, p in groups[agent_id]])
        ids: list[str] = [""] * n
        events: list[Any] = []
        order = sorted(groups)
        ams = [store.get_or_create(agent_id) for agent_id in order]
        stored = self.store_groups(
            [(am, [p for _, p in groups[am.agent_id]]) for am in ams], now, events)
        for am, keys in zip(ams, stored, strict=True):
            for (i, _), key in zip(groups[am.agent_id], keys, strict=True):
                ids[i] = am.id_of(key)
        self.publish(events)
        return IngestedRecords(self.reader, ids)

