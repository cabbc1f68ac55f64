"""The two-phase summarization pipeline: tasks, validation, fallback (spec sections 6, 8, 16).

A game loop must never block on an LLM, so summarization is split in two phases:

1. ``schedule(am, now, mode=...)`` selects a batch (:func:`select_batch`), snapshots it as
   redacted source events and queues a :class:`SummarizationTask`. At most one
   queued/running task exists per agent, and an agent is checked at most once per
   ``summarization_min_interval_ms`` (a check that finds too little to summarize waits
   that long too; :meth:`Summarizer.next_check` says when).
2. The host takes queued tasks with ``poll(now)`` (they become ``running``, and their
   prompt is built then: grouped, every line redacted again), sends ``task.prompt`` (with
   :attr:`Summarizer.system_prompt`) to its LLM, and hands the text back with
   ``complete(task_id, text)`` (``complete_after_error`` when the LLM call raised), or
   gives up with ``fail(task_id, reason)``. A task has until ``summarization_timeout_ms``
   (logical time) after it was queued, or after it was polled: :meth:`Summarizer.time_out`
   then finishes it with the heuristic summary, and a late ``complete`` is ignored
   (:meth:`Summarizer.late`).
   The engine's ``summarization.service`` runs phase 2 synchronously for hosts that want
   that.

Quality gate: a completion that is garbage (:func:`garbage_reason`) or covers less than
``summarization_min_coverage`` of the sources' key terms is replaced by the local
:func:`heuristic_summary`; an LLM exception (``TimeoutError`` included) does the same
through ``complete_after_error``. The outcome records which path produced the text and why.

Pressure modes (``PressureProfile.summarization``): ``llm`` as above; ``heuristic``
finishes the task with the local summary; ``skip`` marks it ``skipped`` (sources kept).
Tasks finished without the LLM (those modes, and timed-out tasks) wait in a ready queue;
their outcome is computed when taken, one at a time with :meth:`Summarizer.take_ready`
(the tick does that within its budget) or all at once with ``collect()``. ``complete``,
``complete_after_error`` and ``fail`` return theirs directly.

The summarizer never touches the store and emits no events: the engine turns each
:class:`SummaryOutcome` into the semantic summary record (``metadata.source_ref_ids`` =
``task.source_ids``), retires the originals and emits ``memory:summarization:*``.

Errors: a second ``schedule(..., require=True)`` while the agent has a task raises
:class:`SummaryLockedError` (``MEMORY_SUMMARY_LOCKED``). ``complete``/``fail`` of a task id
that is not pending (unknown, already finished) raise :class:`SummaryFailedError`
(``MEMORY_SUMMARY_FAILED``: that summarization cannot be completed); a malformed argument
raises :class:`InputInvalidError`. A rejected call changes nothing.

Determinism: task ids are ``f"sum:{agent_id}:{n:08d}"`` with ``n`` a per-agent counter
owned by the summarizer (per agent, so ids do not depend on how agents interleave or are
sharded); no clock, no randomness; ``get_state``/``set_state`` round-trip everything.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from f09_memory._validate import check_now, is_text
from f09_memory.config.config import MemoryConfig
from f09_memory.errors import (
    InputInvalidError,
    SummaryFailedError,
    SummaryLockedError,
)
from f09_memory.schema.enums import MemoryLayer, TaskStatus
from f09_memory.schema.tasks import SummarizationTask
from f09_memory.store.agent import AgentMemory
from f09_memory.summarization.grouping import group_rows
from f09_memory.summarization.judging import Judge, PendingTask
from f09_memory.summarization.outcome import SummaryOutcome
from f09_memory.summarization.prompt import build_summary_prompt, load_summary_template
from f09_memory.summarization.scheduler import select_batch
from f09_memory.summarization.sources import SourceEvent
from f09_memory.summarization.state import PENDING_STATUSES, STATE_VERSION, parse_state

__all__ = ["MODES", "STATE_VERSION", "Summarizer"]

MODES: Final = ("llm", "heuristic", "skip")
"""The summarization modes a pressure profile can ask for."""


_M = TypeVar("_M", bound=Callable[..., Any])


def _mutating(fn: _M) -> _M:
    """Mark a method that may change the summarizer's state (bumps ``revision``)."""
    @functools.wraps(fn)
    def wrapper(self: Summarizer, *args: Any, **kwargs: Any) -> Any:
        self.revision += 1
        return fn(self, *args, **kwargs)
    return wrapper  # type: ignore[return-value]


_LATE_MAX: Final = 1024
"""Timed-out task ids remembered so that a late answer is recognised (oldest forgotten)."""
_SKIP: Final = "skip:"


def _check_task_id(task_id: object) -> str:
    if not isinstance(task_id, str) or not task_id:
        raise InputInvalidError("task_id must be the id string of a scheduled task",
                                details={"field": "task_id"})
    return task_id


class Summarizer:
    """Schedules summarization tasks and turns completions into outcomes.

    Args:
        config: The engine config (batch size, thresholds, coverage, LLM settings).
        redact: Applied to every prompt line, to every summary text (LLM or heuristic) and
            to failure reasons. Pass an *enabled* redactor's ``redact_text``
            (prompts are redacted even when storage redaction mode is OFF; spec QG5).
        redact_sources: Whether each source's content and tags are redacted when the task
            snapshots them, so key terms, coverage, suggested tags and the summarizer's
            state never hold what the redactor replaces. Default: only when
            ``config.redaction_mode`` is OFF (when it is ON the store already holds
            content redacted with the same patterns, and a second pass would change
            nothing).
        redact_lines: ``redact`` over all of a prompt's lines at once (e.g. the same
            redactor's ``redact_lines``: its patterns' gates are checked once per prompt).

    Runtime complexity: ``schedule`` O(n) numpy over the agent's slots plus O(b) Python
    work for a batch of b (a few hundred microseconds for b = 25); ``complete`` O(text +
    sources); the LLM call is the host's.

    Raises:
        InputInvalidError: ``config`` is not a MemoryConfig or ``redact`` not callable.
    """

    def __init__(
        self,
        config: MemoryConfig,
        *,
        redact: Callable[[str], str],
        redact_sources: bool | None = None,
        redact_lines: Callable[[list[str]], list[str]] | None = None,
    ) -> None:
        if not isinstance(config, MemoryConfig):
            raise InputInvalidError("config must be a MemoryConfig", details={"field": "config"})
        if not callable(redact):
            raise InputInvalidError("redact must be a callable str -> str (for example "
                                    "Redactor(patterns).redact_text)", details={"field": "redact"})
        self.config = config
        self._redact = redact
        self._judge = Judge(config, redact)
        self._redact_lines = redact_lines
        self._redact_sources = (not config.redaction_mode if redact_sources is None
                                else bool(redact_sources))
        self._system = load_summary_template()[0]
        self._pending: dict[str, PendingTask] = {}
        self._by_agent: dict[str, str] = {}
        self.revision = 0
        """Bumped by every method that may change the state (a cheap change check)."""
        self._counters: dict[str, int] = {}
        self._next: dict[str, int] = {}
        self._ready: list[PendingTask] = []
        self._held: list[SummaryOutcome] = []
        self._waiting: set[str] = set()
        """Agents with a task in the ready queue or held (not applied yet): not scheduled."""
        self._late: dict[str, SummarizationTask] = {}

    # ------------------------------------------------------------------ queries
    @property
    def system_prompt(self) -> str:
        """The system text to send with every ``task.prompt``."""
        return self._system

    def locked(self, agent_id: str) -> bool:
        """Whether ``agent_id`` has a task not applied yet (queued, running, ready or held)."""
        return agent_id in self._by_agent or agent_id in self._waiting

    def pending(self, agent_id: str | None = None) -> list[SummarizationTask]:
        """Queued and running tasks (of one agent, or all), by ``(created_at, id)``."""
        tasks = [p.task for p in self._pending.values()
                 if agent_id is None or p.task.agent_id == agent_id]
        return sorted(tasks, key=lambda t: (t.created_at, t.id))

    @property
    def pending_count(self) -> int:
        """Queued and running tasks. O(1)."""
        return len(self._pending)

    def next_check(self, agent_id: str) -> int:
        """The logical time from which ``schedule`` looks at ``agent_id`` again (0: now)."""
        return self._next.get(agent_id, 0)

    @property
    def next_checks(self) -> Mapping[str, int]:
        """:meth:`next_check` of every agent checked so far (read only)."""
        return self._next

    @property
    def ready_sources(self) -> int | None:
        """Sources of the oldest ready task (the next :meth:`take_ready`), ``None`` if none."""
        return len(self._ready[0].sources) if self._ready else None

    @property
    def ready_count(self) -> int:
        """Tasks finished without the LLM and not applied yet (held ones included)."""
        return len(self._ready) + len(self._held)

    @_mutating
    def hold(self, outcome: SummaryOutcome) -> None:
        """Keep a taken outcome until it is applied (a tick may apply it in a later step)."""
        self._held.append(outcome)
        self._waiting.add(outcome.task.agent_id)

    def next_held(self) -> SummaryOutcome | None:
        """The oldest held outcome, without taking it."""
        return self._held[0] if self._held else None

    @_mutating
    def take_held(self) -> SummaryOutcome:
        """Take the oldest held outcome (to apply it).

        Raises:
            SummaryFailedError: Nothing is held.
        """
        if not self._held:
            raise SummaryFailedError("no summary outcome is held")
        outcome = self._held.pop(0)
        self._waiting.discard(outcome.task.agent_id)
        return outcome

    def late(self, task_id: object) -> SummarizationTask | None:
        """The task ``task_id`` if it timed out (its answer now comes too late), else None."""
        return self._late.get(task_id) if isinstance(task_id, str) else None

    # ------------------------------------------------------------------ phase 1
    @_mutating
    def schedule(
        self,
        am: AgentMemory,
        now: int,
        *,
        mode: str = "llm",
        require: bool = False,
    ) -> SummarizationTask | None:
        """Queue a summarization task for ``am``'s agent if one is due.

        Nothing is scheduled (``None``) when the agent already has a task, when it was
        scheduled less than ``summarization_min_interval_ms`` ago, or when fewer than
        ``min(summarization_min_batch, summarization_batch_size)`` records are eligible.

        Args:
            am: The agent's columns (read only).
            now: Logical time.
            mode: ``llm`` (queue for the host's LLM), ``heuristic`` (complete now with the
                local summary) or ``skip`` (mark skipped). Use the pressure profile's
                ``summarization`` value.
            require: An explicit request: an agent with a pending task raises instead of
                returning ``None``, and the minimum interval does not apply.

        Returns:
            The new task (``queued``; ``completed``/``skipped`` in the other modes, whose
            outcomes :meth:`collect` hands over), or ``None``.

        Raises:
            SummaryLockedError: ``require`` and the agent already has a pending task.
            InputInvalidError: Bad ``am``, ``now`` or ``mode`` (state unchanged).
        """
        if not isinstance(am, AgentMemory):
            raise InputInvalidError("am must be an AgentMemory", details={"field": "am"})
        now = check_now(now)
        if mode not in MODES:
            raise InputInvalidError(f"unknown summarization mode; use one of {list(MODES)}",
                                    details={"field": "mode"})
        agent_id = am.agent_id
        busy = self._by_agent.get(agent_id)
        if busy is None and agent_id in self._waiting:
            if require:
                raise SummaryLockedError(
                    "the agent has a finished summarization task waiting to be applied by the "
                    "next ticks; tick before scheduling another",
                    details={"status": "ready"})
            return None
        if busy is not None:
            if require:
                status = self._pending[busy].task.status.value
                raise SummaryLockedError(
                    f"the agent already has a summarization task ({status}, its id in "
                    "details['taskId']); complete or fail it before scheduling another",
                    details={"taskId": busy, "status": status},
                )
            return None
        cfg = self.config
        if not require and now < self._next.get(agent_id, 0):
            return None
        keys = select_batch(am, now, cfg)
        if not keys or len(keys) < min(cfg.summarization_min_batch, cfg.summarization_batch_size):
            if not require:
                self._next[agent_id] = now + max(1, cfg.summarization_min_interval_ms)
            return None
        keys.sort()
        slots = list(map(am.slot_of.__getitem__, keys))
        scrub = self._redact if self._redact_sources else None
        sources = []
        tag_table, contents = am.tags, am.content
        for k, slot, anchor, importance, tagset in zip(
                keys, slots, am.anchor[slots].tolist(), am.importance[slots].tolist(),
                am.tagset[slots].tolist(), strict=True):
            content = contents[slot]
            assert content is not None
            tags = tag_table.get(tagset)
            if scrub is not None:
                content, tags = scrub(content), tuple(scrub(t) for t in tags)
            sources.append(SourceEvent(k, am.id_of(k), anchor, importance, content, tags))
        n = self._counters.get(agent_id, 0)
        task = SummarizationTask(
            id=f"sum:{agent_id}:{n:08d}",
            agent_id=agent_id,
            target_layer=MemoryLayer.SEMANTIC,
            source_ids=[s.id for s in sources],
            created_at=now,
        )
        self._counters[agent_id] = n + 1
        self._next[agent_id] = now + cfg.summarization_min_interval_ms
        frozen = tuple(sources)
        if mode == "llm":
            timeout = cfg.summarization_timeout_ms
            self._pending[task.id] = PendingTask(task, frozen,
                                              None if timeout is None else now + timeout)
            self._by_agent[agent_id] = task.id
        else:
            self._ready.append(PendingTask(task, frozen, reason="pressure: heuristic mode"
                                        if mode == "heuristic"
                                        else _SKIP + "pressure: summarization skipped"))
            self._waiting.add(agent_id)
        return task

    @_mutating
    def take_ready(self, task_id: str | None = None) -> SummaryOutcome | None:
        """Finish the oldest task that waits without the LLM (heuristic, skip or timed out).

        Args:
            task_id: Finish this waiting task instead of the oldest.

        Returns:
            Its outcome (the heuristic summary, or sources kept for a skipped task), or
            ``None`` when none (or not ``task_id``) waits. O(sources) for the heuristic
            summary.
        """
        at = next((i for i, r in enumerate(self._ready)
                   if task_id is None or r.task.id == task_id), None)
        if at is None:
            return None
        ready = self._ready.pop(at)
        self._waiting.discard(ready.task.agent_id)
        if ready.reason.startswith(_SKIP):
            return self._judge.kept(ready, TaskStatus.SKIPPED,
                              ready.reason[len(_SKIP):])
        return self._judge.heuristic(ready, ready.reason)

    @_mutating
    def collect(self) -> list[SummaryOutcome]:
        """Finish every waiting task (:meth:`take_ready` until none is left), oldest first."""
        out: list[SummaryOutcome] = []
        while (outcome := self.take_ready()) is not None:
            out.append(outcome)
        return out

    @_mutating
    def time_out(self, now: int) -> list[SummarizationTask]:
        """Give up waiting for the LLM on tasks whose deadline is at or before ``now``.

        A queued task's deadline is ``created_at + summarization_timeout_ms`` (a host that
        never polls does not stall summarization); ``poll`` moves it to ``poll time +
        timeout``.

        Each such task joins the ready queue (its outcome will be the heuristic summary,
        reason ``llm timeout``) and is remembered as late: a ``complete`` for it is then
        ignored (see :meth:`late`). Returns the timed-out tasks, by ``(created_at, id)``.
        O(pending tasks).
        """
        due = sorted((p for p in self._pending.values()
                      if p.deadline is not None and p.deadline <= now),
                     key=lambda p: (p.task.created_at, p.task.id))
        for p in due:
            self._release(p)
            limit = self.config.summarization_timeout_ms
            p.reason = f"llm timeout: no answer within {limit} ms"
            self._ready.append(p)
            self._waiting.add(p.task.agent_id)
            self._late[p.task.id] = p.task
            while len(self._late) > _LATE_MAX:
                del self._late[next(iter(self._late))]
        return [p.task for p in due]

    @_mutating
    def ignore_late(self, task_id: str) -> SummaryOutcome:
        """The outcome of an answer to a timed-out task: nothing changes (``path="none"``).

        Raises:
            SummaryFailedError: ``task_id`` did not time out (see :meth:`late`).
        """
        task = self._late.get(task_id)
        if task is None:
            raise SummaryFailedError("the task did not time out", details={"field": "task_id"})
        return SummaryOutcome(task=task, summary_text=None, source_keys=(),
                              used_fallback=False, reduction_ratio=0.0, path="none",
                              reason="late: the answer came after the timeout and was ignored",
                              coverage=0.0, importance=0.0, tags=(), recency_anchor=0)

    def _prompt(self, pending: PendingTask) -> str:
        cfg = self.config
        sources, ents = pending.sources, pending.source_entities()
        rows = group_rows(sources, batch_size=len(sources),
                          gap_ms=cfg.summarization_grouping_gap_ms, entities=ents)
        # One group holds every source: its entities are the sources' (entities_of reads
        # the whole batch it is given); several groups get their own, each its batch.
        return build_summary_prompt(
            [[sources[i] for i in group] for group in rows],
            redact=self._redact,
            redact_lines=self._redact_lines,
            event_max_chars=cfg.summarization_event_max_chars,
            max_facts=cfg.summarization_coverage_terms,
            max_words=max(16, cfg.summarization_max_tokens * 3 // 4),
            entities=[[ents[i] for i in rows[0]]] if len(rows) == 1 else None,
        ).user

    # ------------------------------------------------------------------ phase 2
    @_mutating
    def poll(self, now: int | None = None) -> list[SummarizationTask]:
        """Start the queued tasks created at or before ``now`` (all if ``None``).

        Returns:
            The started tasks, now ``running``, by ``(created_at, id)``; each carries its
            ``prompt``. Tasks already running are not returned again.

        Raises:
            InputInvalidError: Bad ``now``.
        """
        limit = None if now is None else check_now(now)
        started = [p for p in self._pending.values()
                   if p.task.status is TaskStatus.QUEUED
                   and (limit is None or p.task.created_at <= limit)]
        started.sort(key=lambda p: (p.task.created_at, p.task.id))
        timeout = self.config.summarization_timeout_ms
        for p in started:
            p.task.status = TaskStatus.RUNNING
            if p.task.prompt is None:
                p.task.prompt = self._prompt(p)
            if timeout is not None:
                p.deadline = max(p.task.created_at if limit is None else limit,
                                 p.task.created_at) + timeout
        return [p.task for p in started]

    @_mutating
    def complete(self, task_id: str, text: str | None) -> SummaryOutcome:
        """Finish a queued or running task with the LLM's ``text``.

        The text is validated: garbage (``None`` included) or coverage below
        ``summarization_min_coverage`` switches to the heuristic summary (``used_fallback``,
        with the reason). An accepted text is stripped and passed through ``redact``.

        Returns:
            The outcome; the task is ``completed`` either way.

        Raises:
            SummaryFailedError: ``task_id`` is not a pending task (unknown or finished).
            InputInvalidError: ``text`` is neither a str nor ``None`` (state unchanged).
        """
        pending = self._take_check(task_id)
        if text is not None and not isinstance(text, str):
            raise InputInvalidError("text must be the LLM's completion (a str) or None",
                                    details={"field": "text"})
        self._release(pending)
        return self._judge.judge(pending, text)

    @_mutating
    def fail(self, task_id: str, reason: str) -> SummaryOutcome:
        """Give up a queued or running task: it becomes ``failed`` and the sources are kept.

        Returns:
            The outcome (``path="none"``, ``summary_text=None``); ``reason`` is redacted
            and clipped to 200 characters.

        Raises:
            SummaryFailedError: ``task_id`` is not a pending task (unknown or finished).
            InputInvalidError: ``reason`` is not a str (state unchanged).
        """
        pending = self._take_check(task_id)
        if not isinstance(reason, str) or not is_text(reason):
            raise InputInvalidError("reason must be a str of valid Unicode text",
                                    details={"field": "reason"})
        self._release(pending)
        return self._judge.kept(pending, TaskStatus.FAILED,
                          reason.strip() or "failed")

    @_mutating
    def complete_after_error(self, task_id: str, error: str) -> SummaryOutcome:
        """Finish a running task whose LLM call failed: the heuristic summary replaces it.

        ``error`` (the exception's text) becomes the reason.

        Raises:
            SummaryFailedError: ``task_id`` is not a running task.
        """
        pending = self._take_check(task_id)
        if not isinstance(error, str):
            raise InputInvalidError("error must be a str (the LLM call's error text)",
                                    details={"field": "error"})
        self._release(pending)
        text = error.encode("utf-8", "replace").decode("utf-8")  # an adapter's text: made valid
        return self._judge.heuristic(pending, f"llm error: {text}")

    # ------------------------------------------------------------------ internals
    def _take_check(self, task_id: object) -> PendingTask:
        tid = _check_task_id(task_id)
        pending = self._pending.get(tid)
        if pending is None:
            raise SummaryFailedError(
                "no pending summarization task has that id: it was never scheduled or has "
                "already completed, failed or been skipped; schedule a new one",
                details={"field": "task_id"},
            )
        return pending

    def _release(self, pending: PendingTask) -> None:
        task = pending.task
        del self._pending[task.id]
        del self._by_agent[task.agent_id]

    # ------------------------------------------------------------------ state
    def get_state(self) -> dict[str, Any]:
        """Everything the summarizer holds, JSON-safe (camelCase keys, sorted agents).

        Round trip: ``s2.set_state(s1.get_state())`` makes ``s2`` behave exactly like ``s1``.
        """
        return {
            "version": STATE_VERSION,
            "counters": dict(sorted(self._counters.items())),
            "nextCheck": dict(sorted(self._next.items())),
            "pending": [self._pending[t.id].to_state() for t in self.pending()],
            "ready": [r.to_state() for r in self._ready],
            "held": [o.to_state() for o in self._held],
            "late": [t.to_json_dict() for t in self._late.values()],
        }

    @_mutating
    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore from :meth:`get_state` (the config and ``redact`` stay this instance's).

        Raises:
            InputInvalidError: ``state`` is malformed (state unchanged).
        """
        saved = parse_state(state)
        self._counters, self._next, self._late, self._held = (
            saved.counters, saved.next_check, saved.late, saved.held)
        self._waiting = saved.waiting
        self._pending, self._by_agent, self._ready = saved.pending, saved.by_agent, saved.ready

    def _check(self) -> None:
        """Assert the invariants (tests call this after each operation)."""
        assert len(self._pending) == len(self._by_agent), "lock map out of step"
        for agent_id, tid in self._by_agent.items():
            p = self._pending[tid]
            assert p.task.agent_id == agent_id and p.task.status in PENDING_STATUSES
            assert [s.id for s in p.sources] == p.task.source_ids and p.sources
            assert int(tid.rsplit(":", 1)[1]) < self._counters[agent_id]
        for ready in self._ready:
            assert ready.reason and ready.sources and ready.task.id not in self._pending
        waiting = [r.task.agent_id for r in self._ready] + [o.task.agent_id for o in self._held]
        assert sorted(waiting) == sorted(self._waiting) and not self._waiting & set(self._by_agent)
        assert len(self._late) <= _LATE_MAX
