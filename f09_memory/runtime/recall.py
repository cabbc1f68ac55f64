"""Topic-aware contextual recall: the blended startup context (seed 000 prompt 3, PRD 6).

:func:`contextual_recall` replaces "the last 15 memories" with three channels merged and
packed under a token budget:

- ``recency`` (channel A): ``engine.retrieve`` with ``strategy="recency"``, first
  ``recent_count`` records;
- ``semantic`` (channel B): ``strategy="semantic"`` with ``query=seed_text``, first
  ``semantic_count`` records (skipped for a blank seed text);
- ``importance`` (channel C): ``strategy="importance"`` with the topic as query (the topic
  slug from :func:`~f09_memory.runtime.extract_topic_slug` followed by its synonyms, PRD 8.4
  query expansion; the seed text if there is no slug), keeping records whose importance is
  at least ``importance_threshold``, first ``important_count`` of those.

Each channel reads every layer (purpose ``reasoning``) from one engine bundle whose budget
is ``MemoryConfig.max_context_tokens``, so a channel sees at most what fits there.
Candidates are merged by id and given a composite score: the record's importance plus, for
each channel that found it, ``1 / (1 + rank)`` (rank 0 is the channel's best), so a memory
found by several channels, or found early, scores higher. Packing is greedy by value
density (score per token, PRD 6.1): candidates in descending density order (then
descending score, then id) are taken while they fit in ``max_tokens``; one that does not
fit is skipped and smaller ones still get their chance. Densities and scores are quantized
to integers before ordering (DESIGN rule 3), so the result is the same on every machine.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING, Final

from f09_memory.errors import InputInvalidError, TokenBudgetUndefinedError
from f09_memory.ingestion.validation import validate_agent_id
from f09_memory.runtime.topics import extract_topic_slug
from f09_memory.runtime.turns import check_count, check_now
from f09_memory.schema.enums import Purpose, Strategy
from f09_memory.schema.records import MemoryRecord
from f09_memory.schema.retrieval import RetrievalRequest

if TYPE_CHECKING:
    from f09_memory.engine import MemoryEngine

__all__ = [
    "CHANNELS",
    "DEFAULT_IMPORTANCE_THRESHOLD",
    "DEFAULT_IMPORTANT_COUNT",
    "DEFAULT_RECENT_COUNT",
    "DEFAULT_SEMANTIC_COUNT",
    "RecallCandidate",
    "RecallResult",
    "contextual_recall",
]

CHANNELS: Final[tuple[str, ...]] = ("recency", "semantic", "importance")
"""The recall channels, in merge order (A, B, C)."""

DEFAULT_RECENT_COUNT: Final[int] = 5
"""Seed 000 ``recentCount``: records taken from the recency channel."""

DEFAULT_SEMANTIC_COUNT: Final[int] = 8
"""Seed 000 ``semanticCount``: records taken from the semantic channel."""

DEFAULT_IMPORTANT_COUNT: Final[int] = 10
"""Seed 000 ``importantCount``: records taken from the importance channel."""

DEFAULT_IMPORTANCE_THRESHOLD: Final[float] = 0.8
"""Seed 000 ``importanceThreshold`` (PRD "importance >= 8" on its 1-10 scale)."""

_QUANTUM: Final[float] = 1e9


@dataclass(frozen=True, slots=True)
class RecallCandidate:
    """One merged candidate and what packing made of it (for logs and explanations).

    Attributes:
        id: The record id.
        score: Composite score: importance plus ``1 / (1 + rank)`` per channel found in.
        tokens: The record's token estimate (at least 1).
        channels: The channels that found it, in :data:`CHANNELS` order.
        included: Whether it was packed into the result.

    """

    id: str
    score: float
    tokens: int
    channels: tuple[str, ...]
    included: bool


@dataclass(frozen=True, slots=True)
class RecallResult:
    """The packed startup context.

    Attributes:
        topic_slug: The topic slug of the seed text (``None`` if it has no topic word).
        memories: The packed records, in descending composite score (then id) order.
        total_tokens: Sum of their token estimates; never above ``max_tokens``.
        excluded: Merged candidates left out because they did not fit.
        candidates: Every merged candidate, in packing order (density, score, id).

    """

    topic_slug: str | None
    memories: tuple[MemoryRecord, ...]
    total_tokens: int
    excluded: int
    candidates: tuple[RecallCandidate, ...]


def _check_budget(max_tokens: object) -> int:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
        raise TokenBudgetUndefinedError(
            f"contextual_recall needs max_tokens, a positive integer token budget for the "
            f"startup context; got {max_tokens!r:.40}",
            details={"field": "max_tokens"},
        )
    return max_tokens


def _check_threshold(value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, Real)
        or not math.isfinite(value)
        or not 0.0 <= float(value) <= 1.0
    ):
        raise InputInvalidError(
            f"importance_threshold must be a number in 0..1 (the engine's importance scale; "
            f"PRD 8 -> 0.8), got {value!r:.40}",
            details={"field": "importance_threshold"},
        )
    return float(value)


def _channel(
    engine: MemoryEngine,
    agent_id: str,
    strategy: Strategy,
    query: str | None,
    now: int | None,
) -> list[MemoryRecord]:
    request = RetrievalRequest(
        agent_id=agent_id,
        purpose=Purpose.REASONING,
        max_tokens=engine.config.max_context_tokens,
        strategy=strategy,
        query=query,
    )
    return list(engine.retrieve(request, now=now).records)


def _importance_query(
    topic_slug: str | None, seed_text: str, synonyms: Mapping[str, Sequence[str]] | None
) -> str | None:
    if topic_slug is None:
        return seed_text if seed_text.strip() else None
    aliases = list((synonyms or {}).get(topic_slug, ()))
    return " ".join([topic_slug, *aliases])


def contextual_recall(
    engine: MemoryEngine,
    agent_id: str,
    seed_text: str,
    *,
    max_tokens: int,
    synonyms: Mapping[str, Sequence[str]] | None = None,
    recent_count: int = DEFAULT_RECENT_COUNT,
    semantic_count: int = DEFAULT_SEMANTIC_COUNT,
    important_count: int = DEFAULT_IMPORTANT_COUNT,
    importance_threshold: float = DEFAULT_IMPORTANCE_THRESHOLD,
    now: int | None = None,
) -> RecallResult:
    """Blend recency, semantic relevance and importance into a startup context.

    See the module docstring for the channels, the composite score and the packing. Reads
    only (three ``engine.retrieve`` calls); stores nothing.

    Ordering guarantee: identical engine state and arguments give an identical result.
    Runtime complexity: three retrievals plus ``O(k log k)`` for the ``k`` merged
    candidates.

    Args:
        engine: The engine to read.
        agent_id: The agent.
        seed_text: The first user message or the task description.
        max_tokens: Token budget of the packed memories (> 0).
        synonyms: ``{slug: [aliases]}`` for :func:`~f09_memory.runtime.extract_topic_slug`
            and the importance channel's query.
        recent_count: Records from the recency channel (0 turns it off).
        semantic_count: Records from the semantic channel (0 turns it off).
        important_count: Records from the importance channel (0 turns it off).
        importance_threshold: Minimum importance (0..1) of an importance-channel record.
        now: Logical time of the retrievals (``None``: the engine clock).

    Returns:
        A :class:`RecallResult`.

    Raises:
        TokenBudgetUndefinedError: ``max_tokens`` is missing, not an int, or not positive.
        InputInvalidError: Another bad argument (agent id, seed text, synonyms, a negative
            count, a threshold outside 0..1, ``now``).

    Example:
        >>> from f09_memory import MemoryEngine
        >>> engine = MemoryEngine()
        >>> _ = engine.ingest("agent", "OCI tenancy lives in Frankfurt", importance=0.9, now=1)
        >>> result = contextual_recall(engine, "agent", "OCI: fix the OCI pipeline",
        ...                            max_tokens=50, now=2)
        >>> (result.topic_slug, [m.content for m in result.memories], result.total_tokens)
        ('oci', ['OCI tenancy lives in Frankfurt'], 8)

    """
    agent_id = validate_agent_id(agent_id)
    budget = _check_budget(max_tokens)
    topic_slug = extract_topic_slug(seed_text, synonyms=synonyms)
    counts = {
        "recency": check_count(recent_count, "recent_count", 0),
        "semantic": check_count(semantic_count, "semantic_count", 0),
        "importance": check_count(important_count, "important_count", 0),
    }
    threshold = _check_threshold(importance_threshold)
    now = check_now(now)

    found: dict[str, list[tuple[MemoryRecord, str, int]]] = {}

    def take(channel: str, records: list[MemoryRecord]) -> None:
        for rank, record in enumerate(records[: counts[channel]]):
            found.setdefault(record.id, []).append((record, channel, rank))

    if counts["recency"]:
        take("recency", _channel(engine, agent_id, Strategy.RECENCY, None, now))
    if counts["semantic"] and seed_text.strip():
        take("semantic", _channel(engine, agent_id, Strategy.SEMANTIC, seed_text, now))
    if counts["importance"]:
        query = _importance_query(topic_slug, seed_text, synonyms)
        ranked = _channel(engine, agent_id, Strategy.IMPORTANCE, query, now)
        take("importance", [r for r in ranked if r.importance >= threshold])

    scored: list[tuple[int, int, str, MemoryRecord, float, int, tuple[str, ...]]] = []
    for record_id, hits in found.items():
        record = hits[0][0]
        score = record.importance + sum(1.0 / (1 + rank) for _, _, rank in hits)
        tokens = max(1, record.tokens_estimate or engine.counter.count(record.content))
        channels = tuple(c for c in CHANNELS if any(h[1] == c for h in hits))
        q_density = round(score / tokens * _QUANTUM)
        q_score = round(score * _QUANTUM)
        scored.append((-q_density, -q_score, record_id, record, score, tokens, channels))
    scored.sort(key=lambda row: (row[0], row[1], row[2]))

    total = 0
    chosen: list[tuple[int, str, MemoryRecord]] = []
    candidates: list[RecallCandidate] = []
    for _, neg_score, record_id, record, score, tokens, channels in scored:
        fits = total + tokens <= budget
        if fits:
            total += tokens
            chosen.append((neg_score, record_id, record))
        candidates.append(RecallCandidate(record_id, score, tokens, channels, fits))
    chosen.sort(key=lambda row: (row[0], row[1]))
    return RecallResult(
        topic_slug=topic_slug,
        memories=tuple(record for _, _, record in chosen),
        total_tokens=total,
        excluded=len(scored) - len(chosen),
        candidates=tuple(candidates),
    )
