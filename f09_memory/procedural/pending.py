"""PendingQueue: the records the procedural miner has not read yet, with an exact count.

Per agent, :class:`PendingActions` holds the keys past the agent's mining cursor whose
records may be actions (``procedural.actions.may_be_action``), ascending, and how many of
them are still live. The miner's backlog (``TickReport.backlog.actions_unmined``) is the
queue's :attr:`PendingQueue.total`, kept exact incrementally instead of recounted each tick:

- a stored record that may be an action is appended live (``add``: records are stored in
  key order, past every cursor);
- a slice that reads ``n`` keys drops them and their live count (``consume``);
- a removal is seen through the agent's removal counter (``AgentMemory.removed_count``,
  a column of the store's survey matrix): one numpy comparison finds the agents whose
  counter moved since the queue last looked, and only those have their keys re-checked
  against their live records, the removed keys dropped (``refresh``).

The queue is derived state (from the store and the cursors), never saved: the miner
rebuilds it after a restore or a replay (``rebuild``).

Runtime complexity: ``add`` O(k); ``consume`` O(1) amortized (a read offset, compacted when
half the list is read); ``refresh`` O(agents) numpy plus O(pending keys) of the pending
agents that lost records; ``total`` O(1).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from f09_memory.store.agent import STAT_REMOVED, AgentMemory
from f09_memory.store.store import MemoryStore

__all__ = ["PendingActions", "PendingQueue"]


class PendingActions:
    """One agent's unread keys that may be actions: ``keys[start:]``, ascending.

    Attributes:
        keys: Keys (some read: below ``start``; some possibly removed since ``live`` was
            counted, when the agent's removal counter moved).
        start: Index of the first unread key.
        live: How many of ``keys[start:]`` were live when last counted.
        seen_removed: The agent's ``removed_count`` when ``live`` was last exact.
    """

    __slots__ = ("keys", "live", "seen_removed", "start")

    def __init__(self, keys: list[int], seen_removed: int) -> None:
        self.keys = keys
        self.start = 0
        self.live = len(keys)
        self.seen_removed = seen_removed

    def unread(self) -> list[int]:
        """The unread keys (a new list)."""
        return self.keys[self.start:]

    def __len__(self) -> int:
        return len(self.keys) - self.start


class PendingQueue:
    """Every agent's :class:`PendingActions`, and the exact live total."""

    __slots__ = ("_by_agent", "_seen", "total")

    def __init__(self) -> None:
        self._by_agent: dict[str, PendingActions] = {}
        self._seen: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        """Every agent's removal counter when the queue last looked, by survey row."""
        self.total = 0
        """Live unread keys of every agent (exact after :meth:`refresh`)."""

    def __len__(self) -> int:
        return len(self._by_agent)

    def __contains__(self, agent_id: object) -> bool:
        return agent_id in self._by_agent

    def agents(self) -> list[str]:
        """Agents with unread keys, sorted."""
        return sorted(self._by_agent)

    def get(self, agent_id: str) -> PendingActions | None:
        """The agent's entry, or ``None``."""
        return self._by_agent.get(agent_id)

    def clear(self) -> None:
        """Forget everything."""
        self._by_agent.clear()
        self._seen = np.zeros(0, dtype=np.int64)
        self.total = 0

    def rebuild(self, entries: Iterable[tuple[AgentMemory, list[int]]]) -> None:
        """Start over from ``(agent, ascending live keys)`` pairs (after a restore)."""
        self.clear()
        for am, keys in entries:
            if keys:
                self._by_agent[am.agent_id] = PendingActions(keys, am.removed_count)
                self.total += len(keys)

    def add(self, am: AgentMemory, keys: list[int]) -> None:
        """Append ``am``'s newly stored keys (ascending, above every key it holds)."""
        entry = self._by_agent.get(am.agent_id)
        if entry is None:
            self._by_agent[am.agent_id] = PendingActions(list(keys), am.removed_count)
        else:
            entry.keys.extend(keys)
            entry.live += len(keys)
        self.total += len(keys)

    def drop(self, agent_id: str) -> None:
        """Forget the agent's entry (its memory was forgotten, or it has none left)."""
        entry = self._by_agent.pop(agent_id, None)
        if entry is not None:
            self.total -= entry.live

    def refresh_agent(self, am: AgentMemory) -> PendingActions | None:
        """Make ``am``'s entry exact (dropping removed keys) if it lost records since."""
        entry = self._by_agent.get(am.agent_id)
        if entry is None or entry.seen_removed == am.removed_count:
            return entry
        slot_of = am.slot_of
        kept = [k for k in entry.keys[entry.start:] if k in slot_of]
        self.total += len(kept) - entry.live
        entry.keys, entry.start, entry.live = kept, 0, len(kept)
        entry.seen_removed = am.removed_count
        if not kept:
            del self._by_agent[am.agent_id]
            return None
        return entry

    def refresh(self, store: MemoryStore) -> int:
        """Make every entry exact; return :attr:`total`.

        The agents whose removal counter moved since the last call are found with one
        numpy comparison over the store's survey column; only the pending ones among them
        are re-checked (:meth:`refresh_agent`).
        """
        counts = store.stat_column(STAT_REMOVED)
        seen = self._seen
        if seen.shape[0] < counts.shape[0]:
            seen = self._seen = np.concatenate(
                (seen, np.full(counts.shape[0] - seen.shape[0], -1, dtype=np.int64)))
        moved = np.flatnonzero(counts != seen[:counts.shape[0]])
        if moved.shape[0]:
            by_agent = self._by_agent
            for row in moved.tolist():
                am = store.by_row(row)
                if am.agent_id in by_agent:
                    self.refresh_agent(am)
            seen[moved] = counts[moved]
        return self.total

    def consume(self, agent_id: str, read: int) -> None:
        """The agent's first ``read`` unread keys were read (all live: refreshed first)."""
        entry = self._by_agent[agent_id]
        entry.start += read
        entry.live -= read
        self.total -= read
        if entry.start >= len(entry.keys):
            del self._by_agent[agent_id]
        elif entry.start * 2 >= len(entry.keys):
            del entry.keys[:entry.start]
            entry.start = 0

    def _check(self, lookup: dict[str, AgentMemory]) -> None:
        """Assert the count is exact and the keys ascending (tests call this)."""
        total = 0
        for agent_id, entry in self._by_agent.items():
            unread = entry.unread()
            assert unread == sorted(set(unread)) and unread, "keys not ascending or empty"
            am = lookup[agent_id]
            live = sum(k in am.slot_of for k in unread)
            if entry.seen_removed == am.removed_count:
                assert live == entry.live, "live count drifted"
            total += entry.live
        assert total == self.total, "total drifted"
