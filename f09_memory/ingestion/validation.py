"""Ingest validation (index 3): every input checked before anything is stored.

``validate_item`` / ``validate_mapping`` check one input against the engine's size limits
(:class:`ItemLimits`) and raise a taxonomy error naming the bad field and its fix;
``simple_pending`` is their fast path for a plain item, and ``simple_batch`` the same
checks over a whole ``ingest_batch`` frame, column by column. Pure: nothing here reads or
writes engine state. ``pipeline.Ingestor`` turns what passes into column values.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, cast, overload

from f09_memory._validate import MAX_LOGICAL_TIME, is_text, not_text, too_long
from f09_memory.config.config import MemoryConfig
from f09_memory.errors import InputInvalidError
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
    "PendingColumns",
    "PendingRecord",
    "PlainFrame",
    "plain_frame",
    "simple_batch",
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
        meta = RecordMetadata.parse(metadata)
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


_FRAME_KEYS = frozenset({"agent_id", "content", "importance", "layer", "tags", "flagged"})
_FRAME_KEYS_EXTRA = frozenset({"layer", "tags", "flagged"})
_NONE_OR_FLOAT = frozenset({type(None), float})
_STR = frozenset({str})
_BOOL = frozenset({bool})
_DICT = frozenset({dict})
_TAG_KINDS = frozenset({type(None), list, tuple})
_ABSENT = object()
_LAYER_KINDS = frozenset({str, MemoryLayer, object})
_FRAME_LAYER: dict[object, MemoryLayer] = {_ABSENT: _EPISODIC}
_FRAME_LAYER.update(_LAYER_BY_VALUE)
"""A frame's ``layer`` value -> its layer (``_ABSENT``: the default)."""
_get_content = operator.itemgetter("content")
_get_agent = operator.itemgetter("agent_id")
_is_given = functools.partial(operator.is_not, None)


def _frame_layers(values: list[object]) -> list[MemoryLayer] | None:
    """Each item's layer (``_ABSENT``: episodic), or None if one is not a layer's value.

    A layer is a ``MemoryLayer`` or its value as a plain ``str``: the types are checked
    first, then one C-level lookup per item (a ``StrEnum`` member finds its value's entry).
    """
    if not _LAYER_KINDS.issuperset(map(type, values)):
        return None
    found = list(map(_FRAME_LAYER.get, values))
    return None if None in found else cast(list[MemoryLayer], found)


def _frame_tags(values: list[Any], limits: ItemLimits) -> list[tuple[str, ...]] | None:
    """Each item's tag tuple, or None unless every tag is clean ASCII within the limits.

    A tag with spaces to strip, or any other shape, is left to the item-by-item path.
    """
    if not _TAG_KINDS.issuperset(map(type, values)):
        return None
    lists = [tags for tags in values if tags]
    if lists:
        flat = list(itertools.chain.from_iterable(lists))
        if set(map(type, flat)) != _STR or not all(flat) or max(map(len, lists)) > (
                limits.tags) or max(map(len, flat)) > limits.tag or not all(
                map(str.isascii, flat)) or list(map(str.strip, flat)) != flat:
            return None
    return [() if not tags else tuple(tags) if len(tags) == 1 else tuple(dict.fromkeys(tags))
            for tags in values]


class PendingColumns(Sequence[PendingRecord]):
    """One agent's plain validated items as columns: no object per item.

    A ``Sequence[PendingRecord]``: the item at ``i`` is the ``PendingRecord`` it stands for
    (no metadata, TTL or source event). The hot path of ``ingest_batch`` keeps a frame's
    items like this, so a large frame leaves the garbage collector a few containers per agent
    to track, not one record per item (each one promoted to the old generation when a
    collection falls inside the frame, making full collections more frequent). A column
    given as ``None`` holds its default for every item: episodic, no tags, not flagged.
    """

    __slots__ = ("content", "flagged", "importance", "layer", "tags")

    def __init__(self, content: tuple[str, ...], importance: tuple[float | None, ...],
                 layer: tuple[MemoryLayer, ...] | None = None,
                 tags: tuple[tuple[str, ...], ...] | None = None,
                 flagged: tuple[bool, ...] | None = None) -> None:
        self.content = content
        self.importance = importance
        self.layer = layer
        self.tags = tags
        self.flagged = flagged

    def __len__(self) -> int:
        return len(self.content)

    @overload
    def __getitem__(self, index: int) -> PendingRecord: ...

    @overload
    def __getitem__(self, index: slice) -> PendingColumns: ...

    def __getitem__(self, index: int | slice) -> PendingRecord | PendingColumns:
        layer, tags, flagged = self.layer, self.tags, self.flagged
        if isinstance(index, slice):
            return PendingColumns(self.content[index], self.importance[index],
                                  None if layer is None else layer[index],
                                  None if tags is None else tags[index],
                                  None if flagged is None else flagged[index])
        content = self.content[index]  # raises IndexError past the end
        pending: PendingRecord = _new_pending(PendingRecord, (
            content, _EPISODIC if layer is None else layer[index], self.importance[index],
            () if tags is None else tags[index], None, None,
            False if flagged is None else flagged[index], None))
        return pending

    def __iter__(self) -> Iterator[PendingRecord]:
        layer, tags, flagged = self.columns()[2:]
        n = len(self.content)
        none = (None,) * n
        return map(_new_pending, itertools.repeat(PendingRecord, n), zip(
            self.content, layer, self.importance, tags, none, none, flagged, none, strict=True))

    def __repr__(self) -> str:
        return f"PendingColumns({list(self)!r})"

    def columns(self) -> tuple[tuple[Any, ...], ...]:
        """``(content, importance, layer, tags, flagged)``, defaults written out."""
        n = len(self.content)
        return (self.content, self.importance,
                (_EPISODIC,) * n if self.layer is None else self.layer,
                ((),) * n if self.tags is None else self.tags,
                (False,) * n if self.flagged is None else self.flagged)

    @staticmethod
    def joined(runs: Sequence[PendingColumns]) -> tuple[tuple[Any, ...], ...]:
        """:meth:`columns` of ``runs`` one after another, each column one tuple."""
        chain = itertools.chain.from_iterable
        content = tuple(chain(run.content for run in runs))
        importance = tuple(chain(run.importance for run in runs))
        n = len(content)
        layer, tags, flagged = (
            default * n if all(getattr(run, name) is None for run in runs)
            else tuple(chain(run.columns()[at] for run in runs))
            for name, at, default in (("layer", 2, (_EPISODIC,)), ("tags", 3, ((),)),
                                      ("flagged", 4, (False,))))
        return content, importance, layer, tags, flagged


class PlainFrame(NamedTuple):
    """The plain items of a frame, checked column by column (:func:`plain_frame`)."""

    rows: list[int] | None
    """Each plain item's index in the frame; ``None``: every item is plain."""
    agent_ids: list[str]
    content: list[str]
    importance: list[float | None]
    layer: list[MemoryLayer] | None
    """``None``: every item is episodic."""
    tags: list[tuple[str, ...]] | None
    """``None``: no item has tags."""
    flagged: list[bool] | None
    """``None``: no item is flagged."""

    def pending(self) -> list[PendingRecord]:
        """Each plain item's ``PendingRecord``, in order."""
        n = len(self.content)
        layer = itertools.repeat(_EPISODIC, n) if self.layer is None else self.layer
        tags = itertools.repeat((), n) if self.tags is None else self.tags
        flagged = itertools.repeat(False, n) if self.flagged is None else self.flagged
        none = (None,) * n
        return list(map(_new_pending, itertools.repeat(PendingRecord, n), zip(
            self.content, layer, self.importance, tags, none, none, flagged, none,
            strict=False)))

    def groups(self) -> dict[str, PendingColumns]:
        """Each agent's items as columns, in input order (agents in first-appearance order).

        For a frame of plain items only (``rows is None``).
        """
        ids = self.agent_ids
        order = sorted(range(len(ids)), key=ids.__getitem__)  # stable: input order kept
        ranked = list(map(ids.__getitem__, order))

        def permuted(column: list[Any] | None) -> tuple[Any, ...] | None:
            return None if column is None else tuple(map(column.__getitem__, order))

        content, importance, layer, tags, flagged = map(permuted, (
            self.content, self.importance, self.layer, self.tags, self.flagged))
        assert content is not None and importance is not None
        groups: dict[str, PendingColumns] = {}
        for agent_id in dict.fromkeys(ids):
            start = bisect.bisect_left(ranked, agent_id)
            stop = bisect.bisect_right(ranked, agent_id, start)
            groups[agent_id] = PendingColumns(
                content[start:stop], importance[start:stop],
                None if layer is None else layer[start:stop],
                None if tags is None else tags[start:stop],
                None if flagged is None else flagged[start:stop])
        return groups


def plain_frame(items: object, limits: ItemLimits = DEFAULT_LIMITS) -> PlainFrame | None:
    """A frame's plain items, checked column by column; ``None``: check item by item.

    The hot path of ``ingest_batch``: a list of dicts is checked with C-level passes over
    each field instead of a call per item. An item with only the keys ``agent_id``,
    ``content`` and optionally ``importance``, ``layer``, ``tags`` and ``flagged`` is
    checked here; any other item (metadata, a TTL, a source event) is left out (its index
    is not in ``rows``), for the caller's full validation. ``None`` for the whole frame means
    "check item by item" (no item of that shape, or one fails a check below). An accepted
    item gives the same ``PendingRecord`` as ``simple_pending(item, True, limits)`` and an
    agent id that ``validate_agent_id(agent_id, limits.agent_id)`` returns unchanged. The
    checks are those two functions' fast paths: ASCII text within ``limits`` only (other
    text goes to the full validation, which rejects lone surrogates). Raises nothing.
    """
    if type(items) is not list or not items or set(map(type, items)) != _DICT:
        return None
    plain = list(map(_FRAME_KEYS.issuperset, items))
    if not any(plain):
        return None
    everyone = all(plain)
    rows: list[dict[str, Any]] = items if everyone else list(itertools.compress(items, plain))
    try:
        contents = list(map(_get_content, rows))
        agent_ids = list(map(_get_agent, rows))
    except KeyError:
        return None
    importances = list(map(dict.get, rows, itertools.repeat("importance")))
    if set(map(type, contents)) != _STR or not all(contents) or any(
            map(str.isspace, contents)) or max(map(len, contents)) > limits.content or not all(
            map(str.isascii, contents)):
        return None
    if set(map(type, agent_ids)) != _STR or not all(agent_ids) or max(
            map(len, agent_ids)) > limits.agent_id or not all(map(str.isascii, agent_ids)):
        return None
    if not _NONE_OR_FLOAT.issuperset(map(type, importances)):
        return None
    given: list[float] = list(filter(_is_given, importances))  # type: ignore[arg-type]
    if given and (any(map(math.isnan, given)) or min(given) < 0.0 or max(given) > 1.0):
        return None
    layers = tags = flags = None
    if not all(map(_FRAME_KEYS_EXTRA.isdisjoint, rows)):  # a layer, tags or a flag
        layers = _frame_layers(
            list(map(dict.get, rows, itertools.repeat("layer"), itertools.repeat(_ABSENT))))
        tags = _frame_tags(list(map(dict.get, rows, itertools.repeat("tags"))), limits)
        flags = list(map(dict.get, rows, itertools.repeat("flagged"), itertools.repeat(False)))
        if layers is None or tags is None or not _BOOL.issuperset(map(type, flags)):
            return None
        n = len(rows)  # a column of defaults only is left out (None)
        layers = None if layers.count(_EPISODIC) == n else layers
        tags = tags if any(tags) else None
        flags = flags if any(flags) else None
    return PlainFrame(None if everyone else list(itertools.compress(range(len(items)), plain)),
                      agent_ids, contents, importances, layers, tags, flags)


def simple_batch(items: object, limits: ItemLimits = DEFAULT_LIMITS,
                 ) -> tuple[list[str | None], list[PendingRecord | None]] | None:
    """Each item's agent id and :func:`simple_pending`, for a frame checked column by column.

    :func:`plain_frame` item by item: an item it leaves out gets ``None`` in both lists,
    for the caller's full validation; ``None`` for the whole frame means "check item by
    item". Raises nothing.
    """
    frame = plain_frame(items, limits)
    if frame is None:
        return None
    pending = frame.pending()
    if frame.rows is None:
        return list[str | None](frame.agent_ids), list[PendingRecord | None](pending)
    n = len(cast(list[Any], items))
    all_agents: list[str | None] = [None] * n
    all_pending: list[PendingRecord | None] = [None] * n
    for row, i in enumerate(frame.rows):
        all_agents[i] = frame.agent_ids[row]
        all_pending[i] = pending[row]
    return all_agents, all_pending
