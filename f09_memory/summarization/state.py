"""The summarizer's saved state (index 10): ``Summarizer.get_state``'s layout, read back.

:func:`parse_state` checks everything a restore relies on (one pending task per agent,
sources that match their task, task ids below the agent's counter, no agent waiting
twice) before the summarizer takes any of it: a malformed state changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from f09_memory.errors import InputInvalidError, MemoryEngineError
from f09_memory.schema.enums import TaskStatus
from f09_memory.schema.tasks import SummarizationTask
from f09_memory.summarization.judging import PendingTask
from f09_memory.summarization.outcome import SummaryOutcome

__all__ = ["PENDING_STATUSES", "STATE_VERSION", "SavedState", "parse_state"]

STATE_VERSION: Final = 2
"""Version of the ``get_state`` layout."""
PENDING_STATUSES: Final = (TaskStatus.QUEUED, TaskStatus.RUNNING)
"""The statuses of a task waiting for the LLM."""


class SavedState(NamedTuple):
    """The summarizer's queues and counters, as :func:`parse_state` read them."""

    counters: dict[str, int]
    next_check: dict[str, int]
    pending: dict[str, PendingTask]
    by_agent: dict[str, str]
    ready: list[PendingTask]
    late: dict[str, SummarizationTask]
    held: list[SummaryOutcome]
    waiting: set[str]


def parse_state(state: Mapping[str, Any]) -> SavedState:
    """Read and check a ``Summarizer.get_state`` dict.

    Raises:
        InputInvalidError: ``state`` is malformed (the message says how).
    """
    try:
        if state["version"] != STATE_VERSION:
            raise ValueError(f"unsupported state version {state['version']!r:.20}")
        counters = {str(a): int(n) for a, n in state["counters"].items()}
        next_check = {str(a): int(t) for a, t in state["nextCheck"].items()}
        pending: dict[str, PendingTask] = {}
        by_agent: dict[str, str] = {}
        for item in state["pending"]:
            entry = PendingTask.from_state(item)
            task, sources = entry.task, entry.sources
            if task.status not in PENDING_STATUSES or task.id in pending:
                raise ValueError(f"task {task.id!r:.80} is not a distinct pending task")
            if task.agent_id in by_agent:
                raise ValueError(f"two pending tasks for agent {task.agent_id!r:.80}")
            if [s.id for s in sources] != task.source_ids or not sources:
                raise ValueError(f"sources of task {task.id!r:.80} disagree with it")
            prefix, _, number = task.id.rpartition(":")
            if (prefix != f"sum:{task.agent_id}" or not number.isdigit()
                    or int(number) >= counters.get(task.agent_id, 0)):
                raise ValueError(f"task id {task.id!r:.80} does not match the counters")
            pending[task.id] = entry
            by_agent[task.agent_id] = task.id
        ready = [PendingTask.from_state(r) for r in state["ready"]]
        for r in ready:
            if not r.sources or not r.reason or r.task.id in pending or (
                    r.task.status is not TaskStatus.QUEUED):
                raise ValueError(f"ready task {r.task.id!r:.80} is malformed")
        late = {t.id: t for t in map(SummarizationTask.parse, state["late"])}
        held = [SummaryOutcome.from_state(o) for o in state["held"]]
        waiting = {r.task.agent_id for r in ready} | {o.task.agent_id for o in held}
        if len(waiting) != len(ready) + len(held) or waiting & set(by_agent):
            raise ValueError("an agent has two unfinished summarization tasks")
    except MemoryEngineError as exc:
        raise InputInvalidError(f"malformed summarizer state: {exc.message}"[:300]) from exc
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputInvalidError(f"malformed summarizer state: {exc}"[:300]) from exc
    return SavedState(counters, next_check, pending, by_agent, ready, late, held, waiting)
