"""Ingestion (index 3): validated items -> redacted, scored column values.

``Ingestor`` turns items that passed :mod:`f09_memory.ingestion.validation` into the column
values the store keeps (``NewRecords``): redaction (content, tags, source event; in
metadata, attribute keys and string values, source refs, social and procedural ids), token
estimate, heuristic importance when none was given. No record object is built.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from typing import Any, cast

from f09_memory.config.config import MemoryConfig
from f09_memory.importance.heuristic import ImportanceModel, Vocabulary
from f09_memory.ingestion.frame_checks import PendingColumns
from f09_memory.ingestion.validation import ItemLimits, PendingRecord
from f09_memory.packing.tokens import HeuristicTokenCounter
from f09_memory.protocols import TokenCounter
from f09_memory.redaction.redactor import Redactor
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.records import RecordMetadata
from f09_memory.store.records import (
    NO_DEADLINE,
    STATUS_CODE,
    NewRecords,
    RecordExtra,
    shared_extra,
)
from f09_memory.store.tags import TagTable

__all__ = ["Ingestor"]

_CLEAN_TAGS_MAX = 4096
"""Most tags (and attribute keys) remembered as holding nothing to redact."""


class Ingestor:
    """Turns validated items into column values; owns the redactor and the importance model."""

    def __init__(self, config: MemoryConfig, counter: TokenCounter) -> None:
        self.config = config
        self.counter = counter
        self.redactor = Redactor.from_config(config)
        self.importance = ImportanceModel(config.importance)
        self.limits = ItemLimits.of(config)
        """The config's size limits, for validation."""
        self._clean_tags: dict[str, None] = {}
        """Tags known to hold nothing to redact (tags repeat: most are checked once)."""
        self._clean_keys: dict[str, None] = {}
        """Attribute keys known to hold nothing to redact."""

    def build_many(
        self,
        items: Sequence[PendingRecord],
        first_key: int,
        now: int,
        vocabulary: Vocabulary,
        tags: TagTable,
        anchor: int | None = None,
    ) -> tuple[NewRecords, Sequence[tuple[str, ...]]]:
        """:meth:`build_groups` of one agent's items."""
        return self.build_groups([(items, first_key, vocabulary)], now, tags, anchor)[0]

    def build_groups(
        self,
        groups: Sequence[tuple[Sequence[PendingRecord], int, Vocabulary]],
        now: int,
        tags: TagTable,
        anchor: int | Sequence[int] | None = None,
        own_refs: bool = False,
    ) -> list[tuple[NewRecords, Sequence[tuple[str, ...]]]]:
        """The column values of validated items and their redaction labels, per group.

        A group is one agent's items, the first of the keys reserved for them and the
        agent's vocabulary. Redaction covers the content, tags, source event and string
        attributes; importance is the heuristic's when an item has none; ``anchor`` is the
        recency anchor (default ``now``; a summary takes its sources'), or each group's
        (a round of summaries). ``own_refs``: the items' ``sourceRefIds`` are this engine's
        own record ids (a summary's sources), kept as they are: ids are stored, logged and
        sent in events unredacted anyway (an agent id holding private data is refused), and
        a redaction could only corrupt them.

        Every side effect (redaction counts, each vocabulary, tag ids) happens as if the
        items were built one by one, group after group; the common parts run once for all
        the groups: one redaction gate, one token estimate, constant columns as repeats;
        a vocabulary takes its group's words at once when every importance is given.

        Returns:
            Per group, the column values and each item's redaction labels (in the order
            content, tags, source event, attributes; ``()`` when nothing was replaced).
        """
        n = sum(len(items) for items, _, _ in groups)
        if not n:
            return [(NewRecords(), []) for _ in groups]
        contents, layers, given, tag_tuples, metas, ttls, flags, sources = _columns(groups, n)
        texts, hit_lists = self.redactor.redact_many(contents)
        labels: list[tuple[str, ...]] = [()] * n if hit_lists is None else hit_lists
        simple = metas.count(None) == n
        tagset = [0] * n if simple and not any(tag_tuples) else self._tag_ids(
            tag_tuples, metas, labels, tags)
        flagged = list(flags)
        status = [0] * n
        source_events: dict[int, str] = {}
        extras: dict[int, RecordExtra] = {}
        if not simple or sources.count(None) != n:
            self._sparse(metas, sources, labels, flagged, status, source_events, extras,
                         own_refs)
        # Importance: the heuristic's where none was given (each vocabulary in item order).
        model = self.importance
        importance: list[float]
        if given.count(None) == 0:
            importance = list(given)
            if len(groups) == 1:
                model.observe_many(texts, groups[0][2])
            else:
                model.observe_runs(texts, [(len(items), vocabulary)
                                           for items, _, vocabulary in groups])
        else:
            importance = []
            row = 0
            for items, _, vocabulary in groups:
                for i in range(row, row + len(items)):
                    value = given[i]
                    if value is None:
                        importance.append(model.score(texts[i], vocabulary, flagged=flagged[i]))
                    else:
                        model.observe(texts[i], vocabulary)
                        importance.append(value)
                row += len(items)
        episodic = MemoryLayer.EPISODIC
        codes = ([episodic.code] * n if layers.count(episodic) == n
                 else [layer.code for layer in layers])
        deadline = ([NO_DEADLINE] * n if ttls.count(None) == n
                    else [NO_DEADLINE if ttl is None else now + ttl for ttl in ttls])
        tokens = self._count_tokens(texts)
        if any(labels):
            redacted = [bool(h) for h in labels]
            labels = [tuple(dict.fromkeys(h)) if h else () for h in labels]
        else:
            redacted = [False] * n
        anchors = [now if anchor is None else anchor] * len(groups) if not isinstance(
            anchor, Sequence) else anchor
        if len(groups) == 1:
            first_key = groups[0][1]
            return [(NewRecords(
                list(range(first_key, first_key + n)), codes, importance, flagged, [now] * n,
                [anchors[0]] * n, tokens, deadline, status, redacted, tagset, texts,
                source_events, extras), labels)]
        # Each group's columns are tuple slices: a tuple of numbers and strings leaves the
        # garbage collector's tracking at its first collection (a list would stay tracked).
        out: list[tuple[NewRecords, Sequence[tuple[str, ...]]]] = []
        row = 0
        codes_t, importance_t, flagged_t, tokens_t, deadline_t, status_t, redacted_t, tagset_t, \
            texts_t, labels_t = map(tuple, (codes, importance, flagged, tokens, deadline, status,
                                            redacted, tagset, texts, labels))
        for (items, first_key, _), group_anchor in zip(groups, anchors, strict=True):
            k = len(items)
            end = row + k
            out.append((NewRecords(
                range(first_key, first_key + k), codes_t[row:end], importance_t[row:end],
                flagged_t[row:end], (now,) * k, (group_anchor,) * k, tokens_t[row:end],
                deadline_t[row:end], status_t[row:end], redacted_t[row:end], tagset_t[row:end],
                texts_t[row:end]), labels_t[row:end]))
            row = end
        if source_events or extras:  # by position in the batch, as NewRecords keeps them
            starts = list(itertools.accumulate((len(items) for items, _, _ in groups),
                                               initial=0))
            for sparse, name in ((source_events, "source_event"), (extras, "extras")):
                for i, value in sparse.items():
                    g = bisect.bisect_right(starts, i) - 1
                    getattr(out[g][0], name)[i - starts[g]] = value
        return out

    def build_one(self, item: PendingRecord, now: int, vocabulary: Vocabulary,
                  tags: TagTable) -> tuple[str, float, int, int, int, tuple[str, ...]]:
        """:meth:`build_many` of one item without sparse parts (no metadata, no source event).

        Returns:
            ``(content, importance, tokens, deadline, tag id, labels)``: the other columns
            are the item's own (layer, flagged) or constants (created and anchor ``now``,
            status active, redacted when ``labels`` is not empty).
        """
        content, hits = self.redactor.redact(item.content)
        tag_tuple = item.tags
        tag_id = 0
        if tag_tuple:
            if all(map(self._clean_tags.__contains__, tag_tuple)):
                tag_id = tags.intern(tag_tuple)
            else:
                labels = [hits]
                tag_id = self._tag_ids((tag_tuple,), (None,), labels, tags)[0]
                hits = labels[0]
        if item.importance is None:
            importance = self.importance.score(content, vocabulary, flagged=item.flagged)
        else:
            importance = item.importance
            self.importance.observe(content, vocabulary)
        ttl = item.ttl
        return (content, importance, self.counter.count(content),
                NO_DEADLINE if ttl is None else now + ttl, tag_id,
                tuple(dict.fromkeys(hits)) if hits else ())

    def _tag_ids(self, tag_tuples: Sequence[tuple[str, ...]],
                 metas: Sequence[RecordMetadata | None], labels: list[tuple[str, ...]],
                 tags: TagTable) -> list[int]:
        """Each item's tag tuple id, interned in item order.

        A tuple is the metadata's tags then the item's own, redacted unless known clean;
        ``labels`` receive the tags' redaction labels.
        """
        clean = self._clean_tags
        interned: dict[tuple[str, ...], int] = {}  # clean tuples seen in this batch
        intern = tags.intern
        redact = self.redactor.redact
        tagset = [0] * len(tag_tuples)
        for i, meta in enumerate(metas):
            tag_tuple = tag_tuples[i] if meta is None or not meta.tags else tuple(
                dict.fromkeys((*meta.tags, *tag_tuples[i])))
            if not tag_tuple:
                continue
            found = interned.get(tag_tuple)
            if found is None:
                if all(map(clean.__contains__, tag_tuple)):
                    found = interned[tag_tuple] = intern(tag_tuple)
                else:
                    red_tags = []
                    for t in tag_tuple:
                        rt, h = redact(t)
                        red_tags.append(rt)
                        if h:
                            labels[i] += h
                        elif len(clean) < _CLEAN_TAGS_MAX:
                            clean[t] = None  # nothing to redact in it: skip it next time
                    found = intern(tuple(dict.fromkeys(red_tags)))
            tagset[i] = found
        return tagset

    def _sparse(self, metas: Sequence[RecordMetadata | None], sources: Sequence[str | None],
                labels: list[tuple[str, ...]], flagged: list[bool], status: list[int],
                source_events: dict[int, str], extras: dict[int, RecordExtra],
                own_refs: bool = False) -> None:
        """The sparse parts of the items, by position.

        Redacted source events, redacted metadata extras (see :meth:`_extra`), the
        metadata's flag and claim status. Items sharing a metadata object (a frame's equal
        attributes do) share its extra, made once when nothing in it was redacted (a
        redaction is counted per item, so such an extra is made per item).
        """
        redact = self.redactor.redact
        clean: dict[int, RecordExtra] = {}  # id of a metadata (alive in metas) -> its extra
        for i, meta in enumerate(metas):
            source_event = sources[i]
            if source_event is None and meta is not None:
                source_event = meta.source_event
            if source_event is not None:
                source_event, h = redact(source_event)
                labels[i] += h
                source_events[i] = source_event
            if meta is None:
                continue
            flagged[i] = flagged[i] or meta.flagged
            extra = clean.get(id(meta))
            if extra is None:
                extra, h = self._extra(meta, own_refs)
                if h:
                    labels[i] += h
                else:
                    clean[id(meta)] = extra
            if not extra.is_empty():
                extras[i] = extra
                status[i] = STATUS_CODE.get(
                    str(extra.attributes.get("claimStatus", "active")), 0)

    def _extra(self, meta: RecordMetadata,
               own_refs: bool = False) -> tuple[RecordExtra, tuple[str, ...]]:
        """The metadata's sparse part, redacted, and the labels of what was replaced.

        Redacted: attribute keys and string values, ``source_ref_ids`` (unless ``own_refs``:
        this engine's record ids), ``social.other_agent_id``, ``procedural.pattern_id`` and
        ``spatial.region`` (all host-given text).
        """
        redactor = self.redactor
        if not redactor.enabled:
            return shared_extra(RecordExtra(meta.source_ref_ids, meta.spatial, meta.social,
                                            meta.procedural, dict(meta.attributes))), ()
        redact = redactor.redact
        hits: tuple[str, ...] = ()
        clean = self._clean_keys
        attrs: dict[str, Any] = {}
        for k, v in meta.attributes.items():
            if k not in clean:
                key, h = redact(k)
                if h:
                    hits += h
                    k = key
                elif len(clean) < _CLEAN_TAGS_MAX:
                    clean[k] = None  # attribute keys repeat: check each once
            if isinstance(v, str):
                v, h = redact(v)
                hits += h
            attrs[k] = v
        refs = meta.source_ref_ids
        if refs and not own_refs:
            red_refs, ref_hits = redactor.redact_many(refs)
            if ref_hits is not None:
                refs = tuple(red_refs)
                hits += tuple(h for hs in ref_hits for h in hs)
        social, procedural = meta.social, meta.procedural
        if social is not None and social.other_agent_id:
            other, h = redact(social.other_agent_id)
            if h:
                hits += h
                social = social.model_copy(update={"other_agent_id": other})
        if procedural is not None and procedural.pattern_id:
            pattern_id, h = redact(procedural.pattern_id)
            if h:
                hits += h
                procedural = procedural.model_copy(update={"pattern_id": pattern_id})
        spatial = meta.spatial
        if spatial is not None and spatial.region:
            region, h = redact(spatial.region)
            if h:
                hits += h
                spatial = spatial.model_copy(update={"region": region})
        return shared_extra(RecordExtra(refs, spatial, social, procedural, attrs)), hits

    def _count_tokens(self, texts: Sequence[str]) -> list[int]:
        counter = self.counter
        if type(counter) is HeuristicTokenCounter:
            return counter.count_many(texts)
        return [counter.count(text) for text in texts]


def _columns(groups: Sequence[tuple[Sequence[PendingRecord], int, Vocabulary]], n: int,
             ) -> tuple[Sequence[Any], ...]:
    """The groups' ``n`` items field by field, in ``PendingRecord`` field order.

    Groups held as columns (``PendingColumns``, the plain items of an ``ingest_batch``
    frame) are joined column by column; others are read item by item.
    """
    if all(type(items) is PendingColumns for items, _, _ in groups):
        content, importance, layer, tags, flagged, metadata = PendingColumns.joined(
            [cast(PendingColumns, items) for items, _, _ in groups])
        none = (None,) * n
        return content, layer, importance, tags, metadata, none, flagged, none
    return tuple(zip(*(item for items, _, _ in groups for item in items), strict=True))
