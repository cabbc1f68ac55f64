"""MemoryStore: every agent's AgentMemory, in deterministic agent order.

The store also keeps every agent's survey row (:attr:`AgentMemory.stats`: live records per
layer, the TTL and episodic-anchor bounds, the index-build flag, removals) in one int64
matrix, rows in creation order; each agent's row is a view into it. :meth:`survey` hands a
tick the agents in id order with their rows as one array, so what every agent is due is a
few numpy comparisons, not a Python loop over the crowd.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from numpy.typing import NDArray
from sortedcontainers import SortedDict

from f09_memory.store.agent import STAT_WIDTH, AgentMemory
from f09_memory.store.tags import TagTable

__all__ = ["MemoryStore", "split_record_id"]


def split_record_id(record_id: object) -> tuple[str, int] | None:
    """Split ``"agent:0000000042"`` into ``("agent", 42)``; ``None`` if it is not an engine id."""
    if not isinstance(record_id, str):
        return None
    agent_id, sep, tail = record_id.rpartition(":")
    if not sep or not agent_id or not 10 <= len(tail) <= 19 or not tail.isdigit() or (
            not tail.isascii()):  # keys are below 2**62: at most 19 digits
        return None
    return agent_id, int(tail)


class MemoryStore:
    """Maps agent ids to their :class:`AgentMemory`, iterating agents in sorted id order.

    The :class:`TagTable` is shared by every agent.
    """

    def __init__(self, episodic_max: int) -> None:
        self.episodic_max = episodic_max
        self.tags = TagTable()
        self._agents: SortedDict = SortedDict()
        self.on_create: Callable[[AgentMemory], None] | None = None
        """Called with each new agent's memory (durable mode records it as an effect)."""
        self._stats = np.zeros((0, STAT_WIDTH), dtype=np.int64)
        self._rows: list[AgentMemory] = []
        """Agents by survey-matrix row (creation order)."""
        self._sorted: tuple[list[AgentMemory], list[str], NDArray[np.intp]] | None = None
        """Agents and ids in id order, and their rows (rebuilt after an agent is created)."""

    def __len__(self) -> int:
        return len(self._agents)

    def get(self, agent_id: str) -> AgentMemory | None:
        """The agent's memory, or ``None`` if it has never stored anything."""
        found: AgentMemory | None = self._agents.get(agent_id)
        return found

    def get_or_create(self, agent_id: str) -> AgentMemory:
        """The agent's memory, created empty on first use."""
        am: AgentMemory | None = self._agents.get(agent_id)
        if am is None:
            am = AgentMemory(agent_id, self.episodic_max, self.tags)
            self._adopt(am)
            self._agents[agent_id] = am
            if self.on_create is not None:
                self.on_create(am)
        return am

    def _adopt(self, am: AgentMemory) -> None:
        """Give ``am`` the next row of the survey matrix (grown by doubling)."""
        row = len(self._rows)
        if row == self._stats.shape[0]:
            grown = np.zeros((max(64, 2 * row), STAT_WIDTH), dtype=np.int64)
            grown[:row] = self._stats[:row]
            self._stats = grown
            for i, other in enumerate(self._rows):  # their rows move with the matrix
                other.bind_stats(grown[i])
        self._rows.append(am)
        am.bind_stats(self._stats[row])
        am.survey_row = row
        self._sorted = None

    def clear(self) -> None:
        """Forget every agent and tag tuple (before a restore into this store)."""
        self._agents.clear()
        self._rows.clear()
        self._stats[:] = 0
        self._sorted = None
        self.tags.set_state([[]])

    def by_row(self, row: int) -> AgentMemory:
        """The agent whose survey row is ``row`` (``AgentMemory.survey_row``)."""
        return self._rows[row]

    def stat_column(self, column: int) -> NDArray[np.int64]:
        """One column of every agent's survey row, by row (creation order), read only.

        E.g. ``STAT_REMOVED``, to see which agents lost records since a reader last looked
        (compare with the values it kept, by ``survey_row``).
        """
        view = self._stats[:len(self._rows), column]
        view.flags.writeable = False
        return view

    def survey(self) -> tuple[list[AgentMemory], list[str], NDArray[np.int64]]:
        """Every agent and agent id in id order, and their survey rows.

        The rows are one ``(agents, STAT_WIDTH)`` array (a copy, aligned with the lists).
        Do not mutate the lists.

        Runtime complexity: O(agents) numpy (one fancy-index copy); the sorted order is
        cached until an agent is created.
        """
        cached = self._sorted
        if cached is None:
            ids = list(self._agents)
            agents = list(map(self._agents.__getitem__, ids))
            rows = {id(am): i for i, am in enumerate(self._rows)}
            cached = self._sorted = (agents, ids, np.fromiter(
                (rows[id(am)] for am in agents), np.intp, len(agents)))
        return cached[0], cached[1], self._stats[cached[2]]

    def agent_ids(self) -> list[str]:
        """Agent ids in sorted order."""
        return list(self._agents.keys())

    def __iter__(self) -> Iterator[AgentMemory]:
        """Agents in sorted id order."""
        return iter(self.agents())

    def agents(self) -> list[AgentMemory]:
        """Every agent's memory, in sorted id order (a new list)."""
        return list(map(self._agents.__getitem__, self._agents))

    def total_live(self) -> int:
        """Live records across all agents."""
        return sum(am.live for am in self._agents.values())

    def _check(self) -> None:
        """Assert the invariants of every agent."""
        self.tags._check()
        assert len(self._rows) == len(self._agents)
        for i, am in enumerate(self._rows):
            assert self._agents[am.agent_id] is am
            assert np.shares_memory(am.stats, self._stats[i]), "survey row detached"
            assert am.survey_row == i
        agents, ids, stats = self.survey()
        assert ids == [am.agent_id for am in agents]
        assert [am.agent_id for am in agents] == list(self._agents)
        assert (stats == np.array([am.stats for am in agents]).reshape(stats.shape)).all()
        for agent_id, am in self._agents.items():
            assert am.agent_id == agent_id and am.tags is self.tags
            am._check()
