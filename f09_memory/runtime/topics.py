"""Topic-slug extraction by keyword frequency (seed 000 prompt 3, PRD section 6.2).

:func:`extract_topic_slug` turns a seed text (a first user message, a task description)
into a short topic slug such as ``oci``, used for ``topic:<slug>`` tags and for the
importance channel of blended recall. It is deterministic: no clock, no randomness, ties
broken alphabetically.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from f09_memory.errors import InputInvalidError

__all__ = ["STOPWORDS", "extract_topic_slug", "tokenize_topic_words"]

STOPWORDS: Final[frozenset[str]] = frozenset(
    {
        "the", "a", "an", "is", "are", "was", "were", "to", "for", "in", "on", "of", "and",
        "or", "but", "with", "this", "that", "it", "we", "i", "you", "my",
    }
)
"""Seed 000's stop words, dropped before counting."""

_APOSTROPHES: Final = re.compile("['\u2019]")
_PUNCTUATION: Final = re.compile(r"[^\w\s]")


def tokenize_topic_words(text: str) -> list[str]:
    """Normalize a text into candidate topic words, in order, stop words removed.

    Lowercases, deletes apostrophes (``"user's" -> "users"``), turns every other
    punctuation character into a space (so ``"ci/cd"`` gives ``ci`` and ``cd``), splits on
    whitespace and drops :data:`STOPWORDS`. Runtime complexity: ``O(len(text))``.

    Args:
        text: Any text.

    Returns:
        The remaining words in order of appearance (repeats kept).

    """
    cleaned = _PUNCTUATION.sub(" ", _APOSTROPHES.sub("", text.lower()))
    return [w for w in cleaned.split() if w not in STOPWORDS]


def _check_synonyms(synonyms: object) -> Mapping[str, Sequence[str]]:
    if not isinstance(synonyms, Mapping):
        raise InputInvalidError(
            "synonyms must be a mapping {slug: [aliases]}, "
            f"got {type(synonyms).__name__}",
            details={"field": "synonyms"},
        )
    for slug, aliases in synonyms.items():
        if not isinstance(slug, str) or not slug.strip():
            raise InputInvalidError(
                f"synonyms keys must be non-blank slug strings, got {slug!r}",
                details={"field": "synonyms", "value": repr(slug)},
            )
        if (
            isinstance(aliases, str)
            or not isinstance(aliases, Sequence)
            or not all(isinstance(a, str) for a in aliases)
        ):
            raise InputInvalidError(
                f"synonyms[{slug!r}] must be a list of alias strings, e.g. "
                f"{{{slug!r}: ['alias']}}; got {aliases!r}",
                details={"field": f"synonyms.{slug}", "value": repr(aliases)},
            )
    return synonyms


def extract_topic_slug(
    text: str, *, synonyms: Mapping[str, Sequence[str]] | None = None
) -> str | None:
    """Extract a topic slug from a text by keyword frequency.

    Steps (seed 000 prompt 3): normalize (lowercase, strip punctuation, split words; see
    :func:`tokenize_topic_words`), remove :data:`STOPWORDS`, pick the most frequent word
    with ties broken alphabetically, then map it through ``synonyms``: if the top word is a
    slug or one of a slug's aliases (compared lowercased and stripped), that slug is
    returned. An alias is matched against the single top word, so a multi-word alias such
    as ``"oracle cloud"`` never matches. If several slugs claim the word, a slug equal to
    the word wins, else the alphabetically smallest slug. Runtime complexity:
    ``O(len(text) + total aliases)``.

    Args:
        text: The seed text.
        synonyms: ``{slug: [aliases]}``, e.g. ``{"oci": ["oracle", "tenancy"]}``.

    Returns:
        The slug: the top word itself (lowercase, no punctuation) or the matching synonym
        key as given; ``None`` if the text is empty or only stop words and punctuation.

    Raises:
        InputInvalidError: ``text`` is not a string or ``synonyms`` is not a mapping of
            slug strings to lists of alias strings.

    Example:
        >>> extract_topic_slug("Move the oracle tenancy to the new oracle region",
        ...                    synonyms={"oci": ["oracle", "tenancy"]})
        'oci'

    """
    if not isinstance(text, str):
        raise InputInvalidError(
            f"text must be a string, got {type(text).__name__}", details={"field": "text"}
        )
    checked = _check_synonyms(synonyms) if synonyms is not None else {}
    counts: dict[str, int] = {}
    for word in tokenize_topic_words(text):
        counts[word] = counts.get(word, 0) + 1
    if not counts:
        return None
    top = min(counts.items(), key=lambda item: (-item[1], item[0]))[0]
    exact = sorted(slug for slug in checked if slug.strip().lower() == top)
    if exact:
        return exact[0]
    claimed = sorted(
        slug
        for slug, aliases in checked.items()
        if any(alias.strip().lower() == top for alias in aliases)
    )
    return claimed[0] if claimed else top
