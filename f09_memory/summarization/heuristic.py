"""The local summarizer and the summary quality checks (spec sections 8 step 4, and 16).

``heuristic_summary`` is what runs when the LLM is unavailable, fails, returns garbage, or
the rate governor says ``heuristic``: a deterministic, bounded text naming the time span,
the event count, the dominant entities and tags with their counts, and the first sentence
of the most important events. It names every key term the coverage check looks for, so
its coverage is 1.0 unless the length bound cuts it.

``coverage`` is the spec's coverage heuristic: the share of the sources' key terms
(:func:`~f09_memory.summarization.sources.key_terms`) that a summary mentions, compared
word-wise and case-insensitively. ``garbage_reason`` / ``is_garbage`` is the validator
for texts that are not summaries at all (empty, too short, no letters, refusals,
degenerate repetition).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from f09_memory._validate import is_text
from f09_memory.errors import InputInvalidError
from f09_memory.summarization.sources import KeyTerm, Source, key_terms, term_in, word_set

__all__ = [
    "MIN_SUMMARY_CHARS",
    "MIN_SUMMARY_WORDS",
    "coverage",
    "coverage_of",
    "first_sentence",
    "garbage_reason",
    "heuristic_summary",
    "is_garbage",
]

MIN_SUMMARY_CHARS: Final = 16
"""A summary shorter than this (stripped) is garbage."""
MIN_SUMMARY_WORDS: Final = 3
"""A summary with fewer words than this is garbage."""

_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+")
_REFUSAL_START: Final = re.compile(
    r"\W*(?:as an ai\b|as a language model|i\s*(?:'|\u2019)?\s*a?m sorry|sorry,? (?:but )?i\b|"
    r"i (?:cannot|can't|can\u2019t|can not|won't|am unable|am not able)\b|"
    r"i(?:'|\u2019)m (?:unable|not able)\b|unfortunately,? i\b)",
    re.IGNORECASE,
)
_REFUSAL_ANYWHERE: Final = re.compile(r"\bas an ai(?: language)? model\b")
_WORDS: Final = re.compile(r"\w+")
_HIGHLIGHTS: Final = 3
_HIGHLIGHT_CHARS: Final = 160
_ELLIPSIS: Final = "…"


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + _ELLIPSIS


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` without its final punctuation, whitespace folded."""
    folded = " ".join(text.split())
    return _SENTENCE_END.split(folded, maxsplit=1)[0].rstrip(".!?")


def heuristic_summary(
    sources: Sequence[Source], *, max_chars: int = 600, terms: int = 8,
    found: list[KeyTerm] | None = None,
) -> str:
    """A deterministic local summary of ``sources`` (see the module doc).

    Example output: ``"4 events from t=1000 to t=4000. Involving Bram (3), Lysa (1).
    Tags: trade (2). Highlights: Bram sold Lysa a sword; Paid Bram in silver."``

    Args:
        sources: The records or source events (any order; the result does not depend on it
            beyond ties of equal ``(recency_anchor, id)``, which ids rule out).
        max_chars: Length bound of the result (>= 32).
        terms: How many key terms to name (the coverage check's ``limit``).
        found: ``key_terms(sources, terms)`` if the caller has it already (computed here
            otherwise).

    Returns:
        The summary, at most ``max_chars`` characters.

    Raises:
        InputInvalidError: ``sources`` is empty or ``max_chars`` < 32.

    Runtime complexity: O(total content length + n log n).
    """
    if not sources:
        raise InputInvalidError("nothing to summarize: pass at least one record",
                                details={"field": "sources"})
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 32:
        raise InputInvalidError("max_chars must be an int >= 32", details={"field": "max_chars"})
    ordered = sorted(sources, key=lambda s: (s.recency_anchor, s.id))
    first, last = ordered[0].recency_anchor, ordered[-1].recency_anchor
    n = len(ordered)
    parts = [f"1 event at t={first}." if n == 1 else f"{n} events from t={first} to t={last}."]
    if found is None:
        found = key_terms(ordered, terms)
    ents = [f"{t.text} ({t.mentions})" for t in found if t.kind == "entity"]
    tags = [f"{t.text} ({t.mentions})" for t in found if t.kind == "tag"]
    if ents:
        parts.append(f"Involving {', '.join(ents)}.")
    if tags:
        parts.append(f"Tags: {', '.join(tags)}.")
    top = sorted(ordered, key=lambda s: (-round(s.importance * 1e9), s.recency_anchor, s.id))
    chosen = sorted(top[:_HIGHLIGHTS], key=lambda s: (s.recency_anchor, s.id))
    lines = [_clip(first_sentence(s.content), _HIGHLIGHT_CHARS) for s in chosen]
    lines = [line for line in lines if line]
    if lines:
        parts.append(f"Highlights: {'; '.join(lines)}.")
    return _clip(" ".join(parts), max_chars)


def coverage(summary: str, sources: Sequence[Source], *, terms: int = 8) -> float:
    """Share (0..1) of the sources' ``terms`` key terms that ``summary`` mentions.

    A term counts when every word of it appears in the summary (case-insensitive). With no
    key terms at all (no tags, no capitalized names) there is nothing to lose: 1.0.

    Runtime complexity: O(len(summary) + total content length).
    """
    return coverage_of(summary, key_terms(sources, terms))


def coverage_of(summary: str, found: Sequence[KeyTerm]) -> float:
    """:func:`coverage` against key terms computed already (1.0 when there are none)."""
    if not found:
        return 1.0
    words = word_set(summary)
    return sum(1 for t in found if term_in(t.text, words)) / len(found)


def garbage_reason(text: object) -> str | None:
    """Why ``text`` is not a usable summary, or ``None`` if it is.

    Reasons: ``empty`` (``None`` or blank), ``not text`` (not a str, or not valid Unicode:
    a lone surrogate), ``no letters``,
    ``too short`` (under ``MIN_SUMMARY_CHARS`` characters or ``MIN_SUMMARY_WORDS`` words),
    ``refusal`` ("As an AI...", "I'm sorry...", "I cannot..."), ``repetitive`` (8+ words,
    under a quarter of them distinct).
    """
    if text is None:
        return "empty"
    if not isinstance(text, str) or not is_text(text):
        return "not text"  # a lone surrogate is not text either
    body = text.strip()
    if not body:
        return "empty"
    if not any(c.isalpha() for c in body):
        return "no letters"
    lower = body.lower()
    words = _WORDS.findall(lower)
    if len(body) < MIN_SUMMARY_CHARS or len(words) < MIN_SUMMARY_WORDS:
        return "too short"
    if _REFUSAL_START.match(body) or ("as an ai" in lower and _REFUSAL_ANYWHERE.search(lower)):
        return "refusal"
    if len(words) >= 8 and len(set(words)) * 4 < len(words):
        return "repetitive"
    return None


def is_garbage(text: object) -> bool:
    """Whether ``text`` is not a usable summary (see :func:`garbage_reason`)."""
    return garbage_reason(text) is not None
