"""CrowdRows: a frame's agents as one table (``Retriever.retrieve_many``).

Each agent's slots ``0:hi`` are concatenated in frame order, column by column: agent ``n``
holds rows ``starts[n]:starts[n + 1]``, and row ``r`` of it is slot ``r - starts[n]``.
:meth:`CrowdRows.mask` finds the rows that are candidates for their agent's request in a
few numpy passes over the whole frame, skipping each test no row can fail.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.retrieval.filters import ACTIVE_ONLY, request_filter_mask, status_table
from f09_memory.schema.retrieval import RetrievalRequest
from f09_memory.store.agent import AgentMemory

__all__ = ["CrowdRows"]


class CrowdRows:
    """The slots ``0:hi`` of a frame's agents, concatenated in frame order.

    Args:
        ams: The frame's agents (each with at least one live record), in frame order.
    """

    def __init__(self, ams: Sequence[AgentMemory]) -> None:
        self.ams = ams
        self.his = np.array([am.hi for am in ams], dtype=np.intp)
        self.starts: NDArray[np.intp] = np.concatenate(([0], np.cumsum(self.his)))
        """Agent ``n``'s first row; the last entry is the number of rows."""
        self._row_agent: NDArray[np.intp] | None = None

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
        """The agents' column ``name`` (an ``AgentMemory`` column), concatenated."""
        return np.concatenate([getattr(am, name)[: am.hi] for am in self.ams])

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
                if all(am.live == am.hi for am in ams) else self.column("alive"))
        if any(am.min_deadline <= now for am in ams):
            mask &= self.column("deadline") > now
        policies = [policy_of(request) for request in requests]
        if all(p is policies[0] for p in policies):  # one layer policy for the frame
            barred = np.flatnonzero(~policies[0]).tolist()
            if barred and any(am.holds_any(barred) for am in ams):
                mask &= policies[0][layer]
        else:
            mask &= np.stack(policies)[self.row_agent, layer]
        statuses = [status_table(request) for request in requests]
        if not all(t is ACTIVE_ONLY for t in statuses):
            mask &= np.stack(statuses)[self.row_agent, self.column("status")]
        elif any(am.inactive_seen for am in ams):  # the usual case: active records only
            mask &= self.column("status") == 0
        starts = self.starts
        for n, request in enumerate(requests):
            if request.has_filters():
                mask[starts[n]:starts[n + 1]] &= request_filter_mask(ams[n], request)
        return mask
