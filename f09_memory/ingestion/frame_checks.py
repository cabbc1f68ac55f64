"""Frame checks (index 3): an ``ingest_batch`` frame's plain items, checked column by column.

``plain_frame`` applies :func:`~f09_memory.ingestion.validation.simple_pending`'s checks (and
the agent id's) to a whole frame with C-level passes over each field; ``PlainFrame.groups``
keeps each agent's items as columns (``PendingColumns``, a ``Sequence[PendingRecord]`` with
no object per item); ``simple_batch`` gives the same checks item by item. Pure: nothing here
reads or writes engine state.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import operator
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, cast, overload

from f09_memory.ingestion.validation import DEFAULT_LIMITS, ItemLimits, PendingRecord
from f09_memory.schema.enums import MemoryLayer

__all__ = ["PendingColumns", "PlainFrame", "plain_frame", "simple_batch"]

_EPISODIC = MemoryLayer.EPISODIC
_new_pending = tuple.__new__  # builds a PendingRecord without its Python-level __new__
_DEFAULTS: dict[str, tuple[Any, ...]] = {"layer": (_EPISODIC,), "tags": ((),),
                                         "flagged": (False,)}
"""What a ``PendingColumns`` column held as ``None`` repeats: one item's default."""
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

    def column(self, name: str) -> tuple[Any, ...]:
        """Column ``name``, its default written out when it is held as ``None``."""
        value: tuple[Any, ...] | None = getattr(self, name)
        return _DEFAULTS[name] * len(self.content) if value is None else value

    def columns(self) -> tuple[tuple[Any, ...], ...]:
        """``(content, importance, layer, tags, flagged)``, defaults written out."""
        return (self.content, self.importance, self.column("layer"), self.column("tags"),
                self.column("flagged"))

    @staticmethod
    def joined(runs: Sequence[PendingColumns]) -> tuple[tuple[Any, ...], ...]:
        """:meth:`columns` of ``runs`` one after another, each column one tuple."""
        chain = itertools.chain.from_iterable
        content = tuple(chain(run.content for run in runs))
        importance = tuple(chain(run.importance for run in runs))
        layer, tags, flagged = (
            _DEFAULTS[name] * len(content) if all(getattr(run, name) is None for run in runs)
            else tuple(chain(run.column(name) for run in runs))
            for name in ("layer", "tags", "flagged"))
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
        layer, tags, flagged = self.layer, self.tags, self.flagged
        return list(PendingColumns(
            tuple(self.content), tuple(self.importance), None if layer is None else tuple(layer),
            None if tags is None else tuple(tags), None if flagged is None else tuple(flagged)))

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
