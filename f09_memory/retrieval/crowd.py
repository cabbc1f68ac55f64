"""CrowdRows: a frame's agents as one table (``Retriever.retrieve_many``).

Each agent's slots ``0:hi`` are concatenated in frame order, column by column: agent ``n``
holds rows ``starts[n]:starts[n + 1]``, and row ``r`` of it is slot ``r - starts[n]``.
:meth:`CrowdRows.mask` finds the rows that are candidates for their agent's request in a
few numpy passes over the whole frame, skipping each test no row can fail.

A host asks for the same crowd frame after frame, and between two frames most agents do
not change. :class:`FrameColumns` keeps the last frame's concatenated columns: the next
frame over the same agents (same objects, same order, same ``hi``) copies in only the
segments of the agents that changed (an agent's ``next_rev`` moves with every change of
its records), or concatenates afresh when many did. The kept columns are read-only, so no
frame can change them by mistake.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.retrieval.filters import ACTIVE_ONLY, request_filter_mask, status_table
from f09_memory.schema.retrieval import RetrievalRequest
from f09_memory.store.agent import AgentMemory

__all__ = ["CrowdRows", "FrameColumns"]

_PATCH_SHARE = 4
"""Kept columns are patched while at most one agent in this many changed, else rebuilt."""


class FrameColumns:
    """The concatenated columns of the last frame's agents (see the module docstring).

    Holds at most one frame: about 40 bytes per row for the columns a frame reads.
    """

    def __init__(self) -> None:
        self._ams: list[AgentMemory] = []
        self._his: NDArray[np.intp] = np.zeros(0, dtype=np.intp)
        self._revs: list[int] = []
        self._columns: dict[str, NDArray[Any]] = {}
        self._stale: dict[str, list[int]] = {}
        """Per kept column, the agents (frame positions) whose segment is out of date."""

    def start(self, ams: Sequence[AgentMemory], his: NDArray[np.intp]) -> None:
        """Begin a frame over ``ams`` (their ``hi`` in ``his``): keep what still holds."""
        revs = [am.next_rev for am in ams]
        same = (len(ams) == len(self._ams) and all(map(operator.is_, ams, self._ams))
                and bool(np.array_equal(his, self._his)))
        changed = [] if not same or revs == self._revs else [
            n for n, (a, b) in enumerate(zip(revs, self._revs, strict=True)) if a != b]
        if not same or len(changed) * _PATCH_SHARE > len(ams):
            # Other agents, or so many changed that one concatenation beats copying theirs
            self._columns.clear()
            self._stale.clear()
        elif changed:
            for name in self._columns:
                self._stale.setdefault(name, []).extend(changed)
        self._ams, self._his, self._revs = list(ams), his, revs

    def column(self, name: str, starts: NDArray[np.intp]) -> NDArray[Any]:
        """Column ``name`` of the frame's agents, concatenated (read-only)."""
        ams = self._ams
        found = self._columns.get(name)
        if found is None:
            found = np.concatenate([getattr(am, name)[: am.hi] for am in ams])
            found.flags.writeable = False
            self._columns[name] = found
            return found
        stale = self._stale.pop(name, None)
        if stale:
            found.flags.writeable = True
            for n in dict.fromkeys(stale):
                found[starts[n]:starts[n + 1]] = getattr(ams[n], name)[: ams[n].hi]
            found.flags.writeable = False
        return found


class CrowdRows:
    """The slots ``0:hi`` of a frame's agents, concatenated in frame order.

    Args:
        ams: The frame's agents (each with at least one live record), in frame order.
        kept: Where the last frame's columns are kept (None: nothing is kept).
    """

    def __init__(self, ams: Sequence[AgentMemory], kept: FrameColumns | None = None) -> None:
        self.ams = ams
        self.his = np.array([am.hi for am in ams], dtype=np.intp)
        self.starts: NDArray[np.intp] = np.concatenate(([0], np.cumsum(self.his)))
        """Agent ``n``'s first row; the last entry is the number of rows."""
        self._row_agent: NDArray[np.intp] | None = None
        self._kept = kept
        if kept is not None:
            kept.start(ams, self.his)

    @property
    def rows(self) -> int:
        """Number of rows (the agents' ``hi`` summed)."""
        return int(self.starts[-1])

    @property
    def row_agent(self) -> NDArray[np.intp]:
        """Each row's agent (its position in the frame), computed when first asked for."""
        if self._row_agent is None:
            self._row_agent = np.repeat(np.arange(len(self.ams)), self.his)
        return self._row_agent

    def agent_of(self, rows: NDArray[np.intp]) -> NDArray[np.intp]:
        """The agent of each of ``rows`` (a few rows: no per-row table is built)."""
        agents: NDArray[np.intp] = np.searchsorted(self.starts, rows, side="right") - 1
        return agents

    def column(self, name: str) -> NDArray[Any]:
        """The agents' column ``name`` (an ``AgentMemory`` column), concatenated.

        Read-only when kept for the next frame: copy it before changing it.
        """
        if self._kept is not None:
            return self._kept.column(name, self.starts)
        return np.concatenate([getattr(am, name)[: am.hi] for am in self.ams])

    def _lookup(self, tables: Sequence[NDArray[np.bool_]],
                codes: NDArray[np.integer[Any]]) -> NDArray[np.bool_]:
        """``tables[n][codes[row]]`` for each row ``row`` of agent ``n``, in one gather.

        The agents' tables are mostly shared objects (one per purpose): each distinct one
        becomes a row of a small table, and each row's cell is ``table * width + code``
        (a flat gather, about 4x faster than indexing a stack of the agents' tables).
        """
        index: dict[int, int] = {}
        distinct: list[NDArray[np.bool_]] = []
        which: list[int] = []
        for t in tables:
            n = index.get(id(t))
            if n is None:
                n = index[id(t)] = len(distinct)
                distinct.append(t)
            which.append(n)
        table = np.stack(distinct)
        cell = np.repeat(np.array(which, dtype=np.intp) * table.shape[1], self.his)
        cell += codes
        out: NDArray[np.bool_] = table.ravel()[cell]
        return out

    def mask(self, requests: Sequence[RetrievalRequest],
             policy_of: Callable[[RetrievalRequest], NDArray[np.bool_]],
             layer: NDArray[np.int8], now: int) -> NDArray[np.bool_]:
        """The rows that are candidates for their agent's request (``requests[n]``).

        As ``filters.candidate_mask`` row by row: alive, no deadline at or before ``now``,
        a layer the request's policy (``policy_of``) allows, an allowed status, and the
        request's own filters. ``layer`` is :meth:`column` ``("layer")``. A test no row can
        fail is skipped: every slot below ``hi`` is alive, no deadline is due, the frame's
        one policy allows every layer its agents hold, no agent ever held a record that is
        not active.

        Runtime complexity: O(rows) numpy, O(agents) Python.
        """
        ams = self.ams
        mask = (np.ones(layer.shape[0], dtype=np.bool_)
                if all(am.live == am.hi for am in ams) else self.column("alive").copy())
        if any(am.min_deadline <= now for am in ams):
            mask &= self.column("deadline") > now
        policies = [policy_of(request) for request in requests]
        if all(p is policies[0] for p in policies):  # one layer policy for the frame
            barred = np.flatnonzero(~policies[0]).tolist()
            if barred and any(am.holds_any(barred) for am in ams):
                mask &= policies[0].take(layer)
        else:
            mask &= self._lookup(policies, layer)
        statuses = [status_table(request) for request in requests]
        if not all(t is ACTIVE_ONLY for t in statuses):
            mask &= self._lookup(statuses, self.column("status"))
        elif any(am.inactive_seen for am in ams):  # the usual case: active records only
            mask &= self.column("status") == 0
        starts = self.starts
        for n, request in enumerate(requests):
            if request.has_filters():
                mask[starts[n]:starts[n + 1]] &= request_filter_mask(ams[n], request)
        return mask
