"""SummarizationService: the engine's two-phase summarization (``engine.summarization``).

It owns the :class:`~f09_memory.summarization.pipeline.Summarizer` (task lifecycle and
quality gate) and applies each finished task to the store: the summary is stored as one
``semantic`` record tagged ``summary`` with ``sourceRefIds`` = the sources, the sources are
retired (``memory:record:expired`` reason ``summarized``), and ``memory:summarization:*``
is emitted.

The host loop calls ``poll(now)`` to take queued tasks (each with its redacted ``prompt``),
sends them to its LLM outside the frame, and hands the text back with ``complete`` or gives
up with ``fail``. ``run(llm, timeout_ms=)`` is the synchronous convenience over the same two
phases (each step journaled in durable mode, so a replay needs no LLM); each LLM call runs
on a worker thread and is abandoned after ``timeout_ms`` of wall time (the heuristic summary
replaces it, ``memory:summarization:timeout``). In logical time, a polled task not finished
by ``poll time + summarization_timeout_ms`` is timed out by the next tick the same way; a
later ``complete`` is ignored (``memory:summarization:late``).

Tasks finished without the LLM (heuristic or skip pressure modes, time-outs) are applied
by ``tick`` within its budget (:meth:`SummarizationService.apply_ready`): making the
summary and applying it are one item each.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Sequence
from typing import Any

from f09_memory._owner import ThreadOwner, owned_by_thread
from f09_memory._validate import check_duration, check_now
from f09_memory.bus import (
    SummarizationCompleted,
    SummarizationFailed,
    SummarizationLate,
    SummarizationQueued,
    SummarizationTimedOut,
)
from f09_memory.config.config import TickCosts
from f09_memory.core.state import EngineState
from f09_memory.core.writer import Writer
from f09_memory.errors import InputInvalidError
from f09_memory.ingestion.validation import PendingRecord, validate_agent_id, validate_item
from f09_memory.maintenance.budget import WorkBudget
from f09_memory.persistence.journal import Journaled, journaled
from f09_memory.protocols import LLMClient
from f09_memory.schema.tasks import SummarizationTask
from f09_memory.store.agent import AgentMemory
from f09_memory.summarization.outcome import SummaryOutcome
from f09_memory.summarization.pipeline import Summarizer

__all__ = ["TIMEOUT", "LLMWorker", "SummarizationService", "Waiter", "ask_llm", "ask_many"]


Waiter = Callable[[threading.Event, float], bool]
"""Waits for a worker's answer: ``wait(done, seconds) -> answered`` (``Event.wait``)."""


def _wait(done: threading.Event, seconds: float) -> bool:
    return done.wait(seconds)


TIMEOUT = "timeout"
"""The error text prefix :func:`ask_llm` gives a call that ran past its time limit."""

_Answer = tuple[str | None, str | None]


class _Call:
    """One LLM call queued on a worker; it runs at most once (see :meth:`claim`)."""

    __slots__ = ("_claim", "box", "call", "done")

    def __init__(self, call: Callable[[], _Answer]) -> None:
        self.call = call
        self.box: list[_Answer] = []
        self.done = threading.Event()
        self._claim = threading.Lock()

    def claim(self) -> bool:
        """Take the call: the worker, to run it, or the caller, to move it elsewhere.

        Only the first taker gets ``True`` (a non-blocking lock, never released).
        """
        return self._claim.acquire(blocking=False)


class LLMWorker:
    """A daemon thread that runs LLM calls one after another (for :func:`ask_many`).

    One thread serves every call, so a call costs a queue hand-off, not a thread start. A
    call that overruns its time limit leaves the worker ``stuck``: the caller takes a new
    worker (and the calls still queued here), and this one exits once the call returns
    (its answer is dropped).
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self.stuck = False
        threading.Thread(target=self._loop, name="f09-llm", daemon=True).start()

    def _loop(self) -> None:
        while not self.stuck:
            job = self._jobs.get()
            if job.claim():  # else the caller took it back for another worker
                job.box.append(job.call())
                job.done.set()

    def queue(self, call: Callable[[], _Answer]) -> _Call:
        """Queue ``call`` and return it (its ``box`` gets the answer when ``done`` is set)."""
        job = _Call(call)
        self._jobs.put(job)
        return job


def ask_many(llm: LLMClient, tasks: Sequence[SummarizationTask], system: str, *,
             temperature: float, max_tokens: int, timeout_ms: int | None = None,
             wait: Waiter = _wait, workers: Callable[[], LLMWorker] = LLMWorker
             ) -> Generator[_Answer, None, None]:
    """Send each task's prompt to ``llm``; yield each ``(reply, None)`` or ``(None, error)``.

    Answers come in task order. A non-string reply counts as no reply (the quality gate
    then takes the heuristic). Without ``timeout_ms`` each call runs when its answer is
    asked for. With it, every call is queued at once on a worker (``workers()`` gives
    it): the LLM still gets them one after another, in order, while the caller handles
    the answers already given, so a frame's tasks cost two thread hand-offs, not two
    each. An answer is waited for (with ``wait``, injectable for tests) at most
    ``timeout_ms`` of wall time from when it is asked for; past that it is abandoned,
    ``(None, "timeout ...")``: the worker is marked ``stuck`` (whatever it returns later
    is dropped) and the calls still queued on it move to ``workers()``'s next one. Each
    call runs at most once (:meth:`_Call.claim`); the calls not yet started when the
    caller stops asking never run.
    """
    calls = [_caller(llm, task, system, temperature, max_tokens) for task in tasks]
    if timeout_ms is None:
        for call in calls:
            yield call()
        return
    seconds = min(timeout_ms / 1000.0, threading.TIMEOUT_MAX)
    worker = workers()
    jobs = [worker.queue(call) for call in calls]
    try:
        for i, job in enumerate(jobs):
            if wait(job.done, seconds) and job.box:
                yield job.box[0]
                continue
            worker.stuck = True
            moved = [k for k in range(i + 1, len(jobs)) if jobs[k].claim()]  # not started
            if moved:
                worker = workers()
                for k in moved:
                    jobs[k] = worker.queue(jobs[k].call)
            yield None, f"{TIMEOUT}: no answer within {timeout_ms} ms"
    finally:  # the caller stopped early: what has not started never runs
        for job in jobs:
            job.claim()


def _caller(llm: LLMClient, task: SummarizationTask, system: str, temperature: float,
            max_tokens: int) -> Callable[[], _Answer]:
    def call() -> _Answer:
        try:
            reply: object = llm.complete(task.prompt or "", system=system,
                                         temperature=temperature, max_tokens=max_tokens)
        except Exception as exc:  # the adapter's failure: the heuristic summary instead
            return None, f"{type(exc).__name__}: {exc}"
        return (reply if isinstance(reply, str) else None), None

    return call


def ask_llm(llm: LLMClient, task: SummarizationTask, system: str, *, temperature: float,
            max_tokens: int, timeout_ms: int | None = None, wait: Waiter = _wait,
            worker: LLMWorker | None = None) -> tuple[str | None, str | None]:
    """:func:`ask_many` for one task, on ``worker`` (a new one if not given)."""
    return next(ask_many(llm, [task], system, temperature=temperature, max_tokens=max_tokens,
                         timeout_ms=timeout_ms, wait=wait,
                         workers=LLMWorker if worker is None else lambda: worker))


@owned_by_thread()
class SummarizationService(Journaled):
    """Two-phase summarization of one engine.

    Every public method and property raises ``MEMORY_INPUT_INVALID`` when called from a
    thread other than the engine's owner (see ``f09_memory._owner``).

    Args:
        state: The engine state.
        writer: The write path (stores summaries, retires sources).
        summarizer: The task lifecycle.
        owner: The engine's thread owner (shared, so ``engine.bind_thread`` moves both);
            default: the calling thread.
    """

    journal_prefix = "summarization."

    def __init__(self, state: EngineState, writer: Writer, summarizer: Summarizer,
                 owner: ThreadOwner | None = None) -> None:
        self._owner = owner or ThreadOwner()
        self._state = state
        self._writer = writer
        self.summarizer = summarizer
        self._durable = None
        self.wait: Waiter = _wait
        """How :meth:`run` waits for an LLM call (``Event.wait``; tests inject their own)."""
        self._worker: LLMWorker | None = None

    def _live_worker(self) -> LLMWorker:
        """The worker for LLM calls (a new one when there is none or it is stuck)."""
        if self._worker is None or self._worker.stuck:
            self._worker = LLMWorker()
        return self._worker

    # ------------------------------------------------------------------ reading
    @property
    def system_prompt(self) -> str:
        """The system text to send with every task prompt."""
        return self.summarizer.system_prompt

    def pending(self, agent_id: str | None = None) -> list[SummarizationTask]:
        """Queued and running tasks (of one agent, or all), in id order."""
        return self.summarizer.pending(agent_id)

    def _now(self, now: int | None) -> int:
        return self._state.clock if now is None else check_now(now)

    # ------------------------------------------------------------------ applying
    def apply(self, outcomes: list[SummaryOutcome], events: list[Any]) -> None:
        """Store each summary and retire its sources; queue ``memory:summarization:*``.

        Each outcome's sources go first (a summary never pushes past a cap); the summaries
        are then stored together (one build and embedding call for a round's, an agent's
        in order), and each task's ``completed`` follows. Events keep each task's order:
        its sources' ``expired``, its summary's ``created``, its ``completed``.
        """
        state = self._state
        writer = self._writer
        made: list[tuple[SummaryOutcome, AgentMemory, PendingRecord]] = []
        for o in outcomes:
            task = o.task
            if not o.replaces_sources or o.summary_text is None:
                events.append(SummarizationFailed(task_id=task.id,
                                                  reason=o.reason or task.status.value))
                continue
            item = self._summary_item(o)  # validated before anything changes
            am = state.store.get_or_create(task.agent_id)
            state.vocabulary(task.agent_id)
            slot_of = am.slot_of  # retire first: the summary never pushes past a cap
            writer.remove_many(am, [key for key in o.source_keys if key in slot_of],
                               "summarized", events)
            made.append((o, am, item))
        if not made:
            return
        stored = writer.store_groups(  # the sources' ids: not redacted
            [(am, (item,)) for _, am, item in made], state.clock, events,
            [o.recency_anchor for o, _, _ in made], own_refs=True)
        for (o, am, _), (key,) in zip(made, stored, strict=True):
            task = o.task
            task.summary_record_id = am.id_of(key)
            events.append(SummarizationCompleted(task_id=task.id,
                                                 summary_record_id=task.summary_record_id,
                                                 reduction_ratio=o.reduction_ratio))

    def _summary_item(self, o: SummaryOutcome) -> PendingRecord:
        """The summary record of ``o``, validated, within the size limits.

        The text is clipped to ``max_content_chars``; the sources' tags that fit
        ``max_tag_chars`` are kept, up to ``max_tags_per_record`` with ``summary``. The
        engine-made source event and ref ids are allowed their length whatever the limit.
        """
        limits = self._writer.ingestor.limits
        assert o.summary_text is not None
        tags = [t for t in o.tags if t.strip() and len(t) <= limits.tag]
        tags = [*tags[: limits.tags - 1], "summary"]
        made = max([limits.source_event, len(o.task.id), *map(len, o.source_ids)])
        return validate_item(
            o.summary_text[: limits.content], o.task.target_layer, o.importance, tags,
            {"sourceRefIds": list(o.source_ids), "sourceEvent": o.task.id},
            limits=limits._replace(source_event=made))

    def _apply_and_publish(self, outcome: SummaryOutcome) -> SummaryOutcome:
        events: list[Any] = []
        self.apply([outcome], events)
        self._writer.publish(events)
        return outcome

    def schedule(self, am: AgentMemory, now: int, events: list[Any],
                 require: bool = False) -> SummarizationTask | None:
        """Schedule a task for ``am`` if one is due (pressure decides llm/heuristic/skip).

        A task finished without the LLM (heuristic or skip mode) waits in the ready queue
        (:meth:`apply_ready`); with ``require`` (an explicit request) it is applied here.
        """
        mode = self._state.config.scoring.pressure[self._state.pressure].summarization
        task = self.summarizer.schedule(am, now, mode=mode, require=require)
        if task is not None:
            events.append(SummarizationQueued(task_id=task.id, agent_id=task.agent_id,
                                              source_count=len(task.source_ids)))
            if require and (outcome := self.summarizer.take_ready(task.id)) is not None:
                self.apply([outcome], events)
        return task

    def time_out(self, now: int, events: list[Any]) -> int:
        """Time out running tasks past their logical deadline (to the ready queue)."""
        limit = self._state.config.summarization_timeout_ms or 0
        timed_out = self.summarizer.time_out(now)
        events.extend(SummarizationTimedOut(task_id=t.id, agent_id=t.agent_id, timeout_ms=limit)
                      for t in timed_out)
        return len(timed_out)

    def apply_ready(self, budget: WorkBudget, costs: TickCosts, events: list[Any]) -> int:
        """Finish and apply waiting tasks, oldest first, while ``budget`` admits them.

        Two items per task: the heuristic summary (``sources * summary_heuristic``), then
        applying it (``sources * summary_apply + summary_store``; a skipped task only
        ``sources * summary_apply``). A summary made but not applied is held (and saved)
        for the next tick. An item starts only when it fits in what is left, or as the
        tick's first item (``WorkBudget.admits``: the minimum-progress rule). Returns how
        many tasks were applied.
        """
        summarizer = self.summarizer
        applied = 0
        while True:
            held = summarizer.next_held()
            if held is not None:
                n = len(held.source_keys)
                cost = n * costs.summary_apply + (costs.summary_store
                                                  if held.replaces_sources else 0)
                if not budget.admits(cost):
                    break
                budget.take(cost)
                self.apply([summarizer.take_held()], events)
                applied += 1
            else:
                n = summarizer.ready_sources or 0
                if not n:
                    break
                cost = n * costs.summary_heuristic
                if not budget.admits(cost):
                    break
                budget.take(cost)
                outcome = summarizer.take_ready()
                assert outcome is not None
                summarizer.hold(outcome)
        return applied

    # ------------------------------------------------------------------ two phases
    @journaled
    def request(self, agent_id: str, now: int | None = None) -> SummarizationTask | None:
        """Schedule a task for ``agent_id`` now, ignoring the minimum interval.

        Returns:
            The queued task, or ``None`` when too few records are eligible.

        Raises:
            SummaryLockedError: The agent already has a queued or running task
                (``MEMORY_SUMMARY_LOCKED``).
        """
        t = self._now(now)
        am = self._state.store.get(
            validate_agent_id(agent_id, self._writer.ingestor.limits.agent_id))
        if am is None:
            return None
        events: list[Any] = []
        task = self.schedule(am, t, events, require=True)
        self._writer.publish(events)
        return task

    @journaled
    def poll(self, now: int | None = None) -> list[SummarizationTask]:
        """Take every queued task (now ``running``), each with its redacted ``prompt``."""
        return self.summarizer.poll(self._now(now))

    @journaled
    def complete(self, task_id: str, text: str | None) -> SummaryOutcome:
        """Finish a running task with the LLM's text and apply it.

        Garbage or a poorly covering summary falls back to the local heuristic summary.

        Raises:
            SummaryFailedError: ``task_id`` is not a running task.
        """
        if self.summarizer.late(task_id) is not None:
            return self._ignore_late(task_id)
        return self._apply_and_publish(self.summarizer.complete(task_id, text))

    def _ignore_late(self, task_id: str) -> SummaryOutcome:
        outcome = self.summarizer.ignore_late(task_id)
        self._writer.publish([SummarizationLate(task_id=task_id)])
        return outcome

    @journaled
    def complete_after_error(self, task_id: str, error: str) -> SummaryOutcome:
        """Finish a running task whose LLM call failed: the heuristic summary replaces it.

        Raises:
            SummaryFailedError: ``task_id`` is not a running task.
        """
        if self.summarizer.late(task_id) is not None:
            return self._ignore_late(task_id)
        return self._apply_and_publish(self.summarizer.complete_after_error(task_id, error))

    @journaled
    def fail(self, task_id: str, reason: str) -> SummaryOutcome:
        """Give up a running task: its sources are kept; ``memory:summarization:failed``.

        Raises:
            SummaryFailedError: ``task_id`` is not a running task.
        """
        if self.summarizer.late(task_id) is not None:
            return self._ignore_late(task_id)
        return self._apply_and_publish(self.summarizer.fail(task_id, reason))

    def run(self, llm: LLMClient, *, now: int | None = None,
            timeout_ms: int | None = None) -> list[SummaryOutcome]:
        """Run every queued task through ``llm`` synchronously and apply it.

        An LLM that raises, returns garbage or does not answer within ``timeout_ms`` of
        wall time (default ``summarization_timeout_ms``) never loses a record: the local
        heuristic summary is used instead (``memory:summarization:timeout`` on a time-out;
        the late answer is dropped). With a timeout the calls are all queued on the worker
        thread at once and answered in order (:func:`ask_many`); each answer gets
        ``timeout_ms`` from when its turn comes. The replies are then completed in order and
        the round's summaries applied together (one transaction in durable mode).

        Raises:
            InputInvalidError: ``llm`` has no ``complete(prompt, ...)``, or a bad timeout.
        """
        if not isinstance(llm, LLMClient):
            raise InputInvalidError("llm must have complete(prompt, *, system, temperature, "
                                    "max_tokens) -> str (LLMClient)", details={"field": "llm"})
        cfg = self._state.config
        if timeout_ms is None:
            timeout_ms = cfg.summarization_timeout_ms
        else:  # a positive integer of ms below 2**62 (None: the config's)
            timeout_ms = check_duration(timeout_ms, "timeout_ms")
        tasks = self.poll(self._now(now))
        answers = ask_many(llm, tasks, self.system_prompt,
                           temperature=cfg.summarization_temperature,
                           max_tokens=cfg.summarization_max_tokens, timeout_ms=timeout_ms,
                           wait=self.wait, workers=self._live_worker)
        try:
            replies = [(task, reply, error)
                       for task, (reply, error) in zip(tasks, answers, strict=True)]
        finally:  # an interrupted wait: the calls not started yet never run
            answers.close()
        return self._complete_round(replies, timeout_ms or 0)

    @journaled
    def _complete_round(self, replies: list[tuple[SummarizationTask, str | None, str | None]],
                        timeout_ms: int) -> list[SummaryOutcome]:
        """:meth:`complete` (or :meth:`complete_after_error`) of each task's reply, in order.

        The summaries are applied together (:meth:`apply`), each task's time-out event
        first; what was completed is applied even when a later task raises (in durable mode
        the raise then undoes the whole round, as any call's).
        """
        summarizer = self.summarizer
        events: list[Any] = []
        outcomes: list[SummaryOutcome] = []
        done: list[SummaryOutcome] = []
        try:
            for task, reply, error in replies:
                task_id = task.id
                if error is not None and error.startswith(TIMEOUT):
                    events.append(SummarizationTimedOut(
                        task_id=task_id, agent_id=task.agent_id, timeout_ms=timeout_ms))
                if summarizer.late(task_id) is not None:
                    outcomes.append(summarizer.ignore_late(task_id))
                    events.append(SummarizationLate(task_id=task_id))
                    continue
                outcome = (summarizer.complete(task_id, reply) if error is None
                           else summarizer.complete_after_error(task_id, error))
                outcomes.append(outcome)
                done.append(outcome)
        finally:  # what was completed is applied, even if a later task raised
            self.apply(done, events)
            self._writer.publish(events)
        return outcomes
        return outcomes
