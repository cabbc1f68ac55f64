"""MemoryStore: every agent's AgentMemory, in deterministic agent order."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sortedcontainers import SortedDict

from f09_memory.store.agent import AgentMemory
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
            self._agents[agent_id] = am
            if self.on_create is not None:
                self.on_create(am)
        return am

    def clear(self) -> None:
        """Forget every agent and tag tuple (before a restore into this store)."""
        self._agents.clear()
        self.tags.set_state([[]])

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
        for agent_id, am in self._agents.items():
            assert am.agent_id == agent_id and am.tags is self.tags
            am._check()
