"""ProceduralMiner: frequent action n-grams per agent, mined in budgeted tick slices.

Each agent's action records (``procedural.actions``) are read in record-key order from the
agent's cursor (``procedural.tables.CursorTable``). Consecutive actions of one context no
more than ``window_ms`` apart chain; each new action closes the n-grams of 2..``max_n``
actions that end with it, and each closed n-gram adds 1 to its pattern's ``support`` and
the new action's success score to its ``successes`` (``PatternTable``): the outcome of a
pattern is the outcome of its last action.

A pattern at ``min_support`` or more has one procedural record, created through the writer
(so redaction, ``memory:record:created``, the procedural cap at ingest, journaling and
hashing apply): content ``Procedure: a -> b (when ctx)`` built from the stored, already
redacted action names, ``metadata.procedural`` ``{patternId, successRate}`` and the
importance of ``ProceduralSettings`` (support weight x success factor). Later occurrences
reinforce that record in place (``Writer.set_procedural``) when its importance or success
rate moved by ``update_step`` or more, never adding a copy; a record removed since
(compaction under the cap, ``forget``, TTL) is made again at the next occurrence.

Budget: a slice charges ``tick_costs.mine_slice`` once, ``mine_agent`` per agent with
records past its cursor, then per record read ``mine_record``, per n-gram counted
``mine_pattern`` and per procedural record created or reinforced ``mine_store``. A record
is one item: it is taken whole when its cost fits, or as the tick's first item
(``WorkBudget.admits``), so a slice never overshoots but by that one item. Agents are
visited in id order from where the last slice stopped (a state-table row), so none starves.
The records not read yet are kept in a :class:`~f09_memory.procedural.pending.PendingQueue`
with their exact count (the tick's ``actions_unmined``).

Runtime complexity: ``slice`` O(agents) plus O(records read + n-grams); ``procedures``
O(p log p) for the agent's p patterns.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

from f09_memory.config.procedural import ProceduralSettings
from f09_memory.core.state import EngineState
from f09_memory.core.writer import Writer
from f09_memory.errors import CapacityExceededError, InputInvalidError, MemoryEngineError
from f09_memory.ingestion.validation import validate_item
from f09_memory.maintenance.budget import WorkBudget
from f09_memory.procedural.actions import (
    action_at,
    canonical_pattern,
    may_be_action,
    parse_pattern,
    pattern_id,
)
from f09_memory.procedural.pending import PendingQueue
from f09_memory.procedural.tables import CursorTable, PatternTable, parse_tail, tail_text
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.records import ProceduralMeta
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import NewRecords

__all__ = ["MineReport", "ProceduralMiner", "Procedure", "check_procedures_args",
           "procedural_importance"]

_PROCEDURAL = MemoryLayer.PROCEDURAL
_SCORE_QUANTUM = 1_000_000_000
_TEXT_CACHE = 65_536


@dataclass(frozen=True, slots=True)
class Procedure:
    """A learned action pattern of one agent: "what usually works when ``context``".

    Attributes:
        pattern_id: Stable id: sha256 of the canonical ``[[actions...], context]``, 16 hex.
        actions: The action names, in order (as stored: redacted).
        context: The context the actions happened in (``None``: none given).
        support: How many times the sequence was seen.
        success_rate: Mean success score of its occurrences (0..1; unknown outcomes count 0).
        record_id: Its procedural record, or ``None`` (below ``min_support``, or removed
            and not yet made again).
    """

    pattern_id: str
    actions: tuple[str, ...]
    context: str | None
    support: int
    success_rate: float
    record_id: str | None


@dataclass(slots=True)
class _Batch:
    """A slice's writes, made to the tables once at its end.

    ``rows``: pattern key -> ``[support, successes, first_seen, last_seen, record]`` (read
    from the table on first use); ``changed``: the keys to write, in first-change order;
    ``moves``: cursor moves ``(agent_id, old row, tail, next_key)``.
    """

    rows: dict[tuple[str, str, str], list[Any]] = field(default_factory=dict)
    changed: dict[tuple[str, str, str], None] = field(default_factory=dict)
    moves: list[tuple[str, tuple[str, ...] | None, str, int]] = field(default_factory=list)


@dataclass(slots=True)
class MineReport:
    """What one mining slice did: action records read, pattern counts, records written."""

    mined: int = 0
    patterns: int = 0
    stored: int = 0
    complete: bool = True
    """Whether every agent's pending records were read (then nothing is left to mine)."""


def procedural_importance(support: int, success_rate: float,
                          settings: ProceduralSettings) -> float:
    """The importance of a procedural record (see ``ProceduralSettings``), 6 decimals."""
    grown = max(0, support - settings.min_support) / settings.support_half
    weight = settings.importance_base + (1.0 - settings.importance_base) * (
        1.0 - math.pow(2.0, -grown))
    factor = settings.success_floor + (1.0 - settings.success_floor) * success_rate
    return min(1.0, max(0.0, round(weight * factor, 6)))


def _added(successes: float, success: float, support: int) -> float:
    """Successes after one more occurrence scoring ``success`` (``support`` counts it)."""
    return min(float(support), round(successes + success, 6))


def _rate(successes: float, support: int) -> float:
    return round(min(1.0, successes / support), 6) if support else 0.0


class ProceduralMiner:
    """The procedural layer's service: its tables, the tick slice and the queries.

    Args:
        state: The engine state (the tables are registered in it).
        writer: Creates and reinforces procedural records.
    """

    def __init__(self, state: EngineState, writer: Writer) -> None:
        self._state = state
        self._writer = writer
        self.settings = state.config.procedural
        self.patterns = PatternTable()
        self.cursors = CursorTable()
        state.register(self.patterns)
        state.register(self.cursors)
        costs = state.config.tick_costs
        self._queue = PendingQueue()
        self._index_gen = (-1, -1)
        writer.on_stored = self._note
        writer.forget_hooks.append(self.forget_agent)
        self._texts: dict[tuple[tuple[str, ...], str], tuple[str, str]] = {}
        """Canonical text and id by pattern (a pure function's cache, never state)."""
        self._costs = (costs.mine_record, costs.mine_pattern, costs.mine_store,
                       costs.mine_agent, costs.mine_slice)

    def forget_agent(self, agent_id: str) -> None:
        """Drop the agent's patterns and cursor (``forget(agent_id=...)``). O(its patterns)."""
        self.patterns.delete(sorted(self.patterns.by_agent.get(agent_id, ())))
        self.cursors.delete(sorted(self.cursors.by_agent.get(agent_id, ())))
        self._queue.drop(agent_id)

    # ------------------------------------------------------------------ the action index
    def _note(self, am: AgentMemory, new: NewRecords) -> None:
        """The writer stored ``new`` for ``am``: queue the keys that may be actions."""
        if self._index_gen != self._generation():
            return  # the queue is rebuilt from the store before its next use
        keys = new.keys
        found = [keys[i] for i in sorted(set(new.extras) | set(new.source_event))
                 if may_be_action(new.extras.get(i), new.source_event.get(i))]
        if found:
            self._queue.add(am, found)

    def _generation(self) -> tuple[int, int]:
        return self.cursors.generation, self.patterns.generation

    def _pending_queue(self) -> PendingQueue:
        """Per agent, the keys past its cursor that may be actions, ascending.

        Derived from the store and the cursors, never saved: rebuilt after a restore or a
        replay (the tables' ``generation``), kept up to date by the writer's ``on_stored``
        and the slices otherwise.
        """
        generation = self._generation()
        if self._index_gen != generation:
            entries: list[tuple[AgentMemory, list[int]]] = []
            for am in self._state.store.agents():
                if not (am.extras or am.source_event):
                    continue
                _, next_key = self.cursors.cursor(am.agent_id)
                extras, sources = am.extras, am.source_event
                keys = sorted(k for k in set(extras) | set(sources) if k >= next_key
                              and may_be_action(extras.get(k), sources.get(k)))
                entries.append((am, keys))
            self._queue.rebuild(entries)
            self._index_gen = generation
        return self._queue

    # ------------------------------------------------------------------ the tick slice
    def slice(self, now: int, budget: WorkBudget, events: list[Any]) -> MineReport:
        """Mine under ``budget`` from where the last slice stopped; queue record events.

        Charges ``mine_slice`` once (the caller checked that the slice's smallest form,
        ``mine_slice + mine_agent + mine_record``, is admitted), then each agent and
        record as it is taken; an agent is started only when it and its first record fit.
        """
        report = MineReport()
        queue = self._pending_queue()
        if not self.settings.enabled or not len(queue):
            return report
        store = self._state.store
        c_record, _, _, c_agent, c_slice = self._costs
        budget.spend(c_slice)
        agents = queue.agents()
        start = bisect_left(agents, self.cursors.resume_agent())
        start = start if start < len(agents) else 0
        stopped_at = ""
        batch = _Batch()
        for agent_id in agents[start:] + agents[:start]:
            am = store.get(agent_id)
            entry = None if am is None else queue.refresh_agent(am)
            if am is None or entry is None:
                queue.drop(agent_id)
                continue
            if not budget.admits(c_agent + c_record):
                stopped_at = agent_id
                break
            row, next_key = self.cursors.cursor(agent_id)
            keys = entry.unread()
            budget.spend(c_agent)  # one item with the agent's first record
            read = self._mine_agent(am, row, next_key, keys, now, budget, events, report,
                                    batch)
            queue.consume(agent_id, read)
            if read < len(keys):
                stopped_at = agent_id
                break
        if batch.changed:
            self._write(batch.rows, list(batch.changed))
        if batch.moves:
            self.cursors.move_many(batch.moves)
        if stopped_at or self.cursors.by_agent.get(""):
            self.cursors.set_resume(stopped_at)
        report.complete = not stopped_at
        return report

    def _mine_agent(self, am: AgentMemory, row: tuple[str, ...] | None, next_key: int,
                    keys: list[int], now: int, budget: WorkBudget, events: list[Any],
                    report: MineReport, batch: _Batch) -> int:
        """Mine the agent's records ``keys``; return how many were read (all: done).

        Counts accumulate in ``batch.rows`` and the cursor move in ``batch.moves``; the
        slice writes both to the tables once at its end.
        """
        settings = self.settings
        c_record, c_pattern, c_store, _, _ = self._costs
        max_n, window = settings.max_n, settings.window_ms
        tail: list[tuple[str, str, int]] = parse_tail(row[1]) if row is not None else []
        start_key = next_key
        slot_of = am.slot_of
        rows, changed = batch.rows, batch.changed
        read = 0
        for key in keys:
            step = action_at(am, key, slot_of[key])
            chain = tail
            grams: list[tuple[str, str, str]] = []
            if step is not None:
                last = tail[-1] if tail else None
                fresh = last is None or last[1] != step.context or not (
                    0 <= step.time - last[2] <= window)
                chain = ([] if fresh else tail[-(max_n - 1):]) + [
                    (step.action, step.context, step.time)]
                for n in range(2, len(chain) + 1):
                    grams.append(self._gram(am.agent_id, tuple(t[0] for t in chain[-n:]),
                                            step.context))
            syncs = 0
            if step is not None:
                for gram in grams:
                    v = rows.get(gram) or self._read(gram, rows)
                    support = v[0] + 1
                    syncs += self._needs_sync(am, support, _added(v[1], step.success, support),
                                              v[4])
            cost = c_record + len(grams) * c_pattern + syncs * c_store
            if not budget.admits(cost):
                break
            budget.take(cost)
            read += 1
            tail = chain
            next_key = key + 1
            if step is None:
                continue
            report.mined += 1
            report.patterns += len(grams)
            for gram in grams:
                v = rows[gram]
                v[0] += 1
                v[1] = _added(v[1], step.success, v[0])
                if v[0] == 1:
                    v[2] = step.time
                v[3] = max(v[3], step.time)
                changed[gram] = None
                if self._needs_sync(am, v[0], v[1], v[4]):
                    v[4] = self._sync(am, gram, v[0], v[1], v[4], now, events)
                    report.stored += 1
        if read == len(keys):  # the records the miner itself just stored are no actions
            next_key = max(next_key, am.next_key)
        text = tail_text(tail[-(max_n - 1):])
        if row is None or row[1] != text or next_key != start_key:
            batch.moves.append((am.agent_id, row, text, next_key))
        return read

    def _gram(self, agent_id: str, actions: tuple[str, ...],
              context: str) -> tuple[str, str, str]:
        """The pattern key of ``actions`` in ``context`` (canonical texts are cached)."""
        found = self._texts.get((actions, context))
        if found is None:
            if len(self._texts) >= _TEXT_CACHE:
                self._texts.clear()
            text = canonical_pattern(actions, context)
            found = self._texts[(actions, context)] = (pattern_id(text), text)
        return agent_id, found[0], found[1]

    def _read(self, gram: tuple[str, str, str],
              rows: dict[tuple[str, str, str], list[Any]]) -> list[Any]:
        """The pattern's current values from the table (zeros and no record when new)."""
        table = self.patterns
        slot = table.slot(gram)
        if slot is None:
            v: list[Any] = [0, 0.0, 0, 0, -1]
        else:
            v = [int(table.column("support")[slot]), float(table.column("successes")[slot]),
                 int(table.column("first_seen")[slot]), int(table.column("last_seen")[slot]),
                 int(table.column("record")[slot])]
        rows[gram] = v
        return v

    def _write(self, rows: dict[tuple[str, str, str], list[Any]],
               changed: list[tuple[str, str, str]]) -> None:
        """Write the changed patterns' values to the table (one ``rows`` call)."""
        table = self.patterns
        slots = table.rows(changed)
        values = [rows[g] for g in changed]
        for i, name in enumerate(("support", "successes", "first_seen", "last_seen", "record")):
            table.column(name)[slots] = [v[i] for v in values]

    def _needs_sync(self, am: AgentMemory, support: int, successes: float, record: int) -> bool:
        settings = self.settings
        if support < settings.min_support:
            return False
        slot = am.slot_of.get(record) if record >= 0 else None
        if slot is None or int(am.layer[slot]) != _PROCEDURAL.code:
            return True
        rate = _rate(successes, support)
        meta = am.extra_of(record).procedural
        old_rate = meta.success_rate if meta is not None and meta.success_rate is not None \
            else -1.0
        step = settings.update_step
        return (abs(procedural_importance(support, rate, settings)
                    - float(am.importance[slot])) >= step or abs(rate - old_rate) >= step)

    def _sync(self, am: AgentMemory, key: tuple[str, str, str], support: int,
              successes: float, record: int, now: int, events: list[Any]) -> int:
        """Create or reinforce the pattern's record; return its key (-1: none could be)."""
        settings = self.settings
        rate = _rate(successes, support)
        importance = procedural_importance(support, rate, settings)
        slot = am.slot_of.get(record) if record >= 0 else None
        if slot is not None and int(am.layer[slot]) == _PROCEDURAL.code:
            old = am.extra_of(record).procedural
            meta = ProceduralMeta(pattern_id=old.pattern_id if old is not None else key[1],
                                  success_rate=rate)
            self._writer.set_procedural(am, record, importance, meta, now, events)
            return record
        actions, context = parse_pattern(key[2])
        content = "Procedure: " + " -> ".join(actions) + (f" (when {context})" if context
                                                          else "")
        try:
            item = validate_item(content, _PROCEDURAL, importance, ("procedure",),
                                 {"procedural": {"patternId": key[1], "successRate": rate}},
                                 None, False, None, self._writer.ingestor.limits)
            self._writer.check_capacity(am, am.agent_id, (item,))
        except (CapacityExceededError, MemoryEngineError):
            return -1  # too long for the limits, or the agent is full: no record this time
        (new_key,) = self._writer.store(am, (item,), now, events)
        return new_key

    # ------------------------------------------------------------------ backlog
    def backlog(self) -> int:
        """Live records that may be actions past their agent's cursor (not yet mined).

        Exact, from the pending queue's incremental count; only agents whose removal
        counter moved since they were last counted are re-checked.
        Runtime complexity: O(agents) numpy plus O(the pending keys of the pending agents
        that lost records).
        """
        if not self.settings.enabled:
            return 0
        return self._pending_queue().refresh(self._state.store)

    # ------------------------------------------------------------------ queries
    def procedures(self, agent_id: str, context: str | None, k: int,
                   min_support: int | None) -> list[Procedure]:
        """The agent's best patterns; see ``MemoryEngine.procedures``."""
        floor = self.settings.min_support if min_support is None else min_support
        keys = self.patterns.by_agent.get(agent_id)
        if not keys or k == 0:
            return []
        am = self._state.store.get(agent_id)
        table = self.patterns
        support_col = table.column("support")
        successes_col = table.column("successes")
        record_col = table.column("record")
        half = self.settings.support_half
        ranked: list[tuple[int, str, Procedure]] = []
        for key in keys:
            slot = table.slot(key)
            assert slot is not None
            support = int(support_col[slot])
            if support < floor:
                continue
            actions, ctx = parse_pattern(key[2])
            if context is not None and ctx != context:
                continue
            rate = _rate(float(successes_col[slot]), support)
            score = rate * (1.0 - math.pow(2.0, -support / half))
            rec = int(record_col[slot])
            live = am is not None and rec >= 0 and rec in am.slot_of and int(
                am.layer[am.slot_of[rec]]) == _PROCEDURAL.code
            ranked.append((-round(score * _SCORE_QUANTUM), key[1], Procedure(
                pattern_id=key[1], actions=actions, context=ctx or None, support=support,
                success_rate=rate, record_id=am.id_of(rec) if live and am is not None
                else None)))
        ranked.sort(key=lambda item: (item[0], item[1]))
        return [p for _, _, p in ranked[:k]]


def check_procedures_args(k: object, min_support: object, context: object) -> None:
    """Validate ``engine.procedures``' options.

    Raises:
        InputInvalidError: ``k`` not a non-negative int, ``min_support`` not a positive int,
            or ``context`` not a string.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InputInvalidError("k must be a non-negative integer", details={"field": "k"})
    if min_support is not None and (isinstance(min_support, bool)
                                    or not isinstance(min_support, int) or min_support < 1):
        raise InputInvalidError("min_support must be a positive integer or None",
                                details={"field": "min_support"})
    if context is not None and not isinstance(context, str):
        raise InputInvalidError("context must be a string or None",
                                details={"field": "context"})
