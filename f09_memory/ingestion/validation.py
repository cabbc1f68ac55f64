"""Ingest validation (index 3): every input checked before anything is stored.

``validate_item`` / ``validate_mapping`` check one input against the engine's size limits
(:class:`ItemLimits`) and raise a taxonomy error naming the bad field and its fix;
``simple_pending`` is their fast path for a plain item (:mod:`.frame_checks` has the same
checks over a whole ``ingest_batch`` frame, column by column). Pure: nothing here reads or
writes engine state. ``pipeline.Ingestor`` turns what passes into column values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, cast

from f09_memory._validate import MAX_LOGICAL_TIME, is_text, not_text, too_long
from f09_memory.config.config import MemoryConfig
from f09_memory.errors import InputInvalidError
from f09_memory.schema.base import trusted_factory
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.records import RecordMetadata

__all__ = [
    "CONFIG_FIELDS",
    "DEFAULT_LIMITS",
    "ITEM_FIELDS",
    "MAX_AGENT_ID_LEN",
    "MAX_CONTENT_CHARS",
    "MAX_SOURCE_REFS",
    "ItemLimits",
    "PendingRecord",
    "attributes_metadata",
    "clean_attributes",
    "plain_attributes",
    "simple_pending",
    "validate_agent_id",
    "validate_item",
    "validate_mapping",
]

ITEM_FIELDS = frozenset(
    {"content", "layer", "importance", "tags", "metadata", "ttl", "flagged", "source_event"}
)
"""Keys accepted in an ``ingest_many`` item mapping."""


class ItemLimits(NamedTuple):
    """How large a stored record may be: the ``max_*`` fields of MemoryConfig.

    Each bounds what one caller mistake can cost (memory, snapshot size, hashing time):
    an input past a limit raises ``MEMORY_INPUT_INVALID`` naming the limit and the
    ``MemoryConfig`` field that raises it (:data:`CONFIG_FIELDS`).
    """

    content: int = 65_536
    """Characters of content (``max_content_chars``)."""
    agent_id: int = 256
    """Characters of an agent id (``max_agent_id_chars``)."""
    tag: int = 256
    """Characters of one tag (``max_tag_chars``)."""
    tags: int = 256
    """Tags of one record, metadata tags included (``max_tags_per_record``)."""
    source_event: int = 1_024
    """Characters of a source event, and of each source ref id (``max_source_event_chars``)."""
    attribute: int = 4_096
    """Characters of an attribute key or string value, of a procedural ``pattern_id`` and
    of a spatial ``region`` (``max_attribute_chars``); a social ``other_agent_id`` has the
    agent id limit."""
    attributes: int = 64
    """Attributes of one record (``max_attributes``)."""

    @classmethod
    def of(cls, config: MemoryConfig) -> ItemLimits:
        """The limits set by ``config``."""
        return cls(config.max_content_chars, config.max_agent_id_chars, config.max_tag_chars,
                   config.max_tags_per_record, config.max_source_event_chars,
                   config.max_attribute_chars, config.max_attributes)


CONFIG_FIELDS = {
    "content": "max_content_chars", "agent_id": "max_agent_id_chars", "tag": "max_tag_chars",
    "tags": "max_tags_per_record", "source_event": "max_source_event_chars",
    "attribute": "max_attribute_chars", "attributes": "max_attributes",
}
"""The MemoryConfig field behind each :class:`ItemLimits` field."""

DEFAULT_LIMITS = ItemLimits()
"""The limits of the default config."""
MAX_CONTENT_CHARS = DEFAULT_LIMITS.content
"""Characters of content under the default config (``MemoryConfig.max_content_chars``)."""
MAX_AGENT_ID_LEN = DEFAULT_LIMITS.agent_id
"""Characters of an agent id under the default config (``MemoryConfig.max_agent_id_chars``)."""
MAX_SOURCE_REFS = 10_000
"""Source ref ids one record may carry (a summary's sources: ``summarization_batch_size``
is at most 10,000)."""
_INT64 = 2**63
_LAYER_BY_VALUE = {layer.value: layer for layer in MemoryLayer}
_new_pending = tuple.__new__  # builds a PendingRecord without its Python-level __new__


def _bad(field: str, problem: str, fix: str, **details: Any) -> InputInvalidError:
    return InputInvalidError(f"{field} {problem}; {fix}", details={"field": field, **details})


def _too_long(field: str, size: int, limits: ItemLimits, which: str,
              unit: str = "characters") -> InputInvalidError:
    return too_long(field, size, getattr(limits, which), CONFIG_FIELDS[which], unit)


def _text(value: str, field: str, limit: int, limits: ItemLimits, which: str) -> None:
    """Raise unless the str ``value`` has at most ``limit`` characters and is valid text."""
    if len(value) > limit:
        raise _too_long(field, len(value), limits, which)
    if not value.isascii() and not is_text(value):
        raise not_text(field)


def validate_agent_id(agent_id: object, limit: int = MAX_AGENT_ID_LEN) -> str:
    """Return ``agent_id`` if it is a usable agent id.

    Args:
        agent_id: The argument.
        limit: The longest accepted id (``MemoryConfig.max_agent_id_chars``; the engine
            passes its own).

    Raises:
        InputInvalidError: Not a non-empty string of valid text of at most ``limit``
            characters.
    """
    if type(agent_id) is str and 0 < len(agent_id) <= limit and agent_id.isascii():
        return agent_id  # the common case
    if not isinstance(agent_id, str) or not agent_id:
        raise _bad("agent_id", f"is not a non-empty string (got {type(agent_id).__name__})",
                   f"pass a non-empty string of at most {limit} characters")
    if len(agent_id) > limit:
        raise too_long("agent_id", len(agent_id), limit, "max_agent_id_chars")
    if not is_text(agent_id):
        raise not_text("agent_id")
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
    limits: ItemLimits = DEFAULT_LIMITS,
) -> PendingRecord:
    """Validate one ingest input against ``limits``. Pure: touches no state.

    Every string must be valid Unicode text (no lone surrogate) within its limit; numbers
    must be finite (attribute integers within int64).

    Raises:
        InputInvalidError: A field is malformed; the message names it and the fix.
    """
    if not isinstance(content, str) or not content or content.isspace():
        raise _bad("content", "is empty or not a string", "pass the memory text as a non-empty str")
    _text(content, "content", limits.content, limits, "content")
    if isinstance(layer, MemoryLayer):
        lay = layer
    else:
        found = _LAYER_BY_VALUE.get(layer) if isinstance(layer, str) else None
        if found is None:
            raise _bad("layer", "is unknown", f"use one of {[x.value for x in MemoryLayer]}")
        lay = found
    imp: float | None = None
    if importance is not None:
        if type(importance) is not float and (
                isinstance(importance, bool) or not isinstance(importance, (int, float))):
            raise _bad("importance", f"is {type(importance).__name__}", "pass a float in 0..1")
        if not (0 <= importance <= 1):  # NaN too; an int is compared before float() overflows
            raise _bad("importance", "is outside 0..1", "pass a float in 0..1")
        imp = float(importance)
    tag_tuple: tuple[str, ...] = ()
    if tags is not None:
        tag_tuple = _tags(tags, limits)
    meta: RecordMetadata | None = None
    if metadata is not None:
        if not isinstance(metadata, Mapping | RecordMetadata):
            raise _bad("metadata", f"is {type(metadata).__name__}",
                       "pass a mapping with the MemoryRecord.metadata fields")
        meta = _parse_metadata(metadata)
        _check_metadata(meta, tag_tuple, limits)
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or not (
            0 < ttl < MAX_LOGICAL_TIME)):
        raise _bad("ttl", "is not a positive integer below 2**62",
                   "pass the lifetime in logical time units (> 0), or None to keep it")
    if not isinstance(flagged, bool):
        raise _bad("flagged", f"is {type(flagged).__name__}", "pass True or False")
    if source_event is not None:
        if not isinstance(source_event, str):
            raise _bad("source_event", f"is {type(source_event).__name__}",
                       "pass a string or None")
        _text(source_event, "source_event", limits.source_event, limits, "source_event")
    pending: PendingRecord = _new_pending(PendingRecord, (
        content, lay, imp, tag_tuple, meta, ttl, flagged, source_event))
    return pending


def _tags(tags: object, limits: ItemLimits) -> tuple[str, ...]:
    """The stripped, de-duplicated tags of a ``tags`` argument (see :func:`validate_item`)."""
    kind = type(tags)
    if kind is not list and kind is not tuple and (
            isinstance(tags, str) or not isinstance(tags, Sequence | set | frozenset)):
        raise _bad("tags", f"is {kind.__name__}", "pass a list of strings")
    # String types: a generic alias written out is built on every call (about 2 µs).
    sized = cast("Sequence[object] | set[object] | frozenset[object]", tags)
    if len(sized) > limits.tags:
        raise _too_long("tags", len(sized), limits, "tags", "tags")
    items: Sequence[object]
    if kind is list or kind is tuple:
        items = cast("Sequence[object]", tags)
    elif isinstance(tags, set | frozenset):
        if not all(type(t) is str for t in tags):
            raise _bad("tags", "contains an empty or non-string tag",
                       "every tag must be a non-empty string")
        items = sorted(tags)
    else:
        items = list(cast("Iterable[object]", tags))  # a Sequence (checked)
    stripped = []
    limit = limits.tag
    for i, t in enumerate(items):
        cleaned = t.strip() if type(t) is str else ""
        if not cleaned:
            raise _bad("tags", "contains an empty or non-string tag",
                       "every tag must be a non-empty string")
        if len(cleaned) > limit or not cleaned.isascii():  # the field name only when needed
            _text(cleaned, f"tags[{i}]", limit, limits, "tag")
        stripped.append(cleaned)
    return tuple(stripped) if len(stripped) == 1 else tuple(dict.fromkeys(stripped))


_new_metadata = trusted_factory(RecordMetadata)
_ATTRIBUTE_TYPES = frozenset({str, bool, int, float})
_STR_ONLY = frozenset({str})


def _parse_metadata(metadata: object) -> RecordMetadata:
    """``RecordMetadata.parse(metadata)``, without pydantic for the usual shape.

    A plain dict holding only ``attributes`` (a plain dict of ``str`` keys and ``str``,
    ``bool``, ``int`` or ``float`` values: what strict validation keeps as they are) is built
    directly, about 8 us less a social memory; anything else is validated by pydantic. The
    limits are checked after, as for any metadata (``_check_metadata``).
    """
    attributes = plain_attributes(metadata)
    if attributes is not None:
        return attributes_metadata(attributes)
    return RecordMetadata.parse(metadata)


def plain_attributes(metadata: object) -> dict[str, str | bool | int | float] | None:
    """The attributes of ``{"attributes": {...}}`` metadata holding nothing else, or None.

    Plain dicts only, of ``str`` keys and ``str``, ``bool``, ``int`` or ``float`` values:
    what strict validation keeps as they are. Their limits are not checked here
    (:func:`clean_attributes`).
    """
    if type(metadata) is dict and len(metadata) == 1:
        attributes = metadata.get("attributes")
        if type(attributes) is dict and _STR_ONLY.issuperset(map(type, attributes)) and (
                _ATTRIBUTE_TYPES.issuperset(map(type, attributes.values()))):
            return attributes
    return None


def attributes_metadata(attributes: Mapping[str, str | bool | int | float]) -> RecordMetadata:
    """The ``RecordMetadata`` of a copy of ``attributes`` and nothing else, unvalidated.

    For attributes of ``str`` keys and ``str``, ``bool``, ``int`` or ``float`` values (what
    strict validation keeps as they are); their limits are the caller's to check
    (:func:`clean_attributes`).
    """
    return _new_metadata({
        "tags": (), "source_event": None, "source_ref_ids": (), "spatial": None,
        "social": None, "procedural": None, "flagged": False, "attributes": dict(attributes)})


def clean_attributes(attributes: Mapping[str, object], limits: ItemLimits) -> bool:
    """Whether ``attributes`` pass :func:`_check_metadata` on the fast path: ASCII only.

    At most ``limits.attributes`` of them; keys and string values ASCII of at most
    ``limits.attribute`` characters; floats finite; ints within int64; any other value
    type fails. ``False`` says "check in full", not "invalid": non-ASCII text may be valid.
    """
    if len(attributes) > limits.attributes:
        return False
    limit = limits.attribute
    for key, value in attributes.items():
        if type(key) is not str or len(key) > limit or not key.isascii():
            return False
        if type(value) is str:
            if len(value) > limit or not value.isascii():
                return False
        elif type(value) is float:
            if not math.isfinite(value):
                return False
        elif type(value) is int:
            if not -_INT64 <= value < _INT64:
                return False
        elif type(value) is not bool:
            return False
    return True


def _check_metadata(meta: RecordMetadata, tags: tuple[str, ...], limits: ItemLimits) -> None:
    """Raise unless every string of ``meta`` is valid text within ``limits``.

    Also bounds the counts (tags with the item's own, source refs, attributes) and the
    attribute numbers (finite floats, ints within int64).
    """
    if meta.tags:
        if len(meta.tags) + len(tags) > limits.tags:
            raise _too_long("metadata.tags", len(meta.tags) + len(tags), limits, "tags", "tags")
        for i, t in enumerate(meta.tags):
            if not t.strip():
                raise _bad("metadata.tags", "contains an empty tag",
                           "every tag must be a non-empty string")
            _text(t, f"metadata.tags[{i}]", limits.tag, limits, "tag")
    if meta.source_event is not None:
        _text(meta.source_event, "metadata.source_event", limits.source_event, limits,
              "source_event")
    if meta.source_ref_ids:
        if len(meta.source_ref_ids) > MAX_SOURCE_REFS:
            raise too_long("metadata.source_ref_ids", len(meta.source_ref_ids), MAX_SOURCE_REFS,
                           None, "ids")
        for ref in meta.source_ref_ids:
            _text(ref, "metadata.source_ref_ids", limits.source_event, limits, "source_event")
    if meta.social is not None and meta.social.other_agent_id is not None:
        _text(meta.social.other_agent_id, "metadata.social.other_agent_id", limits.agent_id,
              limits, "agent_id")
    if meta.procedural is not None and meta.procedural.pattern_id is not None:
        _text(meta.procedural.pattern_id, "metadata.procedural.pattern_id", limits.attribute,
              limits, "attribute")
    if meta.spatial is not None and meta.spatial.region is not None:
        _text(meta.spatial.region, "metadata.spatial.region", limits.attribute, limits,
              "attribute")
    attributes = meta.attributes
    if not attributes:
        return
    if len(attributes) > limits.attributes:
        raise _too_long("metadata.attributes", len(attributes), limits, "attributes",
                        "attributes")
    limit = limits.attribute
    for key, value in attributes.items():
        _text(key, "metadata.attributes key", limit, limits, "attribute")
        if type(value) is str:
            _text(value, "metadata.attributes value", limit, limits, "attribute")
        elif type(value) is float and not math.isfinite(value):
            raise _bad("metadata.attributes value", "is not a finite number",
                       "pass a finite float, an int, a bool or a string")
        elif type(value) is int and not -_INT64 <= value < _INT64:
            raise _bad("metadata.attributes value", "is an integer outside int64",
                       "pass an integer in -2**63..2**63-1")


def validate_mapping(item: object, limits: ItemLimits = DEFAULT_LIMITS) -> PendingRecord:
    """Validate one ``ingest_many`` item (a mapping of :data:`ITEM_FIELDS`) against ``limits``.

    Raises:
        InputInvalidError: Not a mapping, an unknown key, or a malformed field.
    """
    if isinstance(item, str):
        return validate_item(item, limits=limits)
    if not isinstance(item, Mapping):
        raise _bad("item", f"is {type(item).__name__}",
                   "pass a mapping such as {'content': ..., 'importance': ...} or a string")
    if not ITEM_FIELDS.issuperset(item):
        unknown = sum(1 for k in item if k not in ITEM_FIELDS)
        raise _bad("item", f"has {unknown} unknown key(s)", f"use only {sorted(ITEM_FIELDS)}")
    if "content" not in item:
        raise _bad("content", "is missing", "every item needs 'content'")
    return validate_item(**item, limits=limits)


_SIMPLE_FIELDS = ITEM_FIELDS - {"metadata"}
_SIMPLE_BATCH_FIELDS = _SIMPLE_FIELDS | {"agent_id"}
_EPISODIC = MemoryLayer.EPISODIC


def simple_pending(item: object, batch: bool = False,
                   limits: ItemLimits = DEFAULT_LIMITS) -> PendingRecord | None:
    """The :func:`validate_mapping` of a plain, valid item without metadata, else ``None``.

    The hot-path check of ``ingest_many`` / ``ingest_batch`` items (``batch``: an
    ``agent_id`` key is allowed and ignored): exact builtin types and ASCII text only, no
    error raised. ``None`` means "run the full validation", which accepts or rejects the
    item; an item accepted here gives the same ``PendingRecord`` as the full validation.
    """
    if type(item) is not dict or not (
            _SIMPLE_BATCH_FIELDS if batch else _SIMPLE_FIELDS).issuperset(item):
        return None
    get = item.get
    content = get("content")
    if type(content) is not str or not content or content.isspace() or (
            len(content) > limits.content) or not content.isascii():
        return None
    importance = get("importance")
    if importance is not None and (type(importance) is not float or not (
            0.0 <= importance <= 1.0)):
        return None
    if len(item) == 1 + ("importance" in item) + (batch and "agent_id" in item):
        pending: PendingRecord = _new_pending(PendingRecord, (  # the other fields: defaults
            content, _EPISODIC, importance, (), None, None, False, None))
        return pending
    layer = get("layer", _EPISODIC)
    if type(layer) is not MemoryLayer:
        layer = _LAYER_BY_VALUE.get(layer) if type(layer) is str else None
        if layer is None:
            return None
    tags = get("tags")
    tag_tuple: tuple[str, ...] = ()
    if tags is not None:
        if (type(tags) is not list and type(tags) is not tuple) or len(tags) > limits.tags:
            return None
        stripped = []
        tag_limit = limits.tag
        for tag in tags:
            if type(tag) is not str:
                return None
            tag = tag.strip()
            if not tag or len(tag) > tag_limit or not tag.isascii():
                return None
            stripped.append(tag)
        tag_tuple = tuple(dict.fromkeys(stripped))
    ttl = get("ttl")
    if ttl is not None and (type(ttl) is not int or not 0 < ttl < MAX_LOGICAL_TIME):
        return None
    flagged = get("flagged", False)
    source_event = get("source_event")
    if type(flagged) is not bool or (source_event is not None and (
            type(source_event) is not str or len(source_event) > limits.source_event
            or not source_event.isascii())):
        return None
    pending = _new_pending(PendingRecord, (
        content, layer, importance, tag_tuple, None, ttl, flagged, source_event))
    return pending
