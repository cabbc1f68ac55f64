"""Deterministic key-moment detection (seed 000 prompt 1, PRD sections 2 and 5.1).

:func:`detect_key_moments` scans one message for trigger phrases and returns the sentence that
contains each one as a :class:`KeyMoment`. No LLM, no clock, no randomness: the same text,
role and triggers always give the same moments in the same order.

Triggers (case-insensitive, whole words; :data:`DEFAULT_TRIGGERS`):

- decision (importance 9, role assistant): "Decision:", "We decided", "Going with",
  "Let's do", "Ship it"
- preference (7, user): "I prefer", "I like", "I want", "Always use"
- fact (6, user): "my name is", "I live in", "I work at", "I work for", "is located in",
  "is located at", "the deadline is", "the project owner is", "the password policy is"
- commitment (8, user): "I will", "We will", "TODO:", "Action item:"
- blocker (8.5, assistant): "Blocked by", "Blocker:", "Can't proceed", "Waiting on"

Importances are on the PRD's 1-10 scale (section 4.3); each moment also carries
``importance_unit = importance / 10`` (see :func:`~f09_memory.runtime.normalize_importance`),
which reproduces seed 000's defaults exactly: decision 0.9, preference 0.7, commitment 0.8,
blocker 0.85. ``fact`` (PRD section 2, "stable fact", 5-8) defaults to 6 -> 0.6 and uses
deliberately narrow phrases so ordinary chatter is not stored as a fact.

Role gating (seed 000): ``role="user"`` enables the preference and commitment patterns (and
fact), ``role="assistant"`` enables decision and blocker, ``role="both"`` enables every
pattern; ``"tool"`` and ``"system"`` enable none by default (PRD 8.3: raw tool output is not
auto-stored).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Real
from types import MappingProxyType
from typing import Final, Literal

from f09_memory.errors import InputInvalidError
from f09_memory.runtime.categories import (
    IMPORTANCE_SCALE,
    MomentCategory,
    normalize_importance,
    storage_category,
)

__all__ = [
    "ALL_ROLES",
    "DEFAULT_TRIGGERS",
    "IMPORTANCE_MAX",
    "IMPORTANCE_MIN",
    "KeyMoment",
    "Role",
    "SPEAKER_ROLES",
    "TriggerRule",
    "detect_key_moments",
]

Role = Literal["user", "assistant", "tool", "system", "both"]
"""Who wrote the text; ``"both"`` enables every trigger regardless of its roles."""

SPEAKER_ROLES: Final[tuple[str, ...]] = ("user", "assistant", "tool", "system")
"""The roles a :class:`TriggerRule` may be enabled for."""

ALL_ROLES: Final[str] = "both"
"""The pseudo-role that enables every trigger (seed 000: "both roles detect all patterns")."""

IMPORTANCE_MIN: Final[float] = 1.0
"""The bottom of the PRD importance scale a trigger may use."""

IMPORTANCE_MAX: Final[float] = IMPORTANCE_SCALE
"""The top of the PRD importance scale a trigger may use."""

_DEFAULT_ROLE: Final[Role] = "assistant"


@dataclass(frozen=True, slots=True)
class TriggerRule:
    """The phrases that reveal one category, its importance and the roles it listens to.

    Attributes:
        phrases: Trigger phrases, matched case-insensitively as whole words; runs of
            whitespace in a phrase match any whitespace, and ``'`` also matches the
            typographic apostrophe U+2019.
        importance: Importance of a match on the PRD's 1-10 scale.
        roles: The speaker roles (subset of :data:`SPEAKER_ROLES`) for which the rule is on.

    Raises:
        InputInvalidError: On construction, if a phrase is blank, the importance is outside
            ``[IMPORTANCE_MIN, IMPORTANCE_MAX]`` or a role is unknown.

    """

    phrases: tuple[str, ...]
    importance: float
    roles: frozenset[str]

    def __post_init__(self) -> None:
        phrases = tuple(self.phrases)
        if not phrases or any(not isinstance(p, str) or not p.strip() for p in phrases):
            raise InputInvalidError(
                "a trigger rule needs at least one non-blank phrase string",
                details={"field": "phrases", "value": repr(self.phrases)},
            )
        imp = self.importance
        if (
            isinstance(imp, bool)
            or not isinstance(imp, Real)
            or not math.isfinite(imp)
            or not IMPORTANCE_MIN <= imp <= IMPORTANCE_MAX
        ):
            raise InputInvalidError(
                f"trigger importance must be a number in [{IMPORTANCE_MIN:g}, "
                f"{IMPORTANCE_MAX:g}] (the PRD 1-10 scale), got {imp!r}",
                details={"field": "importance", "value": repr(imp)},
            )
        roles = frozenset(self.roles)
        unknown = sorted(str(r) for r in roles if r not in SPEAKER_ROLES)
        if unknown:
            raise InputInvalidError(
                f"unknown trigger role(s) {unknown}; use any of {list(SPEAKER_ROLES)}",
                details={"field": "roles", "value": unknown},
            )
        object.__setattr__(self, "phrases", phrases)
        object.__setattr__(self, "importance", float(imp))
        object.__setattr__(self, "roles", roles)


DEFAULT_TRIGGERS: Final[Mapping[MomentCategory, TriggerRule]] = MappingProxyType(
    {
        MomentCategory.DECISION: TriggerRule(
            phrases=("Decision:", "We decided", "Going with", "Let's do", "Ship it"),
            importance=9.0,
            roles=frozenset({"assistant"}),
        ),
        MomentCategory.PREFERENCE: TriggerRule(
            phrases=("I prefer", "I like", "I want", "Always use"),
            importance=7.0,
            roles=frozenset({"user"}),
        ),
        MomentCategory.FACT: TriggerRule(
            phrases=(
                "my name is",
                "I live in",
                "I work at",
                "I work for",
                "is located in",
                "is located at",
                "the deadline is",
                "the project owner is",
                "the password policy is",
            ),
            importance=6.0,
            roles=frozenset({"user"}),
        ),
        MomentCategory.COMMITMENT: TriggerRule(
            phrases=("I will", "We will", "TODO:", "Action item:"),
            importance=8.0,
            roles=frozenset({"user"}),
        ),
        MomentCategory.BLOCKER: TriggerRule(
            phrases=("Blocked by", "Blocker:", "Can't proceed", "Waiting on"),
            importance=8.5,
            roles=frozenset({"assistant"}),
        ),
    }
)
"""The seed's triggers plus ``fact``; pass ``triggers=`` to replace them (the whole mapping:
to extend, pass ``{**DEFAULT_TRIGGERS, category: rule}``)."""


@dataclass(frozen=True, slots=True)
class KeyMoment:
    """One detected key moment: the sentence that holds a trigger phrase.

    Attributes:
        category: The detected category (``blocker`` is stored as ``open_thread``; see
            :attr:`stored_category`).
        text: The sentence containing the trigger, stripped, whitespace runs collapsed.
        importance: Importance on the PRD's 1-10 scale (decision 9, blocker 8.5, ...).
        importance_unit: The same importance mapped to the engine's ``0..1``
            (``importance / 10``; decision 0.9 as in seed 000).
        phrase: The trigger phrase that matched, as written in the rule.

    """

    category: MomentCategory
    text: str
    importance: float
    importance_unit: float
    phrase: str

    @property
    def stored_category(self) -> MomentCategory:
        """The category to store the moment under (``blocker`` -> ``open_thread``)."""
        return storage_category(self.category)


# A sentence ends after . ! ? or … followed by whitespace, after a CJK terminator, or at a
# line break; decimals ("v1.2") and "TODO:" stay inside their sentence.
_SENTENCE_BREAK: Final = re.compile("(?<=[.!?\u2026])\\s+|(?<=[\u3002\uff01\uff1f])|[\r\n]+")
_CATEGORY_RANK: Final[dict[MomentCategory, int]] = {c: i for i, c in enumerate(MomentCategory)}


@dataclass(frozen=True, slots=True)
class _Compiled:
    category: MomentCategory
    rule: TriggerRule
    pattern: re.Pattern[str]


def _phrase_regex(phrase: str) -> str:
    words = phrase.split()
    body = r"\s+".join(re.escape(w).replace("'", "['\u2019]") for w in words)
    head = r"(?<!\w)" if re.match(r"\w", words[0]) else ""
    tail = r"(?!\w)" if re.search(r"\w$", words[-1]) else ""
    return f"{head}{body}{tail}"


def _compile(triggers: Mapping[MomentCategory, TriggerRule]) -> tuple[_Compiled, ...]:
    compiled: list[_Compiled] = []
    for key, rule in triggers.items():
        try:
            category = MomentCategory(key)
        except ValueError as exc:
            raise InputInvalidError(
                f"unknown trigger category (a {type(key).__name__}); use a MomentCategory",
                details={"field": "triggers", "value": repr(key)},
            ) from exc
        if not isinstance(rule, TriggerRule):
            raise InputInvalidError(
                f"triggers[{category.value!r}] must be a TriggerRule, got {type(rule).__name__}",
                details={"field": f"triggers.{category.value}"},
            )
        alternatives = "|".join(
            f"(?P<p{i}>{_phrase_regex(p)})" for i, p in enumerate(rule.phrases)
        )
        compiled.append(_Compiled(category, rule, re.compile(alternatives, re.IGNORECASE)))
    compiled.sort(key=lambda c: _CATEGORY_RANK[c.category])
    return tuple(compiled)


_DEFAULT_COMPILED: Final = _compile(DEFAULT_TRIGGERS)


def _sentences(text: str) -> list[str]:
    return [s for s in (" ".join(part.split()) for part in _SENTENCE_BREAK.split(text)) if s]


def detect_key_moments(
    text: str,
    *,
    role: Role = _DEFAULT_ROLE,
    triggers: Mapping[MomentCategory, TriggerRule] | None = None,
) -> list[KeyMoment]:
    """Find the key moments (decisions, preferences, facts, commitments, blockers) in a text.

    The text is split into sentences (at ``.``, ``!``, ``?``, ``…`` followed by whitespace,
    at the CJK terminators U+3002, U+FF01, U+FF1F, and at line breaks). Each sentence that
    contains a trigger phrase of an enabled category yields one :class:`KeyMoment` per
    category, whose ``text`` is that sentence, not the whole text. Matching is
    case-insensitive and on whole words.

    Ordering guarantee: moments come in order of appearance (sentence by sentence), and
    within one sentence in :class:`MomentCategory` declaration order. A sentence repeated in
    the text yields repeated moments; deduplication is the caller's choice.
    Runtime complexity: ``O(len(text) * number of phrases)``.

    Args:
        text: The message to scan. Empty or blank text gives ``[]``.
        role: Who wrote it (seed 000 default ``"assistant"``): ``"user"`` enables
            preference, commitment and fact; ``"assistant"`` enables decision and blocker;
            ``"both"`` enables every category; ``"tool"`` / ``"system"`` enable none by
            default.
        triggers: Replaces :data:`DEFAULT_TRIGGERS` (categories to :class:`TriggerRule`).

    Returns:
        The detected moments; ``[]`` if there are none.

    Raises:
        InputInvalidError: ``text`` is not a string, ``role`` is unknown, or ``triggers``
            holds an unknown category or a value that is not a :class:`TriggerRule`.

    Example:
        >>> [m.category.value for m in detect_key_moments("Decision: use Supabase.")]
        ['decision']

    """
    if not isinstance(text, str):
        raise InputInvalidError(
            f"text must be a string, got {type(text).__name__}",
            details={"field": "text"},
        )
    if role != ALL_ROLES and role not in SPEAKER_ROLES:
        raise InputInvalidError(
            f"unknown role; use one of {[*SPEAKER_ROLES, ALL_ROLES]}",
            details={"field": "role", "value": repr(role)},
        )
    compiled = _DEFAULT_COMPILED if triggers is None else _compile(triggers)
    enabled = [c for c in compiled if role == ALL_ROLES or role in c.rule.roles]
    if not enabled or not text.strip():
        return []
    moments: list[KeyMoment] = []
    for sentence in _sentences(text):
        for entry in enabled:
            match = entry.pattern.search(sentence)
            if match is None or match.lastgroup is None:
                continue
            phrase = entry.rule.phrases[int(match.lastgroup[1:])]
            moments.append(
                KeyMoment(
                    category=entry.category,
                    text=sentence,
                    importance=entry.rule.importance,
                    importance_unit=normalize_importance(entry.rule.importance),
                    phrase=phrase,
                )
            )
    return moments
