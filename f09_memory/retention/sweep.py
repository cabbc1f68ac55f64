"""compact_store: one budgeted compaction slice across every agent, resumable by cursor.

Agents are visited in sorted id order starting at the cursor's agent. Checking an agent
costs one work unit (``layer_counts`` against the caps, O(1)); an agent over a cap gets a
:meth:`~f09_memory.retention.compaction.Compactor.compact_slice` with what is left of the
budget. The call stops when the budget is spent (the cursor then names the agent to resume
with, and the layer within it) or at the end of the id list (the pass is complete and the
cursor is reset), so a call visits each agent at most once.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import NamedTuple

from f09_memory.errors import InputInvalidError
from f09_memory.retention.compaction import CompactionCursor, Compactor
from f09_memory.store.records import Removed
from f09_memory.store.store import MemoryStore

__all__ = ["AgentCompaction", "StoreCompaction", "compact_store"]


class AgentCompaction(NamedTuple):
    """One agent's share of a :func:`compact_store` call (a plain 3-tuple too).

    Attributes:
        agent_id: The agent.
        removed: The records pruned from it this call, in pruning order (the engine emits
            ``memory:record:expired`` with reason ``retention`` for each).
        remaining: The agent's live records (all layers) after the pruning: the
            ``remaining`` of the ``memory:compaction`` event.
    """

    agent_id: str
    removed: list[Removed]
    remaining: int


class StoreCompaction(list[AgentCompaction]):
    """The agents a :func:`compact_store` call pruned, in the order it visited them.

    A ``list`` of :class:`AgentCompaction` (only agents that lost at least one record),
    with two attributes for the caller's accounting.

    Attributes:
        used_units: Work units the call spent.
        cycle_complete: Whether the call reached the end of the agent list (the next call
            starts a fresh pass at the first agent).
    """

    def __init__(self, used_units: int = 0, cycle_complete: bool = False) -> None:
        super().__init__()
        self.used_units = used_units
        self.cycle_complete = cycle_complete


def compact_store(
    store: MemoryStore,
    now: int,
    budget_units: int | None,
    cursor: CompactionCursor,
    compactor: Compactor,
    *,
    agents: Sequence[str] | None = None,
    strict: bool = False,
) -> StoreCompaction:
    """Run one budgeted compaction slice over the store's agents, resuming at ``cursor``.

    Args:
        store: Every agent's memory (mutated).
        now: Logical time for the decayed scores.
        budget_units: Work units the call may spend (``None``: unbounded, which finishes
            the pass). One unit per agent checked, plus what each ``compact_slice`` spends.
        cursor: Where to resume (mutated): the agent, and the layer within it.
        compactor: Selects and removes the records.
        agents: Visit only these agents (sorted ids, e.g. those over a cap); default all.
        strict: Passed to each ``compact_slice``: never start a layer whose scan and one
            removal do not fit (no overshoot).

    Returns:
        The agents that lost records, in visiting order (sorted ids from the cursor), each
        with its removed records and remaining live count; ``used_units`` and
        ``cycle_complete`` say what the call spent and whether it finished the pass.

    Raises:
        InputInvalidError: ``budget_units`` is negative or not an integer.

    Runtime complexity: O(agents visited) plus the slices' cost. Deterministic: the same
    store state and the same calls remove the same records in the same order.
    """
    if budget_units is not None and (
        isinstance(budget_units, bool) or not isinstance(budget_units, int) or budget_units < 0
    ):
        raise InputInvalidError(
            f"budget_units={budget_units!r:.40} is not a budget: pass a non-negative integer "
            "of work units, or None for an unbounded pass",
            details={"field": "budget_units"},
        )
    ids = store.agent_ids() if agents is None else list(agents)
    out = StoreCompaction()
    i = 0 if cursor.agent_id is None else bisect_left(ids, cursor.agent_id)
    if i == len(ids):  # the cursor's agent sorts after every id: wrap to a fresh pass
        i = 0
    used = 0
    while i < len(ids):
        left = None if budget_units is None else budget_units - used
        if left is not None and left <= 0:
            break
        am = store.get(ids[i])
        assert am is not None
        used += 1
        if compactor.needs_compaction(am):
            result = compactor.compact_slice(am, now, None if left is None else left - 1, cursor,
                                             strict=strict)
            used += result.scanned_units
            if result.removed_records:
                out.append(AgentCompaction(am.agent_id, result.removed_records, am.live))
            if not result.done:
                break
        i += 1
    out.used_units = used
    if i == len(ids):
        out.cycle_complete = True
        cursor.reset()
    elif cursor.agent_id != ids[i]:
        cursor.agent_id = ids[i]
        cursor.layer_pos = 0
    return out
