"""SummaryOutcome: the result of one summarization task, ready for the engine to apply."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from f09_memory.errors import InputInvalidError, MemoryEngineError
from f09_memory.json_types import JsonValue
from f09_memory.schema.tasks import SummarizationTask

__all__ = ["SummaryOutcome", "SummaryPath"]

SummaryPath = Literal["llm", "heuristic", "none"]
"""Which text an outcome carries: the LLM's, the local summary, or none (sources kept)."""


@dataclass(frozen=True, slots=True)
class SummaryOutcome:
    """The result of one task, ready for the engine to apply.

    Attributes:
        task: The task, in its final status (``completed``, ``failed`` or ``skipped``).
            The engine sets ``task.summary_record_id`` when it stores the summary.
        summary_text: The summary record's content; ``None`` when the sources are kept.
        source_keys: Per-agent keys of the sources, ascending (``task.source_ids`` order).
        used_fallback: Whether ``summary_text`` is the local heuristic summary.
        reduction_ratio: ``1 - len(summary) / total source chars`` (0..1, 6 decimals);
            0.0 when there is no summary.
        path: ``llm``, ``heuristic`` or ``none``.
        reason: Why the heuristic was used, or why there is no summary; ``None`` otherwise.
        coverage: Share of the sources' key terms the summary mentions (0.0 without one).
        importance: Suggested importance of the summary record: the sources' maximum.
        tags: Suggested tags: the sources' dominant tags, most frequent first.
        recency_anchor: Suggested recency anchor: the latest source's.
    """

    task: SummarizationTask
    summary_text: str | None
    source_keys: tuple[int, ...]
    used_fallback: bool
    reduction_ratio: float
    path: SummaryPath
    reason: str | None
    coverage: float
    importance: float
    tags: tuple[str, ...]
    recency_anchor: int

    @property
    def source_ids(self) -> tuple[str, ...]:
        """Ids of the sources (the summary's ``metadata.source_ref_ids``)."""
        return tuple(self.task.source_ids)

    @property
    def replaces_sources(self) -> bool:
        """Whether the engine should store the summary and retire the sources."""
        return self.summary_text is not None

    def to_state(self) -> dict[str, JsonValue]:
        """A JSON-safe dict (camelCase keys)."""
        return {
            "task": self.task.to_json_dict(),
            "summaryText": self.summary_text,
            "sourceKeys": list(self.source_keys),
            "usedFallback": self.used_fallback,
            "reductionRatio": self.reduction_ratio,
            "path": self.path,
            "reason": self.reason,
            "coverage": self.coverage,
            "importance": self.importance,
            "tags": list(self.tags),
            "recencyAnchor": self.recency_anchor,
        }

    @classmethod
    def from_state(cls, data: Mapping[str, object]) -> SummaryOutcome:
        """Inverse of :meth:`to_state`.

        Args:
            data: A :meth:`to_state` dict; every value is checked here.

        Returns:
            The outcome.

        Raises:
            MemoryEngineError: ``data`` is malformed (``MEMORY_INPUT_INVALID``).
        """
        raw = cast("Mapping[str, Any]", data)  # unchecked JSON: each field is converted below
        try:
            path = raw["path"]
            text = raw["summaryText"]
            if path not in ("llm", "heuristic", "none") or not (text is None
                                                                 or isinstance(text, str)):
                raise ValueError("bad path or text")
            keys = tuple(int(k) for k in raw["sourceKeys"])
            tags = tuple(str(t) for t in raw["tags"])
            return cls(
                task=SummarizationTask.parse(raw["task"]),
                summary_text=text,
                source_keys=keys,
                used_fallback=bool(raw["usedFallback"]),
                reduction_ratio=float(raw["reductionRatio"]),
                path=path,
                reason=None if raw["reason"] is None else str(raw["reason"]),
                coverage=float(raw["coverage"]),
                importance=float(raw["importance"]),
                tags=tags,
                recency_anchor=int(raw["recencyAnchor"]),
            )
        except MemoryEngineError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise InputInvalidError(f"malformed summary outcome state: {exc}"[:200]) from exc
