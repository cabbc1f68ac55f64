"""SummarizationService: the engine's two-phase summarization (``engine.summarization``).

It owns the :class:`~f09_memory.summarization.pipeline.Summarizer` (task lifecycle and
quality gate) and applies each finished task to the store: the summary is stored as one
``semantic`` record tagged ``summary`` with ``sourceRefIds`` = the sources, the sources are
retired (``memory:record:expired`` reason ``summarized``), and ``memory:summarization:*``
is emitted.

The host loop calls ``poll(now)`` to take queued tasks (each with its redacted ``prompt``),
sends them to its LLM outside the frame, and hands the text back with ``complete`` or gives
up with ``fail``. ``run(llm)`` is the synchronous convenience over the same two phases (each
step journaled in durable mode, so a replay needs no LLM).
"""

from __future__ import annotations

from typing import Any

from f09_memory._validate import check_now
from f09_memory.bus import SummarizationCompleted, SummarizationFailed, SummarizationQueued
from f09_memory.core.state import EngineState
from f09_memory.core.writer import Writer
from f09_memory.errors import InputInvalidError
from f09_memory.ingestion.pipeline import MAX_CONTENT_CHARS, validate_agent_id, validate_item
from f09_memory.persistence.journal import Journaled, journaled
from f09_memory.protocols import LLMClient
from f09_memory.schema.tasks import SummarizationTask
from f09_memory.store.agent import AgentMemory
from f09_memory.summarization.pipeline import Summarizer, SummaryOutcome

__all__ = ["SummarizationService", "ask_llm"]


def ask_llm(llm: LLMClient, task: SummarizationTask, system: str, *, temperature: float,
            max_tokens: int) -> tuple[str | None, str | None]:
    """Send one task's prompt to ``llm``: ``(reply, None)`` or ``(None, error text)``.

    A non-string reply counts as no reply (the quality gate then takes the heuristic).
    """
    try:
        reply: object = llm.complete(task.prompt or "", system=system,
                                     temperature=temperature, max_tokens=max_tokens)
    except Exception as exc:  # the adapter's failure: the heuristic summary instead
        return None, f"{type(exc).__name__}: {exc}"
    return (reply if isinstance(reply, str) else None), None


class SummarizationService(Journaled):
    """Two-phase summarization of one engine.

    Args:
        state: The engine state.
        writer: The write path (stores summaries, retires sources).
        summarizer: The task lifecycle.
    """

    journal_prefix = "summarization."

    def __init__(self, state: EngineState, writer: Writer, summarizer: Summarizer) -> None:
        self._state = state
        self._writer = writer
        self.summarizer = summarizer
        self._durable = None

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
        """Store each summary and retire its sources; queue ``memory:summarization:*``."""
        state = self._state
        writer = self._writer
        for o in outcomes:
            task = o.task
            if not o.replaces_sources or o.summary_text is None:
                events.append(SummarizationFailed(task_id=task.id,
                                                  reason=o.reason or task.status.value))
                continue
            am = state.store.get_or_create(task.agent_id)
            state.vocabulary(task.agent_id)
            for key in o.source_keys:  # retire first: the summary never pushes past a cap
                if key in am.slot_of:
                    writer.remove(am, key, "summarized", events)
            item = validate_item(
                o.summary_text[:MAX_CONTENT_CHARS], task.target_layer, o.importance,
                [t for t in o.tags if t.strip()] + ["summary"],
                {"sourceRefIds": list(o.source_ids), "sourceEvent": task.id})
            (key,) = writer.store(am, (item,), state.clock, events, o.recency_anchor)
            task.summary_record_id = am.id_of(key)
            events.append(SummarizationCompleted(task_id=task.id,
                                                 summary_record_id=task.summary_record_id,
                                                 reduction_ratio=o.reduction_ratio))

    def _apply_and_publish(self, outcome: SummaryOutcome) -> SummaryOutcome:
        events: list[Any] = []
        self.apply([outcome], events)
        self._writer.publish(events)
        return outcome

    def schedule(self, am: AgentMemory, now: int, events: list[Any],
                 require: bool = False) -> SummarizationTask | None:
        """Schedule a task for ``am`` if one is due (pressure decides llm/heuristic/skip).

        Outcomes finished at once (heuristic or skip mode) are applied here.
        """
        mode = self._state.config.scoring.pressure[self._state.pressure].summarization
        task = self.summarizer.schedule(am, now, mode=mode, require=require)
        if task is not None:
            events.append(SummarizationQueued(task_id=task.id, agent_id=task.agent_id,
                                              source_count=len(task.source_ids)))
        self.apply(self.summarizer.collect(), events)
        return task

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
        am = self._state.store.get(validate_agent_id(agent_id))
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
        return self._apply_and_publish(self.summarizer.complete(task_id, text))

    @journaled
    def complete_after_error(self, task_id: str, error: str) -> SummaryOutcome:
        """Finish a running task whose LLM call failed: the heuristic summary replaces it.

        Raises:
            SummaryFailedError: ``task_id`` is not a running task.
        """
        return self._apply_and_publish(self.summarizer.complete_after_error(task_id, error))

    @journaled
    def fail(self, task_id: str, reason: str) -> SummaryOutcome:
        """Give up a running task: its sources are kept; ``memory:summarization:failed``.

        Raises:
            SummaryFailedError: ``task_id`` is not a running task.
        """
        return self._apply_and_publish(self.summarizer.fail(task_id, reason))

    def run(self, llm: LLMClient, *, now: int | None = None) -> list[SummaryOutcome]:
        """Run every queued task through ``llm`` synchronously and apply it.

        An LLM that raises or returns garbage never loses a record: the local heuristic
        summary is used instead.

        Raises:
            InputInvalidError: ``llm`` has no ``complete(prompt, ...)``.
        """
        if not isinstance(llm, LLMClient):
            raise InputInvalidError("llm must have complete(prompt, *, system, temperature, "
                                    "max_tokens) -> str (LLMClient)", details={"field": "llm"})
        cfg = self._state.config
        outcomes: list[SummaryOutcome] = []
        for task in self.poll(self._now(now)):
            reply, error = ask_llm(llm, task, self.system_prompt,
                                   temperature=cfg.summarization_temperature,
                                   max_tokens=cfg.summarization_max_tokens)
            if error is not None:
                outcomes.append(self.complete_after_error(task.id, error))
            else:
                outcomes.append(self.complete(task.id, reply))
        return outcomes
