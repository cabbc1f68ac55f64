"""Judging (index 10): a summarization task's outcome, from the LLM's text or without it.

A task the summarizer holds is a :class:`PendingTask` (the task, a snapshot of its sources,
its deadline). When it ends, :class:`Judge` turns it into a :class:`SummaryOutcome`:

- ``judge``: the quality gate on the LLM's text. Garbage (:func:`garbage_reason`) or a
  coverage of the sources' key terms below ``summarization_min_coverage`` gives the local
  :func:`heuristic_summary` instead; otherwise the text, redacted, is the summary.
- ``heuristic``: the local summary (an LLM error, a timeout, the ``heuristic`` mode).
- ``kept``: no summary, the sources are kept (a failure, the ``skip`` mode).

Every text an outcome carries (summary, reason) is redacted; a reason is clipped to
200 characters. Pure: nothing here touches the store or the summarizer's queues.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from f09_memory.config.config import MemoryConfig
from f09_memory.schema.enums import TaskStatus
from f09_memory.schema.tasks import SummarizationTask
from f09_memory.summarization.heuristic import coverage_of, garbage_reason, heuristic_summary
from f09_memory.summarization.outcome import SummaryOutcome, SummaryPath
from f09_memory.summarization.sources import KeyTerm, SourceEvent, entities_of, key_terms

__all__ = ["Judge", "PendingTask"]

_REASON_CHARS: Final = 200


@dataclass(slots=True)
class PendingTask:
    """A task the summarizer holds, with the snapshot of its sources."""

    task: SummarizationTask
    sources: tuple[SourceEvent, ...]
    deadline: int | None = None
    """The logical time the LLM's answer is due by (``None``: no limit)."""
    reason: str = ""
    """Ready tasks: why they finish without the LLM (``skip:`` prefix: sources kept)."""
    terms: list[KeyTerm] | None = None
    """The sources' key terms, once computed (derived, not saved)."""
    entities: list[list[str]] | None = None
    """``entities_of(sources)``, once computed (derived, not saved): the prompt's grouping
    and header and the quality gate's terms share it."""

    def source_entities(self) -> list[list[str]]:
        """``entities_of(sources)``, computed once."""
        if self.entities is None:
            self.entities = entities_of(self.sources)
        return self.entities

    def to_state(self) -> dict[str, Any]:
        """JSON-safe state (``from_state`` inverts it)."""
        return {"task": self.task.to_json_dict(),
                "sources": [s.to_state() for s in self.sources],
                "deadline": self.deadline, "reason": self.reason}

    @classmethod
    def from_state(cls, item: Mapping[str, Any]) -> PendingTask:
        """The task :meth:`to_state` saved (raises on a malformed item)."""
        deadline = item.get("deadline")
        return cls(SummarizationTask.parse(item["task"]),
                   tuple(SourceEvent.from_state(s) for s in item["sources"]),
                   None if deadline is None else int(deadline), str(item.get("reason", "")))


class Judge:
    """Turns the end of a task into its outcome (see the module docstring).

    Args:
        config: The engine config (coverage terms and minimum, heuristic length).
        redact: Applied to every text an outcome carries.
    """

    def __init__(self, config: MemoryConfig, redact: Callable[[str], str]) -> None:
        self.config = config
        self._redact = redact

    def terms(self, pending: PendingTask) -> list[KeyTerm]:
        """The sources' key terms (computed once per task)."""
        if pending.terms is None:
            pending.terms = key_terms(pending.sources, self.config.summarization_coverage_terms,
                                      entities=pending.source_entities())
        return pending.terms

    def judge(self, pending: PendingTask, text: object) -> SummaryOutcome:
        """The outcome of the LLM's ``text``: the text, or the heuristic when it fails the gate."""
        found = self.terms(pending)
        reason = garbage_reason(text)
        if reason is not None or not isinstance(text, str):
            return self.heuristic(pending, f"garbage: {reason}")
        body = self._redact(text.strip())
        minimum = self.config.summarization_min_coverage
        cov = coverage_of(body, found)
        if round(cov * 1e9) < round(minimum * 1e9):
            return self.heuristic(pending, f"low coverage {cov:.2f} < {minimum:.2f}")
        return self._done(pending, body, "llm", None, cov)

    def heuristic(self, pending: PendingTask, reason: str) -> SummaryOutcome:
        """The outcome with the local summary, and why the LLM's text was not used."""
        cfg = self.config
        found = self.terms(pending)
        text = self._redact(heuristic_summary(
            pending.sources, max_chars=cfg.summarization_heuristic_max_chars,
            terms=cfg.summarization_coverage_terms, found=found))
        return self._done(pending, text, "heuristic", reason, coverage_of(text, found))

    def kept(self, pending: PendingTask, status: TaskStatus, reason: str) -> SummaryOutcome:
        """The outcome without a summary: the task ends as ``status``, its sources stay."""
        task, sources = pending.task, pending.sources
        clipped = self.clip_reason(reason)
        task.status = status
        task.failure_reason = clipped
        return SummaryOutcome(
            task=task,
            summary_text=None,
            source_keys=tuple(s.key for s in sources),
            used_fallback=False,
            reduction_ratio=0.0,
            path="none",
            reason=clipped,
            coverage=0.0,
            importance=max(s.importance for s in sources),
            tags=(),
            recency_anchor=max(s.recency_anchor for s in sources),
        )

    def clip_reason(self, reason: str) -> str:
        """``reason`` redacted, on one line, at most 200 characters."""
        text = " ".join(self._redact(reason).split())
        return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 1] + "…"

    def _done(self, pending: PendingTask, text: str, path: SummaryPath, reason: str | None,
              cov: float) -> SummaryOutcome:
        task, sources = pending.task, pending.sources
        task.status = TaskStatus.COMPLETED
        total = sum(len(s.content) for s in sources)
        ratio = round(max(0.0, 1.0 - len(text) / total), 6) if total else 0.0
        return SummaryOutcome(
            task=task,
            summary_text=text,
            source_keys=tuple(s.key for s in sources),
            used_fallback=path == "heuristic",
            reduction_ratio=ratio,
            path=path,
            reason=None if reason is None else self.clip_reason(reason),
            coverage=round(cov, 9),
            importance=max(s.importance for s in sources),
            tags=tuple(t.text for t in self.terms(pending) if t.kind == "tag"),
            recency_anchor=max(s.recency_anchor for s in sources),
        )
