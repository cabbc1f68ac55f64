"""Frame checks (index 3): an ``ingest_batch`` frame's plain items, checked column by column.

``plain_frame`` applies :func:`~f09_memory.ingestion.validation.simple_pending`'s checks (and
the agent id's, and those of metadata holding attributes only) to a whole frame with
C-level passes over each field; ``PlainFrame.groups`` keeps each agent's items as columns
(``PendingColumns``, a ``Sequence[PendingRecord]`` with no object per item); ``simple_batch``
gives the same checks item by item. Pure: nothing here reads or writes engine state.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, cast, overload

from f09_memory.ingestion.validation import (
    DEFAULT_LIMITS,
    ItemLimits,
    PendingRecord,
    attributes_metadata,
    clean_attributes,
    plain_attributes,
)
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.records import RecordMetadata
from f09_memory.store.records import attribute_key

__all__ = ["PendingColumns", "PlainFrame", "item_column", "plain_frame", "simple_batch",
           "take_items"]

_EPISODIC = MemoryLayer.EPISODIC
_new_pending = tuple.__new__  # builds a PendingRecord without its Python-level __new__
_DEFAULTS: dict[str, tuple[Any, ...]] = {"layer": (_EPISODIC,), "tags": ((),),
                                         "flagged": (False,), "metadata": (None,)}
"""What a ``PendingColumns`` column held as ``None`` repeats: one item's default."""
_FRAME_KEYS = frozenset({"agent_id", "content", "importance", "layer", "tags", "flagged",
                         "metadata"})
_METADATA_KEY = frozenset({"metadata"})
_FRAME_KEYS_EXTRA = frozenset({"layer", "tags", "flagged"})
_NONE_OR_FLOAT = frozenset({type(None), float})
_STR = frozenset({str})
_BOOL = frozenset({bool})
_DICT = frozenset({dict})
_TAG_KINDS = frozenset({type(None), list, tuple})
_ABSENT = object()
_LAYER_KINDS = frozenset({str, MemoryLayer, object})
_FRAME_LAYER: dict[object, MemoryLayer] = {_ABSENT: _EPISODIC}
_FRAME_LAYER.update({layer.value: layer for layer in MemoryLayer})
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


def item_column(items: Sequence[PendingRecord], name: str) -> Sequence[Any]:
    """Field ``name`` of each item, in order (no record built for ``PendingColumns``).

    A ``PendingColumns`` gives its column as it is held; other sequences are read item by
    item.
    """
    if type(items) is PendingColumns:  # the fields it does not hold are None (no TTL...)
        return items.column(name) if name in PendingColumns.__slots__ else (None,) * len(items)
    index = PendingRecord._fields.index(name)
    return [item[index] for item in items]


def take_items(items: Sequence[PendingRecord], rows: Sequence[int]) -> Sequence[PendingRecord]:
    """The items at ``rows``, in that order: columns stay columns; all of them: ``items``."""
    if len(rows) == len(items):
        return items  # rows are distinct and in order (the callers'): every item
    if type(items) is PendingColumns:
        return items.take(rows) if rows else PendingColumns((), ())
    return [items[i] for i in rows]


def _frame_metadata(items: list[dict[str, Any]], plain: list[bool], limits: ItemLimits,
                    ) -> list[RecordMetadata | None]:
    """Each item's metadata when it holds attributes only (``None``: no metadata).

    The shape ``{"attributes": {str: str | bool | int | float}}``
    (``validation.plain_attributes``) with ASCII text within ``limits``, finite floats and
    ints within int64 is what the full validation accepts unchanged
    (``validation.clean_attributes``). An item with any other metadata is left
    out (``plain[i]`` set to False) for the full validation, which accepts or rejects it.
    Equal attributes (by key order, value and type: ``store.records.attribute_key``) share
    one ``RecordMetadata`` within the frame, checked once: a crowd's observations repeat
    them.
    """
    out: list[RecordMetadata | None] = [None] * len(items)
    shared: dict[tuple[Any, ...], RecordMetadata] = {}
    for i, item in enumerate(items):
        value = item.get("metadata")
        if value is None or not plain[i]:
            continue
        attributes = plain_attributes(value)
        if attributes is None:
            plain[i] = False
            continue
        key = attribute_key(attributes)
        found = shared.get(key)
        if found is None:
            if not clean_attributes(attributes, limits):
                plain[i] = False
                continue
            found = shared[key] = attributes_metadata(attributes)
        out[i] = found
    return out


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


def _as_tuple(column: list[Any] | None) -> tuple[Any, ...] | None:
    return None if column is None else tuple(column)


class PendingColumns(Sequence[PendingRecord]):
    """One agent's plain validated items as columns: no object per item.

    A ``Sequence[PendingRecord]``: the item at ``i`` is the ``PendingRecord`` it stands for
    (no TTL or source event; metadata of attributes only). The hot path of ``ingest_batch``
    keeps a frame's items like this, so a large frame leaves the garbage collector a few
    containers per agent to track, not one record per item (each one promoted to the old
    generation when a collection falls inside the frame, making full collections more
    frequent). A column given as ``None`` holds its default for every item: episodic, no
    tags, not flagged, no metadata.
    """

    __slots__ = ("content", "flagged", "importance", "layer", "metadata", "tags")

    def __init__(self, content: tuple[str, ...], importance: tuple[float | None, ...],
                 layer: tuple[MemoryLayer, ...] | None = None,
                 tags: tuple[tuple[str, ...], ...] | None = None,
                 flagged: tuple[bool, ...] | None = None,
                 metadata: tuple[RecordMetadata | None, ...] | None = None) -> None:
        self.content = content
        self.importance = importance
        self.layer = layer
        self.tags = tags
        self.flagged = flagged
        self.metadata = metadata

    def __len__(self) -> int:
        return len(self.content)

    @overload
    def __getitem__(self, index: int) -> PendingRecord: ...

    @overload
    def __getitem__(self, index: slice) -> PendingColumns: ...

    def __getitem__(self, index: int | slice) -> PendingRecord | PendingColumns:
        layer, tags, flagged, metadata = self.layer, self.tags, self.flagged, self.metadata
        if isinstance(index, slice):
            return PendingColumns(self.content[index], self.importance[index],
                                  None if layer is None else layer[index],
                                  None if tags is None else tags[index],
                                  None if flagged is None else flagged[index],
                                  None if metadata is None else metadata[index])
        content = self.content[index]  # raises IndexError past the end
        pending: PendingRecord = _new_pending(PendingRecord, (
            content, _EPISODIC if layer is None else layer[index], self.importance[index],
            () if tags is None else tags[index], None if metadata is None else metadata[index],
            None, False if flagged is None else flagged[index], None))
        return pending

    def __iter__(self) -> Iterator[PendingRecord]:
        layer, tags, flagged, metadata = self.columns()[2:]
        n = len(self.content)
        none = (None,) * n
        return map(_new_pending, itertools.repeat(PendingRecord, n), zip(
            self.content, layer, self.importance, tags, metadata, none, flagged, none,
            strict=True))

    def __repr__(self) -> str:
        return f"PendingColumns({list(self)!r})"

    def take(self, rows: Sequence[int]) -> PendingColumns:
        """The items at ``rows`` (at least one), in that order, as columns."""
        # A tuple of the rows' values, in C (one row: a slice of one, also a tuple).
        get = cast("Callable[[tuple[Any, ...]], tuple[Any, ...]]", operator.itemgetter(
            *rows) if len(rows) > 1 else operator.itemgetter(slice(rows[0], rows[0] + 1)))
        layer, tags, flagged, metadata = self.layer, self.tags, self.flagged, self.metadata
        return PendingColumns(get(self.content), get(self.importance),
                              None if layer is None else get(layer),
                              None if tags is None else get(tags),
                              None if flagged is None else get(flagged),
                              None if metadata is None else get(metadata))

    def column(self, name: str) -> tuple[Any, ...]:
        """Column ``name``, its default written out when it is held as ``None``."""
        value: tuple[Any, ...] | None = getattr(self, name)
        return _DEFAULTS[name] * len(self.content) if value is None else value

    def columns(self) -> tuple[tuple[Any, ...], ...]:
        """``(content, importance, layer, tags, flagged, metadata)``, defaults written out."""
        return (self.content, self.importance, self.column("layer"), self.column("tags"),
                self.column("flagged"), self.column("metadata"))

    @staticmethod
    def joined(runs: Sequence[PendingColumns]) -> tuple[tuple[Any, ...], ...]:
        """:meth:`columns` of ``runs`` one after another, each column one tuple."""
        chain = itertools.chain.from_iterable
        content = tuple(chain(run.content for run in runs))
        importance = tuple(chain(run.importance for run in runs))
        layer, tags, flagged, metadata = (
            _DEFAULTS[name] * len(content) if all(getattr(run, name) is None for run in runs)
            else tuple(chain(run.column(name) for run in runs))
            for name in ("layer", "tags", "flagged", "metadata"))
        return content, importance, layer, tags, flagged, metadata


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
    metadata: list[RecordMetadata | None] | None
    """``None``: no item has metadata (else attributes only, see :func:`_frame_metadata`)."""

    def pending(self) -> list[PendingRecord]:
        """Each plain item's ``PendingRecord``, in order."""
        layer, tags, flagged, metadata = self.layer, self.tags, self.flagged, self.metadata
        return list(PendingColumns(
            tuple(self.content), tuple(self.importance), None if layer is None else tuple(layer),
            None if tags is None else tuple(tags), None if flagged is None else tuple(flagged),
            None if metadata is None else tuple(metadata)))

    def groups(self) -> dict[str, PendingColumns]:
        """Each agent's items as columns, in input order (agents in first-appearance order).

        For a frame of plain items only (``rows is None``). A frame whose agents' items
        come one agent after another (a host stepping its agents in turn) is cut at the
        changes of agent, with no sort.
        """
        ids = self.agent_ids
        agents = dict.fromkeys(ids)
        n = len(ids)
        runs = [0, *itertools.compress(range(1, n), map(operator.ne, ids, ids[1:]))]
        if len(runs) == len(agents):  # each agent's items are one run
            cut: Callable[[list[Any] | None], tuple[Any, ...] | None] = _as_tuple
            spans: Iterator[tuple[int, int]] = zip(runs, [*runs[1:], n], strict=True)
        else:
            order = sorted(range(n), key=ids.__getitem__)  # stable: input order kept
            ranked = list(map(ids.__getitem__, order))

            def cut(column: list[Any] | None) -> tuple[Any, ...] | None:
                return None if column is None else tuple(map(column.__getitem__, order))

            spans = ((start, bisect.bisect_right(ranked, agent_id, start)) for agent_id, start
                     in zip(agents, map(bisect.bisect_left, itertools.repeat(ranked), agents),
                            strict=True))
        content, importance, layer, tags, flagged, metadata = map(cut, (
            self.content, self.importance, self.layer, self.tags, self.flagged, self.metadata))
        assert content is not None and importance is not None
        groups: dict[str, PendingColumns] = {}
        for agent_id, (start, stop) in zip(agents, spans, strict=True):
            groups[agent_id] = PendingColumns(
                content[start:stop], importance[start:stop],
                None if layer is None else layer[start:stop],
                None if tags is None else tags[start:stop],
                None if flagged is None else flagged[start:stop],
                None if metadata is None else metadata[start:stop])
        return groups


def plain_frame(items: object, limits: ItemLimits = DEFAULT_LIMITS) -> PlainFrame | None:
    """A frame's plain items, checked column by column; ``None``: check item by item.

    The hot path of ``ingest_batch``: a list of dicts is checked with C-level passes over
    each field instead of a call per item. An item with only the keys ``agent_id``,
    ``content`` and optionally ``importance``, ``layer``, ``tags``, ``flagged`` and
    ``metadata`` holding attributes only (:func:`_frame_metadata`) is checked here; any
    other item (other metadata, a TTL, a source event) is left out (its index is not in
    ``rows``), for the caller's full validation. ``None`` for the whole frame means "check
    item by item" (no item of that shape, or one fails a check below). An accepted item
    gives the same ``PendingRecord`` as ``validate_mapping(item without its agent id,
    limits)`` and an agent id that ``validate_agent_id(agent_id, limits.agent_id)``
    returns unchanged. The checks are the fast paths of ``simple_pending`` and those two
    functions: ASCII text within ``limits`` only (other text goes to the full validation,
    which rejects lone surrogates). Raises nothing.
    """
    if type(items) is not list or not items or set(map(type, items)) != _DICT:
        return None
    plain = list(map(_FRAME_KEYS.issuperset, items))
    metadata: list[RecordMetadata | None] | None = None
    if not all(map(_METADATA_KEY.isdisjoint, items)):  # items with metadata
        metadata = _frame_metadata(items, plain, limits)
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
    if metadata is not None:
        if not everyone:
            metadata = list(itertools.compress(metadata, plain))
        if metadata.count(None) == len(metadata):
            metadata = None
    return PlainFrame(None if everyone else list(itertools.compress(range(len(items)), plain)),
                      agent_ids, contents, importances, layers, tags, flags, metadata)


def simple_batch(items: object, limits: ItemLimits = DEFAULT_LIMITS,
                 ) -> tuple[list[str | None], list[PendingRecord | None]] | None:
    """Each item's agent id and ``PendingRecord``, for a frame checked column by column.

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
