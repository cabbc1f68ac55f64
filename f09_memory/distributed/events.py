"""Forwarding the shards' bus events to the driver's bus in one deterministic order.

Each shard collects the events its engine emits during a call (only the names someone
subscribed to on the driver) and returns them with the call's reply. The driver merges one
operation's events from every shard, independently of how many shards there are:

1. ``memory:pressure:changed`` once (every shard emits the same change);
2. then every event about an agent (it names an ``agent_id``, a record id or a task id),
   grouped by agent in agent-id order, each agent's events in the order its shard emitted
   them (the order one engine gives that agent's events);
3. then the engine-wide tick events, each merged into one: ``memory:tick:behind`` adds up the
   shards' backlog figures (``ticks``: the largest), ``memory:tick`` adds up ``usedUnits``
   and ``records`` (``tickMs``: the slowest shard's).

So the events an agent sees, and their order, are those of the single-process engine; only
the interleaving of different agents' events can differ from it (one engine interleaves
them in its own processing order).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from f09_memory.bus import Event, PressureChanged, TickBehind, TickCompleted
from f09_memory.distributed.routing import record_agent, task_agent
from f09_memory.maintenance.tick import TickBacklog, TickReport

__all__ = ["event_agent", "merge_events", "merge_tick_reports"]


def event_agent(event: Event) -> str | None:
    """The agent an event is about (``None``: an engine-wide event)."""
    agent = getattr(event, "agent_id", None)
    if isinstance(agent, str):
        return agent
    task = getattr(event, "task_id", None)
    if isinstance(task, str):
        return task_agent(task)
    rid = getattr(event, "id", None)
    return record_agent(rid) if isinstance(rid, str) else None


def _merged_tick(events: Sequence[TickCompleted]) -> TickCompleted:
    return TickCompleted(now=events[0].now, tick_ms=max(e.tick_ms for e in events),
                         used_units=sum(e.used_units for e in events),
                         records=sum(e.records for e in events))


def _merged_behind(events: Sequence[TickBehind]) -> TickBehind:
    return TickBehind(ticks=max(e.ticks for e in events),
                      agents_due=sum(e.agents_due for e in events),
                      over_soft_caps=sum(e.over_soft_caps for e in events),
                      pending_summaries=sum(e.pending_summaries for e in events),
                      embedding_retries=sum(e.embedding_retries for e in events),
                      index_work=sum(e.index_work for e in events))


def merge_events(per_shard: Iterable[Sequence[Event]]) -> list[Event]:
    """One operation's events from every shard (in shard order), in the order above.

    Runtime complexity: O(e log a) for e events of a agents.
    """
    pressure: PressureChanged | None = None
    ticks: list[TickCompleted] = []
    behind: list[TickBehind] = []
    other: list[Event] = []
    by_agent: dict[str, list[Event]] = {}
    for events in per_shard:
        for event in events:
            agent = event_agent(event)
            if agent is not None:
                by_agent.setdefault(agent, []).append(event)
            elif isinstance(event, PressureChanged):
                pressure = event
            elif isinstance(event, TickCompleted):
                ticks.append(event)
            elif isinstance(event, TickBehind):
                behind.append(event)
            else:  # pragma: no cover - every other event names its agent
                other.append(event)
    out: list[Event] = [] if pressure is None else [pressure]
    for agent in sorted(by_agent):
        out.extend(by_agent[agent])
    out.extend(other)
    if behind:
        out.append(_merged_behind(behind))
    if ticks:
        out.append(_merged_tick(ticks))
    return out


def merge_tick_reports(reports: Sequence[TickReport]) -> TickReport:
    """One report for a tick of every shard: counts added, ``cycle_complete`` if all.

    ``budget_units`` is the sum of the shards' budgets (each shard had its own) and
    ``behind`` whether any shard is behind.
    """
    first = reports[0]
    budgets = [r.budget_units for r in reports]
    return TickReport(
        now=first.now,
        budget_units=None if any(b is None for b in budgets) else sum(
            b for b in budgets if b is not None),
        used_units=sum(r.used_units for r in reports),
        agents_processed=sum(r.agents_processed for r in reports),
        decayed=sum(r.decayed for r in reports),
        expired=sum(r.expired for r in reports),
        deferred_agents=sum(r.deferred_agents for r in reports),
        cycle_complete=all(r.cycle_complete for r in reports),
        pruned=sum(r.pruned for r in reports),
        summaries_queued=sum(r.summaries_queued for r in reports),
        embedded=sum(r.embedded for r in reports),
        pressure=first.pressure,
        summaries_applied=sum(r.summaries_applied for r in reports),
        timed_out=sum(r.timed_out for r in reports),
        mined=sum(r.mined for r in reports),
        backlog=TickBacklog(*(sum(getattr(r.backlog, f) for r in reports) for f in (
            "agents_due", "over_soft_caps", "pending_summaries", "embedding_retries",
            "index_work", "actions_unmined"))),
        behind=any(r.behind for r in reports),
    )
