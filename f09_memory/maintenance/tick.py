"""Maintenance: what one ``tick(now, budget_ms=B)`` does, in a bounded, budgeted slice.

The budget is ``B * work_units_per_ms`` work units, and every kind of work is charged by
the cost model (``MemoryConfig.tick_costs``, calibrated against measured time on a
reference machine: ``benchmarks/bench_tick_costs.py``). Work is counted, never timed, so the
same calls do the same work on every machine. A tick:

1. attaches the vectors of async embedding jobs that came due (``embedding_mode="async"``),
   then checks every agent at once (vectorized over the agents, ``tick_costs.agent`` each): which
   have a TTL deadline passed, which are due a summarization check, which layers are over
   their caps. Decay is lazy (a record's decayed importance is a pure function of ``now``,
   computed where it is used), so no pass rewrites it and no agent waits for decay;
2. times out summarization tasks whose LLM answer is overdue (logical time) and applies
   tasks finished without the LLM (heuristic or skip modes, time-outs), one task per step;
3. visits the due agents in id order from where the last tick stopped: TTL expiry and
   summarization scheduling;
4. with budget left: compaction of layers over their caps (records beyond ``cap + slack``
   never wait for a tick: ingest evicts them, see ``core.writer``), re-embedding of records
   whose embedding failed or went stale, and vector-index slices;
5. with budget left: a procedural mining slice (``procedural.miner``), resuming at each
   agent's cursor; one record (with its n-grams and procedural record writes) is one item.

Each step takes its first item whenever any budget is left (the due agents: always), so a
tick always makes progress and overshoots by at most one item per step. No item costs more
than about 0.35 ms of the reference machine with the default settings (a summary of 25
sources is three items: its selection, about 0.32 ms; making it, 0.25 ms; applying it,
0.22 ms; a mined action record whose two n-grams both write their procedural records,
with its agent's visit, 0.25 ms), so a tick overshoots by well under 1 ms. What does
not fit stays for the next tick and shows in the report's backlog; when the backlog grows
``tick_behind_after`` ticks in a row the report says ``behind`` and ``memory:tick:behind``
is emitted. Last, ``memory:tick`` reports the tick's wall time (a perf counter, for
metrics only) and the live records after it; it is built only when someone listens.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from typing import Any

import numpy as np

from f09_memory._validate import check_budget_ms, check_now
from f09_memory.bus import (
    DecayApplied,
    MemoryCompaction,
    PressureChanged,
    RecordExpired,
    TickBehind,
    TickCompleted,
)
from f09_memory.core.state import EngineState
from f09_memory.core.writer import Writer
from f09_memory.errors import InputInvalidError
from f09_memory.maintenance.budget import WorkBudget
from f09_memory.procedural.miner import ProceduralMiner
from f09_memory.protocols import PressureSource
from f09_memory.retention import Compactor, compact_store
from f09_memory.retrieval.indexing import IndexBuilder
from f09_memory.retrieval.semantic import SemanticMemory
from f09_memory.schema.enums import PressureState
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import NO_DEADLINE
from f09_memory.summarization.service import SummarizationService

__all__ = ["Maintenance", "TickBacklog", "TickReport"]

_MIN_DEADLINE = attrgetter("min_deadline")
_MIN_ANCHOR = attrgetter("min_episodic_anchor")
_SLOT_OF = attrgetter("slot_of")
_AGENT_ID = attrgetter("agent_id")
_LAYER_COUNTS = attrgetter("layer_counts")


@dataclass(frozen=True, slots=True)
class TickBacklog:
    """Work a tick left for the next ones (all counts; 0 everywhere when caught up).

    Attributes:
        agents_due: Agents whose TTL expiry or summarization check was due but did not fit.
        over_soft_caps: Live records above their layer's cap (at most the ingest slack per
            agent and layer; compaction removes them).
        pending_summaries: Summarization tasks queued, running, or finished without the
            LLM and waiting to be applied.
        embedding_retries: Live records waiting to be (re-)embedded.
        index_work: Vectors still to insert into indexes being (or due to be) built.
        actions_unmined: Action records the procedural miner has not read yet.
    """

    agents_due: int = 0
    over_soft_caps: int = 0
    pending_summaries: int = 0
    embedding_retries: int = 0
    index_work: int = 0
    actions_unmined: int = 0

    @property
    def total(self) -> int:
        """The sum of the figures (what ``behind`` watches)."""
        return (self.agents_due + self.over_soft_caps + self.pending_summaries
                + self.embedding_retries + self.index_work + self.actions_unmined)


@dataclass(frozen=True, slots=True)
class TickReport:
    """What one ``tick`` did and what it left for the next.

    Attributes:
        now: The tick's logical time.
        budget_units: Work units the budget allowed (``None``: unbounded).
        used_units: Work units spent (the cost model's estimate of the time taken).
        agents_processed: Due agents whose TTL expiry and summarization check ran.
        decayed: Live records of every agent (their decayed importance is a pure function
            of ``now``, evaluated where it is used: decay never waits for budget).
        expired: Records removed because their TTL passed.
        deferred_agents: The number of due agents left for the next tick because the budget
            ran out (``backlog.agents_due``; 0 when every due agent was processed).
        cycle_complete: Whether every due agent was processed.
        pruned: Records removed by compaction because their layer was over its cap.
        summaries_queued: Summarization tasks scheduled.
        summaries_applied: Tasks finished without the LLM (heuristic, skipped, timed out)
            and applied this tick.
        timed_out: Running tasks whose LLM answer was overdue (heuristic summary instead).
        embedded: Records (re-)embedded this tick (earlier failures, a new provider, or the
            async embedding jobs that came due).
        pressure: The pressure state in force after the tick.
        mined: Action records the procedural miner read this tick.
        backlog: What is left for later ticks.
        behind: Whether the backlog has grown ``tick_behind_after`` ticks in a row.
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
    summaries_applied: int = 0
    timed_out: int = 0
    mined: int = 0
    backlog: TickBacklog = TickBacklog()
    behind: bool = False


class Maintenance:
    """Runs tick slices for one engine.

    Args:
        state: The engine state.
        writer: Removes records with their events, publishes.
        summarization: Schedules and applies summaries.
        semantic: Re-embedding and index slices.
        miner: The procedural pattern miner (``None``: no mining).
        pressure_source: The rate governor polled at the start of each tick.
    """

    def __init__(self, state: EngineState, writer: Writer, summarization: SummarizationService,
                 semantic: SemanticMemory, miner: ProceduralMiner | None = None,
                 pressure_source: PressureSource | None = None) -> None:
        self._state = state
        self.pressure_source = pressure_source
        self._miner = miner
        self._writer = writer
        self._summarization = summarization
        self._semantic = semantic
        self._indexes = IndexBuilder(state.config, semantic.seed)
        costs = state.config.tick_costs
        self._costs = costs
        self._compactor = Compactor(state.config, removal_cost_units=costs.prune,
                                    scan_cost_units=costs.scan)
        self._caps = self._compactor.caps

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
        am.set_bounds(min_deadline=int(rest.min()) if rest.shape[0] else NO_DEADLINE)
        return int(due.shape[0])

    def set_pressure(self, value: PressureState | str) -> None:
        """Put the pressure state ``value`` in force; ``memory:pressure:changed`` on a change.

        Raises:
            InputInvalidError: ``value`` is not a pressure state.
        """
        try:
            new = PressureState(value)
        except ValueError:
            raise InputInvalidError(
                f"unknown pressure state; use one of {[p.value for p in PressureState]}",
                details={"field": "state"},
            ) from None
        old = self._state.pressure
        if new is not old:
            self._state.pressure = new
            self._writer.publish([PressureChanged(previous=old.value, current=new.value)])

    def tick(self, now: object, budget_ms: object) -> TickReport:
        """Validate ``now`` (not before the clock) and the budget, then :meth:`run`.

        Raises:
            InputInvalidError: ``now`` earlier than the engine clock, or a bad budget.
        """
        t = check_now(now)
        clock = self._state.clock
        if t < clock:
            raise InputInvalidError(
                f"tick(now={t}) is earlier than the engine clock {clock}; logical time must "
                "not run backwards", details={"now": t, "clock": clock})
        return self.run(t, WorkBudget(check_budget_ms(budget_ms,
                                                      self._state.config.work_units_per_ms)))

    def run(self, now: int, budget: WorkBudget) -> TickReport:
        """One tick at ``now`` (already validated and not before the clock)."""
        t0 = time.perf_counter()
        state = self._state
        costs = self._costs
        state.clock = now
        if self.pressure_source is not None:
            self.set_pressure(self.pressure_source.poll(now))
        agents = state.store.agents()
        n = len(agents)
        budget.spend(n * costs.agent)
        events: list[Any] = []
        attached = self._semantic.apply_due(state.store, now, events)  # async embedding
        budget.spend(attached * costs.embed_apply)
        summarization = self._summarization
        timed_out = summarization.time_out(now, events)
        applied = summarization.apply_ready(budget, costs, events)

        due_expiry, due_summary, live = self._due(agents, now)
        due = np.flatnonzero(due_expiry | due_summary)
        start = int(np.searchsorted(due, state.tick_cursor if state.tick_cursor < n else 0))
        order = np.concatenate((due[start:], due[:start])).tolist()
        expired = processed = queued = 0
        for i in order:
            am = agents[i]
            scan = costs.scan + am.hi * costs.scan_slot
            if processed and not budget.fits(scan):
                break
            if due_expiry[i]:
                budget.spend(scan)
                removed = self.expire(am, now, events)
                budget.spend(removed * costs.expire)
                expired += removed
            if due_summary[i]:
                budget.spend(scan)
                task = summarization.schedule(am, now, events)
                if task is not None:
                    budget.spend(len(task.source_ids) * costs.summary_select)
                    queued += 1
            processed += 1
            state.tick_cursor = (i + 1) % n
        left = len(order) - processed
        if queued and not budget.spent:
            applied += summarization.apply_ready(budget, costs, events)
        if self._writer.wants(DecayApplied.name):
            events.extend(DecayApplied(agent_id=agents[i].agent_id, affected=int(live[i]))
                          for i in np.flatnonzero(live).tolist())

        pruned, over_soft = self._compact(agents, now, budget, events)
        embedded = 0
        if not budget.spent:
            embedded, spent, failures = self._semantic.retry_slice(state.store, budget.left,
                                                                   now)
            events.extend(failures)
            budget.spend(spent)
        indexing = self._indexes.candidates(agents, live)
        if not budget.spent and indexing:
            budget.spend(self._indexes.slice(indexing, budget.left))
        mined, unmined = self._mine(now, budget, events)

        backlog = TickBacklog(
            agents_due=left,
            over_soft_caps=over_soft,
            pending_summaries=summarization.summarizer.pending_count
            + summarization.summarizer.ready_count,
            embedding_retries=self._semantic.retry_backlog(state.store),
            index_work=self._indexes.backlog(indexing),
            actions_unmined=unmined,
        )
        behind = self._watch(backlog, events)
        self._writer.publish(events)
        if self._writer.wants(TickCompleted.name):
            self._writer.publish([TickCompleted(
                now=now, tick_ms=(time.perf_counter() - t0) * 1000.0, used_units=budget.used,
                records=state.store.total_live())])
        return TickReport(
            now=now,
            budget_units=budget.total,
            used_units=budget.used,
            agents_processed=processed,
            decayed=int(live.sum()),
            expired=expired,
            deferred_agents=left,
            cycle_complete=left == 0,
            pruned=pruned,
            summaries_queued=queued,
            embedded=embedded + attached,
            pressure=state.pressure,
            summaries_applied=applied,
            timed_out=timed_out,
            mined=mined,
            backlog=backlog,
            behind=behind,
        )

    def _mine(self, now: int, budget: WorkBudget, events: list[Any]) -> tuple[int, int]:
        """The procedural mining slice: ``(action records mined, action records left)``."""
        miner = self._miner
        if miner is None:
            return 0, 0
        if budget.spent:
            return 0, miner.backlog()
        report = miner.slice(now, budget, events)
        return report.mined, 0 if report.complete else miner.backlog()

    def _due(self, agents: list[AgentMemory], now: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per agent: TTL expiry due, summarization check due, live records (vectorized)."""
        n = len(agents)
        summarizer = self._summarization.summarizer
        cfg = self._state.config
        deadline = np.fromiter(map(_MIN_DEADLINE, agents), np.int64, n)
        anchor = np.fromiter(map(_MIN_ANCHOR, agents), np.int64, n)
        live = np.fromiter(map(len, map(_SLOT_OF, agents)), np.int64, n)
        next_check = np.fromiter(map(summarizer.next_checks.get, map(_AGENT_ID, agents),
                                     repeat(0)), np.int64, n)
        due_expiry = deadline <= now
        due_summary = (anchor <= now - cfg.episodic_window) & (next_check <= now)
        for i in np.flatnonzero(due_summary).tolist():
            if summarizer.locked(agents[i].agent_id):
                due_summary[i] = False
        return due_expiry, due_summary, live

    def _compact(self, agents: list[AgentMemory], now: int, budget: WorkBudget,
                 events: list[Any]) -> tuple[int, int]:
        """Compaction of the agents over a cap; returns ``(pruned, records still over)``."""
        codes, caps = self._caps
        if not codes.shape[0] or not agents:
            return 0, 0
        counts = np.concatenate(list(map(_LAYER_COUNTS, agents))).reshape(len(agents), -1)
        counts = counts[:, codes]
        over = np.flatnonzero((counts > caps).any(axis=1))
        if not over.shape[0]:
            return 0, 0
        candidates = [agents[i] for i in over.tolist()]
        pruned = 0
        if not budget.spent:
            state = self._state
            sweep = compact_store(state.store, now, budget.left, state.compaction,
                                  self._compactor, agents=[am.agent_id for am in candidates])
            budget.spend(sweep.used_units)
            report_expired = self._writer.wants(RecordExpired.name)
            for agent_id, removed, remaining in sweep:
                pruned += len(removed)
                if report_expired:
                    events.extend(RecordExpired(id=r.id, layer=r.layer.value,
                                                reason="retention") for r in removed)
                events.append(MemoryCompaction(agent_id=agent_id, removed=len(removed),
                                               remaining=remaining))
        left = sum(int(np.maximum(am.layer_counts[codes] - caps, 0).sum()) for am in candidates)
        return pruned, left

    def _watch(self, backlog: TickBacklog, events: list[Any]) -> bool:
        """Track how many ticks in a row the backlog grew; emit ``memory:tick:behind``."""
        state = self._state
        total = backlog.total
        state.backlog_streak = state.backlog_streak + 1 if total > state.backlog_total else 0
        state.backlog_total = total
        after = state.config.tick_behind_after
        streak = state.backlog_streak
        if streak and streak % after == 0:
            events.append(TickBehind(
                ticks=streak, agents_due=backlog.agents_due,
                over_soft_caps=backlog.over_soft_caps,
                pending_summaries=backlog.pending_summaries,
                embedding_retries=backlog.embedding_retries, index_work=backlog.index_work))
        return streak >= after

