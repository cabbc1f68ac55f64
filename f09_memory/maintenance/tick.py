"""Maintenance: what one ``tick(now, budget_ms=...)`` does, in a bounded slice.

Per agent, in id order from where the last tick stopped: TTL expiry (skipped unless a
deadline may have passed) and summarization scheduling. Decay is lazy: a record's decayed
importance is ``importance * exp(-(now - anchor) / halfLife)``, a pure function of ``now``
computed where it is used (summarization selection, compaction), so no pass rewrites it.
With budget left: a compaction slice (layers over their retention caps), re-embedding of
records whose embedding failed or went stale, and vector-index slices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from f09_memory.bus import DecayApplied, MemoryCompaction, RecordExpired
from f09_memory.core.state import EngineState
from f09_memory.core.writer import Writer
from f09_memory.maintenance.budget import WorkBudget
from f09_memory.retention import Compactor, compact_store
from f09_memory.retrieval.semantic import SemanticMemory
from f09_memory.schema.enums import PressureState
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import NO_DEADLINE
from f09_memory.summarization.service import SummarizationService

__all__ = ["Maintenance", "TickReport"]


@dataclass(frozen=True, slots=True)
class TickReport:
    """What one ``tick`` did and what it left for the next.

    Attributes:
        now: The tick's logical time.
        budget_units: Work units the budget allowed (``None``: unbounded).
        used_units: Work units spent.
        agents_processed: Agents whose expiry and summarization scheduling ran this tick.
        decayed: Live records of the processed agents (their decayed importance is a pure
            function of ``now``, evaluated where it is used).
        expired: Records removed because their TTL passed.
        deferred_agents: How many agents were left for the next tick because the budget ran
            out (0 when the pass over all agents completed).
        pruned: Records removed by compaction because their layer was over its cap.
        summaries_queued: Summarization tasks scheduled (finished at once under heuristic or
            skip pressure modes).
        embedded: Records (re-)embedded this tick (earlier failures, or a new provider).
        cycle_complete: Whether this tick finished a full pass over all agents.
        pressure: The pressure state in force after the tick.
    """

    now: int
    budget_units: int | None
    used_units: int
    agents_processed: int
    decayed: int
    expired: int
    deferred_agents: int
    cycle_complete: bool
    pruned: int
    summaries_queued: int
    embedded: int
    pressure: PressureState


class Maintenance:
    """Runs tick slices for one engine.

    Args:
        state: The engine state.
        writer: Removes records with their events, publishes.
        summarization: Schedules summaries.
        semantic: Re-embedding and index slices.
    """

    def __init__(self, state: EngineState, writer: Writer, summarization: SummarizationService,
                 semantic: SemanticMemory) -> None:
        self._state = state
        self._writer = writer
        self._summarization = summarization
        self._semantic = semantic
        self._compactor = Compactor(state.config,
                                    removal_cost_units=state.config.removal_cost_units)

    def expire(self, am: AgentMemory, now: int, events: list[Any]) -> int:
        """Remove ``am``'s records whose TTL passed at ``now``; return how many.

        Runtime complexity: O(1) while no deadline can have passed, else O(n) numpy.
        """
        if now < am.min_deadline:
            return 0
        hi = am.hi
        live = am.alive[:hi]
        deadlines = am.deadline[:hi]
        due = np.flatnonzero(live & (deadlines <= now))
        for key in np.sort(am.key[due]).tolist():
            self._writer.remove(am, key, "ttl", events)
        rest = deadlines[live & (deadlines > now)]
        am.min_deadline = int(rest.min()) if rest.shape[0] else NO_DEADLINE
        return int(due.shape[0])

    def run(self, now: int, budget: WorkBudget,
            poll_pressure: Callable[[int], None]) -> TickReport:
        """One tick at ``now`` (already validated and not before the clock)."""
        state = self._state
        state.clock = now
        poll_pressure(now)
        agents = list(state.store)
        n = len(agents)
        cursor = state.tick_cursor if state.tick_cursor < n else 0
        decayed = expired = processed = queued = 0
        events: list[Any] = []
        report_decay = self._writer.wants(DecayApplied.name)
        while processed < n:
            am = agents[cursor]
            cost = am.hi + 1
            if processed and not budget.fits(cost):
                break
            budget.spend(cost)
            expired += self.expire(am, now, events)
            live = am.live
            decayed += live
            if live and report_decay:
                events.append(DecayApplied(agent_id=am.agent_id, affected=live))
            if self._summarization.schedule(am, now, events) is not None:
                queued += 1
            processed += 1
            cursor += 1
            if cursor == n:
                cursor = 0
                break
        complete = cursor == 0
        state.tick_cursor = cursor
        pruned = 0
        if not budget.spent:
            sweep = compact_store(state.store, now, budget.left, state.compaction,
                                  self._compactor)
            budget.spend(sweep.used_units)
            report_expired = self._writer.wants(RecordExpired.name)
            for agent_id, removed, remaining in sweep:
                pruned += len(removed)
                if report_expired:
                    events.extend(RecordExpired(id=r.id, layer=r.layer.value,
                                                reason="retention") for r in removed)
                events.append(MemoryCompaction(agent_id=agent_id, removed=len(removed),
                                               remaining=remaining))
        embedded = 0
        if not budget.spent:
            embedded, spent, failures = self._semantic.retry_slice(state.store, budget.left)
            events.extend(failures)
            budget.spend(spent)
        if not budget.spent:
            budget.spend(self._semantic.index_slice(state.store, budget.left))
        self._writer.publish(events)
        return TickReport(
            now=now,
            budget_units=budget.total,
            used_units=budget.used,
            agents_processed=processed,
            decayed=decayed,
            expired=expired,
            deferred_agents=0 if complete else n - cursor,
            cycle_complete=complete,
            pruned=pruned,
            summaries_queued=queued,
            embedded=embedded,
            pressure=state.pressure,
        )
