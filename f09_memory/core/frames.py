"""Frames: the items of one ``ingest_batch`` call, validated and grouped by agent.

A frame's plain items (each a dict of ``agent_id``, ``content`` and optionally
``importance``, ``layer``, ``tags`` and ``flagged``, ASCII text within the limits) are
checked column by column (:func:`~f09_memory.ingestion.validation.simple_batch`, C-level
passes over the frame), and its other items (metadata, a TTL, a source event) one by one;
if a plain item fails a column check, the whole frame is checked item by item, the first
bad item raising with its index. Both ways apply the same checks (the engine's size
limits, valid text) and give the same groups. Whether a new agent id may be created
(capacity, private data) is the writer's check, after grouping.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

from f09_memory.errors import InputInvalidError, MemoryEngineError
from f09_memory.ingestion.frame_checks import PlainFrame, plain_frame
from f09_memory.ingestion.validation import (
    ItemLimits,
    PendingRecord,
    simple_pending,
    validate_agent_id,
    validate_mapping,
)

__all__ = ["group_frame", "indexed"]


def indexed(exc: MemoryEngineError, i: int) -> MemoryEngineError:
    """``exc`` about the ``i``-th item of a list: its message and details name the index."""
    exc.details["index"] = i
    exc.message = f"item {i}: {exc.message}"
    exc.args = (exc.message,)
    return exc


def group_frame(items: Iterable[Any],
                limits: ItemLimits) -> tuple[Mapping[str, Sequence[PendingRecord]], list[str]]:
    """Validate a frame's items against ``limits`` and group them by agent.

    Runtime complexity: O(n log n): a few C-level passes and a sort for a frame of plain
    items, each agent's items kept as columns (``PendingColumns``); else one validation per
    item.

    Args:
        items: The ``ingest_batch`` items.
        limits: The engine's size limits (``Ingestor.limits``).

    Returns:
        Each agent's items in input order (agents in first-appearance order), and each
        item's agent in input order.

    Raises:
        InputInvalidError: A malformed item (the message gives its index); nothing is
            returned for a frame with one.
    """
    frame = plain_frame(items, limits)
    if frame is not None and frame.rows is None:
        return frame.groups(), frame.agent_ids
    # Items alive together (a list) may share validations: a frame of engine events gives
    # every perceiver of an event the same text, tags and metadata objects.
    seen: dict[tuple[Any, ...], PendingRecord] | None = {} if type(items) is list else None
    pairs = _item_by_item(items, limits, seen) if frame is None else _column_checked(
        cast(list[Any], items), frame, limits, seen)
    groups: dict[str, list[PendingRecord]] = {}
    find = groups.get
    owners: list[str] = []
    own = owners.append
    for agent_id, pending in pairs:
        group = find(agent_id)
        if group is None:
            groups[agent_id] = [pending]
        else:
            group.append(pending)
        own(agent_id)
    return groups, owners


def _column_checked(items: list[Any], frame: PlainFrame, limits: ItemLimits,
                    seen: dict[tuple[Any, ...], PendingRecord] | None,
                    ) -> Iterator[tuple[str, PendingRecord]]:
    """Each item's agent and pending record: ``frame``'s, or the full validation's.

    An item ``frame`` left out (metadata, a TTL, a source event) gets the full validation.
    """
    assert frame.rows is not None
    plain = iter(zip(frame.rows, frame.agent_ids, frame.pending(), strict=True))
    row, agent_id, pending = next(plain)
    for i, raw in enumerate(items):
        if i == row:
            yield agent_id, pending
            row, agent_id, pending = next(plain, (-1, "", pending))
        else:
            yield _validated(raw, i, limits, seen)


def _item_by_item(items: Iterable[Any], limits: ItemLimits,
                  seen: dict[tuple[Any, ...], PendingRecord] | None,
                  ) -> Iterator[tuple[str, PendingRecord]]:
    """Each item's agent and pending record, checked one item at a time, in order."""
    for i, raw in enumerate(items):
        pending = simple_pending(raw, True, limits)
        if pending is not None:  # a plain dict: only its agent id is left to check
            agent_id = raw.get("agent_id")
            if type(agent_id) is str and 0 < len(agent_id) <= limits.agent_id and (
                    agent_id.isascii()):  # other text: the full check (surrogates)
                yield agent_id, pending
                continue
        yield _validated(raw, i, limits, seen)


def _validated(raw: Any, i: int, limits: ItemLimits,
               seen: dict[tuple[Any, ...], PendingRecord] | None = None,
               ) -> tuple[str, PendingRecord]:
    """The full validation of the ``i``-th item: its agent id, then the rest.

    ``seen`` (for items that stay alive together, so an identity is never reused) remembers
    each validated body by its keys and the identity of its values: an item made of the
    same objects is not validated again (validation is pure, the record immutable).
    """
    try:
        if not isinstance(raw, Mapping):
            raise InputInvalidError(
                "item must be a mapping with 'agent_id' and 'content'",
                details={"field": "item"})
        body = dict(raw)
        agent_id = validate_agent_id(body.pop("agent_id", None), limits.agent_id)
        if seen is None:
            return agent_id, validate_mapping(body, limits)
        key = (*body, *map(id, body.values()))  # the same objects: the same validation
        pending = seen.get(key)
        if pending is None:
            pending = seen[key] = validate_mapping(body, limits)
        return agent_id, pending
    except MemoryEngineError as exc:
        raise indexed(exc, i) from None
