"""Ingestion (index 3): raw input -> validated, redacted, scored column values.

``validate_item`` checks one input and raises a taxonomy error naming the bad field before
anything is stored; ``Ingestor.build`` turns a validated item into the column values the
store keeps (``NewRecords``): redaction (content, tags, source event, string attributes),
token estimate, heuristic importance when none was given. No record object is built.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, cast

from f09_memory._validate import MAX_LOGICAL_TIME
from f09_memory.config.config import MemoryConfig
from f09_memory.errors import InputInvalidError
from f09_memory.importance.heuristic import ImportanceModel, Vocabulary
from f09_memory.protocols import TokenCounter
from f09_memory.redaction.redactor import Redactor
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.records import RecordMetadata
from f09_memory.store.records import NO_DEADLINE, STATUS_CODE, NewRecords, RecordExtra
from f09_memory.store.tags import TagTable

__all__ = [
    "ITEM_FIELDS",
    "MAX_CONTENT_CHARS",
    "Ingestor",
    "PendingRecord",
    "validate_agent_id",
    "validate_item",
    "validate_mapping",
]

ITEM_FIELDS = frozenset(
    {"content", "layer", "importance", "tags", "metadata", "ttl", "flagged", "source_event"}
)
"""Keys accepted in an ``ingest_many`` item mapping."""

MAX_AGENT_ID_LEN = 256
_CLEAN_TAGS_MAX = 4096
MAX_CONTENT_CHARS = 65_536
_LAYER_BY_VALUE = {layer.value: layer for layer in MemoryLayer}


def _bad(field: str, problem: str, fix: str, **details: Any) -> InputInvalidError:
    return InputInvalidError(f"{field} {problem}; {fix}", details={"field": field, **details})


def validate_agent_id(agent_id: object) -> str:
    """Return ``agent_id`` if it is a usable agent id.

    Raises:
        InputInvalidError: Not a non-empty string of at most 256 characters.
    """
    if not isinstance(agent_id, str) or not agent_id or len(agent_id) > MAX_AGENT_ID_LEN:
        raise _bad("agent_id", f"is {type(agent_id).__name__} {agent_id!r:.40}",
                   "pass a non-empty string of at most 256 characters")
    return agent_id


class PendingRecord(NamedTuple):
    """A validated ingest input, not yet redacted or stored."""

    content: str
    layer: MemoryLayer
    importance: float | None
    tags: tuple[str, ...]
    metadata: RecordMetadata | None
    ttl: int | None
    flagged: bool
    source_event: str | None


def validate_item(
    content: object,
    layer: object = MemoryLayer.EPISODIC,
    importance: object = None,
    tags: object = None,
    metadata: object = None,
    ttl: object = None,
    flagged: object = False,
    source_event: object = None,
) -> PendingRecord:
    """Validate one ingest input. Pure: touches no state.

    Raises:
        InputInvalidError: A field is malformed; the message names it and the fix.
    """
    if not isinstance(content, str) or not content.strip():
        raise _bad("content", "is empty or not a string", "pass the memory text as a non-empty str")
    if len(content) > MAX_CONTENT_CHARS:
        raise _bad("content", f"has {len(content)} characters",
                   f"split it: at most {MAX_CONTENT_CHARS} characters per record")
    if isinstance(layer, MemoryLayer):
        lay = layer
    else:
        found = _LAYER_BY_VALUE.get(layer) if isinstance(layer, str) else None
        if found is None:
            raise _bad("layer", f"{layer!r:.40} is unknown",
                       f"use one of {[x.value for x in MemoryLayer]}")
        lay = found
    imp: float | None = None
    if importance is not None:
        if type(importance) is not float and (
                isinstance(importance, bool) or not isinstance(importance, (int, float))):
            raise _bad("importance", f"is {type(importance).__name__}", "pass a float in 0..1")
        imp = float(importance)
        if not (0.0 <= imp <= 1.0) or math.isnan(imp):
            raise _bad("importance", f"{imp!r} is outside 0..1", "pass a float in 0..1",
                       value=imp)
    tag_tuple: tuple[str, ...] = ()
    if tags is not None:
        kind = type(tags)
        if kind is not list and kind is not tuple and (
                isinstance(tags, str) or not isinstance(tags, Sequence | set | frozenset)):
            raise _bad("tags", f"is {kind.__name__}", "pass a list of strings")
        if isinstance(tags, set | frozenset):
            if not all(type(t) is str for t in tags):
                raise _bad("tags", "contains an empty or non-string tag",
                           "every tag must be a non-empty string")
            items = sorted(tags)
        else:
            items = list(cast(Iterable[object], tags))  # a list, tuple or Sequence (checked)
        stripped = []
        for t in items:
            cleaned = t.strip() if type(t) is str else ""
            if not cleaned:
                raise _bad("tags", "contains an empty or non-string tag",
                           "every tag must be a non-empty string")
            stripped.append(cleaned)
        tag_tuple = tuple(dict.fromkeys(stripped))
    meta: RecordMetadata | None = None
    if metadata is not None:
        if not isinstance(metadata, Mapping | RecordMetadata):
            raise _bad("metadata", f"is {type(metadata).__name__}",
                       "pass a mapping with the MemoryRecord.metadata fields")
        meta = RecordMetadata.parse(metadata)
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or not (
            0 < ttl < MAX_LOGICAL_TIME)):
        raise _bad("ttl", "is not a positive integer below 2**62",
                   "pass the lifetime in logical time units (> 0), or None to keep it")
    if not isinstance(flagged, bool):
        raise _bad("flagged", f"is {type(flagged).__name__}", "pass True or False")
    if source_event is not None and not isinstance(source_event, str):
        raise _bad("source_event", f"is {type(source_event).__name__}", "pass a string or None")
    return PendingRecord(content, lay, imp, tag_tuple, meta, ttl, flagged, source_event)


def validate_mapping(item: object) -> PendingRecord:
    """Validate one ``ingest_many`` item (a mapping of :data:`ITEM_FIELDS`).

    Raises:
        InputInvalidError: Not a mapping, an unknown key, or a malformed field.
    """
    if isinstance(item, str):
        return validate_item(item)
    if not isinstance(item, Mapping):
        raise _bad("item", f"is {type(item).__name__}",
                   "pass a mapping such as {'content': ..., 'importance': ...} or a string")
    if not ITEM_FIELDS.issuperset(item):
        unknown = sorted(str(k)[:40] for k in item if k not in ITEM_FIELDS)
        raise _bad("item", f"has unknown keys {unknown}", f"use only {sorted(ITEM_FIELDS)}")
    if "content" not in item:
        raise _bad("content", "is missing", "every item needs 'content'")
    return validate_item(**item)


class Ingestor:
    """Turns validated items into column values; owns the redactor and the importance model."""

    def __init__(self, config: MemoryConfig, counter: TokenCounter) -> None:
        self.config = config
        self.counter = counter
        self.redactor = Redactor(
            config.redact_patterns, salt=config.redaction_salt, enabled=config.redaction_mode
        )
        self.importance = ImportanceModel(config.importance)
        self._clean_tags: dict[str, None] = {}
        """Tags known to hold nothing to redact (tags repeat: most are checked once)."""

    def build(
        self,
        item: PendingRecord,
        key: int,
        now: int,
        vocabulary: Vocabulary,
        tags: TagTable,
        out: NewRecords,
        anchor: int | None = None,
    ) -> tuple[str, ...]:
        """Append the column values of a validated item to ``out``; return redaction labels.

        Redaction covers the content, tags, source event and string attributes; importance
        is the heuristic's when the item has none; ``anchor`` is the recency anchor
        (default ``now``; a summary takes its sources').
        """
        redact = self.redactor.redact
        content, labels = redact(item.content)
        meta = item.metadata
        tag_tuple = item.tags if meta is None else tuple(
            dict.fromkeys((*meta.tags, *item.tags)))
        if tag_tuple:
            clean = self._clean_tags
            if not all(t in clean for t in tag_tuple):
                red_tags = []
                for t in tag_tuple:
                    rt, h = redact(t)
                    red_tags.append(rt)
                    if h:
                        labels += h
                    elif len(clean) < _CLEAN_TAGS_MAX:
                        clean[t] = None  # nothing to redact in it: skip it next time
                tag_tuple = tuple(dict.fromkeys(red_tags))
        source_event = item.source_event
        if source_event is None and meta is not None:
            source_event = meta.source_event
        if source_event is not None:
            source_event, h = redact(source_event)
            labels += h
        flagged = item.flagged or (meta is not None and meta.flagged)
        status = 0
        if meta is not None:
            attrs: dict[str, Any] = {}
            for k, v in meta.attributes.items():
                if isinstance(v, str):
                    v, h = redact(v)
                    labels += h
                attrs[k] = v
            extra = RecordExtra(meta.source_ref_ids, meta.spatial, meta.social, meta.procedural,
                                attrs)
            if not extra.is_empty():
                out.extras[len(out.keys)] = extra
                status = STATUS_CODE.get(str(attrs.get("claimStatus", "active")), 0)
        if source_event is not None:
            out.source_event[len(out.keys)] = source_event
        if item.importance is None:
            importance = self.importance.score(content, vocabulary, flagged=flagged)
        else:
            importance = item.importance
            self.importance.observe(content, vocabulary)
        out.keys.append(key)
        out.layer.append(item.layer.code)
        out.importance.append(importance)
        out.flagged.append(flagged)
        out.created.append(now)
        out.anchor.append(now if anchor is None else anchor)
        out.tokens.append(self.counter.count(content))
        out.deadline.append(NO_DEADLINE if item.ttl is None else now + item.ttl)
        out.status.append(status)
        out.redacted.append(bool(labels))
        out.tagset.append(tags.intern(tag_tuple) if tag_tuple else 0)
        out.content.append(content)
        return tuple(dict.fromkeys(labels)) if labels else ()
