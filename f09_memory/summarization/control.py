"""SummarizationControl: the engine's two-phase summarization surface (``engine.summarization``).

The host loop calls ``poll(now)`` to take queued tasks (each with its redacted ``prompt``),
sends them to its LLM outside the frame, and hands the text back with ``complete`` or gives
up with ``fail``. Each finished task is applied by the engine right away: the summary record
is stored, the sources are retired, and ``memory:summarization:*`` is emitted.
"""

from __future__ import annotations

from collections.abc import Callable

from f09_memory.schema.tasks import SummarizationTask
from f09_memory.summarization.pipeline import Summarizer, SummaryOutcome

__all__ = ["SummarizationControl"]


class SummarizationControl:
    """Two-phase access to an engine's summarizer.

    Args:
        summarizer: The engine's summarizer (read-only access).
        request: Schedules a task for one agent now (explicit request).
        poll: Takes the queued tasks (engine operation).
        complete: Completes a task and applies the outcome (engine operation).
        fail: Fails a task and applies the outcome (engine operation).
        clock: The engine clock, used when ``now`` is omitted.
    """

    def __init__(
        self,
        summarizer: Summarizer,
        *,
        request: Callable[[str, int], SummarizationTask | None],
        poll: Callable[[int], list[SummarizationTask]],
        complete: Callable[[str, str | None], SummaryOutcome],
        fail: Callable[[str, str], SummaryOutcome],
        clock: Callable[[], int],
    ) -> None:
        self._summarizer = summarizer
        self._request = request
        self._poll = poll
        self._complete = complete
        self._fail = fail
        self._clock = clock

    @property
    def system_prompt(self) -> str:
        """The system text to send with every task prompt."""
        return self._summarizer.system_prompt

    def pending(self, agent_id: str | None = None) -> list[SummarizationTask]:
        """Queued and running tasks (of one agent, or all), in id order."""
        return self._summarizer.pending(agent_id)

    def request(self, agent_id: str, now: int | None = None) -> SummarizationTask | None:
        """Schedule a task for ``agent_id`` now, ignoring the minimum interval.

        Returns:
            The queued task, or ``None`` when too few records are eligible.

        Raises:
            SummaryLockedError: The agent already has a queued or running task
                (``MEMORY_SUMMARY_LOCKED``).
        """
        return self._request(agent_id, self._clock() if now is None else now)

    def poll(self, now: int | None = None) -> list[SummarizationTask]:
        """Take every queued task (now ``running``), each with its redacted ``prompt``."""
        return self._poll(self._clock() if now is None else now)

    def complete(self, task_id: str, text: str | None) -> SummaryOutcome:
        """Finish a running task with the LLM's text and apply it.

        Garbage or a poorly covering summary falls back to the local heuristic summary.

        Raises:
            SummaryFailedError: ``task_id`` is not a running task.
        """
        return self._complete(task_id, text)

    def fail(self, task_id: str, reason: str) -> SummaryOutcome:
        """Give up a running task: its sources are kept; ``memory:summarization:failed``.

        Raises:
            SummaryFailedError: ``task_id`` is not a running task.
        """
        return self._fail(task_id, reason)
