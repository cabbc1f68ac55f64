"""Maintenance: what one ``tick(now, budget_ms=B)`` does, in a bounded, budgeted slice.

The budget is ``B * work_units_per_ms`` work units, and every kind of work is charged by
the cost model (``MemoryConfig.tick_costs``, calibrated against measured time on a
reference machine: ``benchmarks/bench_hostloop.py::test_tick_cost_model_calibration``
prints the measured µs per unit of each kind). Work is counted, never timed, so the same
calls do the same work on every machine. A tick:

1. pays its fixed cost (``tick_costs.tick``, plus ``tick_costs.agent`` per agent): attaches
   the vectors of async embedding jobs that came due (``embedding_mode="async"``), times
   out overdue summarization tasks (logical time), and surveys every agent at once from the
   store's survey matrix (``MemoryStore.survey``: a few numpy comparisons over the crowd,
   no per-agent Python): which have a TTL deadline passed, which are due a summarization
   check, which layers are over their caps, which need index work. Decay is lazy (a
   record's decayed importance is a pure function of ``now``, computed where it is used),
   so no pass rewrites it and no agent waits for decay;
2. applies summarization tasks finished without the LLM (heuristic or skip modes,
   time-outs): making a summary and applying it are one item each;
3. visits the due agents in id order from where the last tick stopped: a TTL expiry
   (removals sliced by the budget) and a summarization check (one item each; a check's
   fit is judged on its largest outcome, a full batch). When an agent's visit is the
   tick's first item, the whole visit is (its expiry, then its check), so the cursor
   moves on every tick and every due agent's turn comes;
4. compaction of layers over their caps (one layer scan and its removals per item; records
   beyond ``cap + slack`` never wait for a tick: ingest evicts them, see ``core.writer``),
   re-embedding of records whose embedding failed or went stale, vector-index slices;
5. a procedural mining slice (``procedural.miner``), resuming at each agent's cursor, only
   when its smallest form (``mine_slice + mine_agent + mine_record``) fits; one record
   (with its n-grams and procedural record writes) is one item.

An item is started only when its cost fits in what the budget has left; the only exception
is the minimum-progress rule (``maintenance.budget``): the tick's first item is always
taken, so a budget too small for any item still does one item per tick (the first step with
work, in the order above) and nothing waits forever. A tick therefore overshoots by at most
one item, and only when it did nothing else. The largest item with the default settings is
a summarization check that schedules a full batch of 25 sources (about 0.35 ms of the
reference machine). What does not fit stays for the next tick and shows in the report's
backlog; when the backlog grows ``tick_behind_after`` ticks in a row the report says
``behind`` and ``memory:tick:behind`` is emitted. Last, ``memory:tick`` reports the tick's
wall time (a perf counter, for metrics only) and the live records after it; it is built
only when someone listens.

Charges never depend on slot layout (a loaded engine has compacted slots): scans are
charged by live records, so a saved and loaded engine ticks exactly as the original.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import repeat
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
from f09_memory.retrieval.indexing import IndexBuilder, index_threshold
from f09_memory.retrieval.semantic import SemanticMemory
from f09_memory.schema.enums import PressureState
from f09_memory.store.agent import (
    STAT_BUILDING,
    STAT_DEADLINE,
    STAT_EPISODIC_ANCHOR,
    AgentMemory,
)
from f09_memory.store.records import NO_DEADLINE
from f09_memory.summarization.service import SummarizationService

__all__ = ["Maintenance", "TickBacklog", "TickReport"]

_N_LAYERS = STAT_DEADLINE


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

    def expire(self, am: AgentMemory, now: int, events: list[Any],
               limit: int | None = None) -> tuple[int, int]:
        """Remove ``am``'s records whose TTL passed; return ``(removed, left due)``.

        At most ``limit`` of them, lowest keys first.

        ``min_deadline`` stays a lower bound of the live deadlines (at or before ``now``
        while some are left due), so the agent stays due until every one is removed.
        Runtime complexity: O(1) while no deadline can have passed, else O(n) numpy.
        """
        if now < am.min_deadline:
            return 0, 0
        hi = am.hi
        live = am.alive[:hi]
        deadlines = am.deadline[:hi]
        due = np.flatnonzero(live & (deadlines <= now))
        keys = np.sort(am.key[due])
        take = keys if limit is None else keys[:max(0, limit)]
        for key in take.tolist():
            self._writer.remove(am, key, "ttl", events)
        left = int(keys.shape[0] - take.shape[0])
        if left:
            am.set_bounds(min_deadline=int(deadlines[am.alive[:hi]].min()))
        else:
            rest = deadlines[live & (deadlines > now)]
            am.set_bounds(min_deadline=int(rest.min()) if rest.shape[0] else NO_DEADLINE)
        return int(take.shape[0]), left

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
        agents, ids, stats = state.store.survey()
        n = len(agents)
        live = stats[:, :_N_LAYERS].sum(axis=1)
        report_decay = self._writer.wants(DecayApplied.name)
        budget.spend(costs.tick + n * costs.agent
                     + (n * costs.event if report_decay else 0))  # fixed: always paid
        events: list[Any] = []
        attached, blocks = self._semantic.apply_due(state.store, now, events)  # async mode
        budget.spend(attached * costs.embed_apply + blocks * costs.embed_apply_agent)
        summarization = self._summarization
        timed_out = summarization.time_out(now, events)
        applied = summarization.apply_ready(budget, costs, events)

        expired, processed, queued, left = self._visit(agents, ids, stats, live, now, budget,
                                                       events)
        if queued and not budget.spent:
            applied += summarization.apply_ready(budget, costs, events)
        if report_decay:
            events.extend(DecayApplied(agent_id=ids[i], affected=int(live[i]))
                          for i in np.flatnonzero(live).tolist())

        pruned, over_soft = self._compact(agents, stats, now, budget, events)
        embedded = self._embed(now, budget, events)
        indexing = self._index_candidates(agents, stats, live)
        if indexing and budget.admits(costs.index_insert_exact):
            used = self._indexes.slice(indexing, self._room(budget))
            if used:
                budget.take(used)
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

    def _visit(self, agents: list[AgentMemory], ids: list[str], stats: np.ndarray,
               live: np.ndarray, now: int, budget: WorkBudget, events: list[Any]
               ) -> tuple[int, int, int, int]:
        """Step 3: the due agents' TTL expiry and summarization checks.

        In id order from the tick cursor. Returns ``(expired, agents processed, tasks
        queued, agents left)``.
        """
        state = self._state
        costs = self._costs
        n = len(agents)
        due_expiry, due_summary = self._due(ids, stats, now)
        due = np.flatnonzero(due_expiry | due_summary)
        if not due.shape[0]:
            return 0, 0, 0, 0
        start = int(np.searchsorted(due, state.tick_cursor if state.tick_cursor < n else 0))
        order = np.concatenate((due[start:], due[:start])).tolist()
        summarization = self._summarization
        check = costs.summary_check
        largest_task = (costs.summary_task
                        + state.config.summarization_batch_size * costs.summary_select)
        expired = processed = queued = 0
        for i in order:
            am = agents[i]
            first = not budget.items  # the tick's first item: the agent's whole visit
            if due_expiry[i]:
                scan = costs.scan + int(live[i]) * costs.scan_slot
                if not budget.admits(scan + costs.expire):
                    break
                budget.take(scan)
                room = budget.left
                limit = None if room is None else max(1, room // costs.expire)
                removed, rest = self.expire(am, now, events, limit)
                budget.spend(removed * costs.expire)
                expired += removed
                if rest:
                    break  # the agent stays due: it resumes here next tick
            if due_summary[i]:
                if not (first or budget.fits(check + largest_task)):
                    break
                budget.take(check)
                task = summarization.schedule(am, now, events)
                if task is not None:
                    budget.spend(costs.summary_task
                                 + len(task.source_ids) * costs.summary_select)
                    queued += 1
            processed += 1
            state.tick_cursor = (i + 1) % n
        return expired, processed, queued, len(order) - processed

    @staticmethod
    def _room(budget: WorkBudget) -> int | None:
        """What a step that slices by item may spend.

        What is left, or (the tick's first item, minimum progress) one unit, which such a
        step turns into exactly one item.
        """
        left = budget.left
        return left if budget.items or left is None else max(1, left)

    def _embed(self, now: int, budget: WorkBudget, events: list[Any]) -> int:
        """Re-embed records whose embedding failed or went stale; return how many.

        Texts in key order, each an item (``tick_costs.embed``).
        """
        semantic = self._semantic
        if not semantic.retry_agents or not budget.admits(semantic.embed_cost()):
            return 0
        embedded, spent, failures = semantic.retry_slice(self._state.store,
                                                         self._room(budget), now)
        events.extend(failures)
        if spent:
            budget.take(spent)
        return embedded

    def _mine(self, now: int, budget: WorkBudget, events: list[Any]) -> tuple[int, int]:
        """The procedural mining slice: ``(action records mined, action records left)``."""
        miner = self._miner
        if miner is None:
            return 0, 0
        unmined = miner.backlog()
        if not unmined:
            return 0, 0
        costs = self._costs
        if not budget.admits(costs.mine_slice + costs.mine_agent + costs.mine_record):
            return 0, unmined
        report = miner.slice(now, budget, events)
        return report.mined, miner.backlog()

    def _due(self, ids: list[str], stats: np.ndarray, now: int
             ) -> tuple[np.ndarray, np.ndarray]:
        """Per agent: TTL expiry due, summarization check due.

        Vectorized over the survey; the summarizer's next-check times are read for the
        agents old enough, its locks only for those whose check is due.
        """
        summarizer = self._summarization.summarizer
        due_expiry = stats[:, STAT_DEADLINE] <= now
        due_summary = stats[:, STAT_EPISODIC_ANCHOR] <= now - self._state.config.episodic_window
        old = np.flatnonzero(due_summary)
        if old.shape[0]:
            get = summarizer.next_checks.get
            if old.shape[0] == len(ids):
                next_check = np.fromiter(map(get, ids, repeat(0)), np.int64, len(ids))
            else:
                old_ids = [ids[i] for i in old.tolist()]
                next_check = np.fromiter(map(get, old_ids, repeat(0)), np.int64, len(old_ids))
            due_summary[old[next_check > now]] = False
            for i in np.flatnonzero(due_summary).tolist():
                if summarizer.locked(ids[i]):
                    due_summary[i] = False
        return due_expiry, due_summary

    def _index_candidates(self, agents: list[AgentMemory], stats: np.ndarray,
                          live: np.ndarray) -> list[AgentMemory]:
        """Agents that may have index work (from the survey).

        More live records than ``retrieval.indexing.index_threshold``, or a build in progress.
        """
        mask = (stats[:, STAT_BUILDING] != 0) | (live > index_threshold(self._state.config))
        return [agents[i] for i in np.flatnonzero(mask).tolist()]

    def _compact(self, agents: list[AgentMemory], stats: np.ndarray, now: int,
                 budget: WorkBudget, events: list[Any]) -> tuple[int, int]:
        """Compaction of the agents over a cap; returns ``(pruned, records still over)``."""
        codes, caps = self._caps
        if not codes.shape[0] or not agents:
            return 0, 0
        excess = np.maximum(stats[:, codes] - caps, 0)
        over = np.flatnonzero(excess.any(axis=1))
        if not over.shape[0]:
            return 0, 0
        pruned = 0
        state = self._state
        costs = self._costs
        smallest = costs.scan + costs.prune + int(stats[over, :_N_LAYERS].sum(axis=1).min())
        if budget.admits(smallest):
            # the tick's first item (minimum progress): 2 units are one agent check and
            # one removal, which a non-strict slice always makes
            left = budget.left
            room = left if budget.items or left is None else max(2, left)
            sweep = compact_store(state.store, now, room, state.compaction,
                                  self._compactor, agents=[agents[i].agent_id
                                                           for i in over.tolist()],
                                  strict=bool(budget.items))
            if sweep.used_units:
                budget.take(sweep.used_units)
            report_expired = self._writer.wants(RecordExpired.name)
            for agent_id, removed, remaining in sweep:
                pruned += len(removed)
                if report_expired:
                    events.extend(RecordExpired(id=r.id, layer=r.layer.value,
                                                reason="retention") for r in removed)
                events.append(MemoryCompaction(agent_id=agent_id, removed=len(removed),
                                               remaining=remaining))
        return pruned, int(excess.sum()) - pruned

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

