"""Grouping (spec section 8, step 2): cluster a batch by tags, entities and time.

The algorithm is one greedy pass in time order, so it is stable and deterministic:

1. Sources are visited by ``(recency_anchor, id)``.
2. A source joins the open group (fewer than ``batch_size`` members) it shares the most
   with: most shared tags first, then most shared entities; a tie goes to the group that
   was opened first. Tags compare case-insensitively; entities are capitalized words (see
   :mod:`f09_memory.summarization.sources`).
3. A source with no tag and no entity at all joins the open group whose latest event is
   closest in time before it, if that gap is at most ``gap_ms`` (a tie goes to the group
   opened first): temporal proximity links what has no theme of its own.
4. Otherwise it opens a new group (a source with its own theme that matches no group is
   not pulled into an unrelated one just because it happened nearby).

Groups are returned in the order they were opened (their first source's time order), each
in time order. Every input source is in exactly one group.

Runtime complexity: O(n x g) set intersections for n sources and g groups (n is a batch,
25 by default), plus one entity pass over the contents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from f09_memory.errors import InputInvalidError
from f09_memory.summarization.sources import Source, entities_of, tags_of

__all__ = ["group_batches", "group_rows"]

S = TypeVar("S", bound=Source)


class _Group:
    __slots__ = ("entities", "last_anchor", "members", "tags")

    def __init__(self) -> None:
        self.members: list[int] = []
        self.tags: set[str] = set()
        self.entities: set[str] = set()
        self.last_anchor = 0


def group_batches(sources: Sequence[S], *, batch_size: int, gap_ms: int) -> list[list[S]]:
    """Split ``sources`` into thematic groups of at most ``batch_size`` (see module doc).

    Args:
        sources: Records or source events, in any order.
        batch_size: Largest group size (>= 1).
        gap_ms: Largest time gap that links a source without tags or entities to a group
            (>= 0).

    Returns:
        The groups, each a non-empty list, in the order described above.

    Raises:
        InputInvalidError: ``batch_size`` < 1 or ``gap_ms`` < 0.
    """
    return [[sources[i] for i in group]
            for group in group_rows(sources, batch_size=batch_size, gap_ms=gap_ms)]


def group_rows(sources: Sequence[Source], *, batch_size: int, gap_ms: int,
               entities: Sequence[Sequence[str]] | None = None) -> list[list[int]]:
    """:func:`group_batches` as positions into ``sources`` (the same groups, in order).

    ``entities``: ``entities_of(sources)`` if the caller has it already (computed here
    otherwise).

    Raises:
        InputInvalidError: ``batch_size`` < 1 or ``gap_ms`` < 0.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InputInvalidError("batch_size must be an int >= 1", details={"field": "batch_size"})
    if isinstance(gap_ms, bool) or not isinstance(gap_ms, int) or gap_ms < 0:
        raise InputInvalidError("gap_ms must be an int >= 0", details={"field": "gap_ms"})
    order = sorted(range(len(sources)), key=lambda i: (sources[i].recency_anchor, sources[i].id))
    ents = entities_of(sources) if entities is None else entities
    groups: list[_Group] = []
    for i in order:
        src = sources[i]
        tags = {t.strip().lower() for t in tags_of(src)} - {""}
        names = set(ents[i])
        anchor = src.recency_anchor
        best: _Group | None = None
        best_score = (0, 0)
        nearest: _Group | None = None
        nearest_gap = gap_ms + 1
        for g in groups:
            if len(g.members) >= batch_size:
                continue
            score = (len(g.tags & tags), len(g.entities & names))
            if score > best_score:
                best, best_score = g, score
            gap = anchor - g.last_anchor
            if gap < nearest_gap:
                nearest, nearest_gap = g, gap
        target = best or (None if tags or names else nearest)
        if target is None:
            target = _Group()
            groups.append(target)
        target.members.append(i)
        target.tags |= tags
        target.entities |= names
        target.last_anchor = max(target.last_anchor, anchor)
    return [g.members for g in groups]
