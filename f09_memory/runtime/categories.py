"""Memory categories of the agent runtime and the importance scale they are scored on.

The categories come from seed 000 (the key-moment types ``decision``, ``preference``,
``commitment``, ``blocker`` and the stored ``open_thread`` / ``session_snapshot``) and from the
PRD (seed 003, section 4.1, which adds ``fact``).

Importance scale. The PRD scores runtime memories on a 1-10 scale (decision 8-10, preference
6-8, stable fact 5-8, open thread 7-9, session snapshot 7); the engine stores importance in
``0..1``. :func:`normalize_importance` maps one onto the other as ``value / scale`` clamped to
``[0, 1]``, so PRD ``9`` becomes ``0.9`` — exactly seed 000's default for a decision, and
likewise ``7 -> 0.7`` (preference), ``8 -> 0.8`` (commitment), ``8.5 -> 0.85`` (blocker).
"""

from __future__ import annotations

import math
from enum import StrEnum
from numbers import Real

from f09_memory.errors import InputInvalidError

__all__ = [
    "IMPORTANCE_SCALE",
    "MomentCategory",
    "normalize_importance",
    "storage_category",
]

IMPORTANCE_SCALE: float = 10.0
"""The PRD's importance scale (section 4.3): scores run from 1 to 10."""


class MomentCategory(StrEnum):
    """What a runtime memory is about; the string value is the stored category name.

    The declaration order is the category order used to break ties deterministically (for
    example two key moments found in the same sentence).
    """

    DECISION = "decision"
    """A chosen approach or settled option ("Decision: use Supabase")."""
    PREFERENCE = "preference"
    """A standing like or dislike of the user ("I prefer aisle seats")."""
    FACT = "fact"
    """A stable fact: a name, a place, an owner, a deadline, an environment detail."""
    COMMITMENT = "commitment"
    """A promise or a to-do ("I will...", "TODO: ...")."""
    BLOCKER = "blocker"
    """Something that stops progress ("Blocked by ..."); stored as :attr:`OPEN_THREAD`."""
    OPEN_THREAD = "open_thread"
    """An unresolved item: a blocker, an unanswered question, an open TODO."""
    SESSION_SNAPSHOT = "session_snapshot"
    """A compact summary written on idle or before compaction."""


_STORED_AS: dict[MomentCategory, MomentCategory] = {
    MomentCategory.BLOCKER: MomentCategory.OPEN_THREAD,
}


def storage_category(category: MomentCategory | str) -> MomentCategory:
    """Return the category a detected moment is stored under.

    Seed 000 stores a ``blocker`` moment with category ``open_thread`` (the PRD has no
    ``blocker`` category); every other category is stored as itself.

    Args:
        category: A :class:`MomentCategory` or its string value.

    Returns:
        The category to store.

    Raises:
        InputInvalidError: ``category`` is not a known category.

    """
    try:
        member = MomentCategory(category)
    except ValueError as exc:
        raise InputInvalidError(
            f"unknown memory category; use one of "
            f"{', '.join(c.value for c in MomentCategory)}",
            details={"field": "category", "value": repr(category)},
        ) from exc
    return _STORED_AS.get(member, member)


def normalize_importance(value: float, scale: float = IMPORTANCE_SCALE) -> float:
    """Map an importance on a ``1..scale`` scale to the engine's ``0..1``.

    The mapping is ``value / scale`` clamped to ``[0, 1]``: with the default scale of 10,
    ``9 -> 0.9``, ``7 -> 0.7``, ``1 -> 0.1``, ``12 -> 1.0`` and ``-3 -> 0.0``.
    Runtime complexity: ``O(1)``.

    Args:
        value: The importance on the ``1..scale`` scale (int or float; not bool).
        scale: The top of the scale; must be a finite number greater than zero.

    Returns:
        The importance in ``[0.0, 1.0]``.

    Raises:
        InputInvalidError: ``value`` is not a finite real number, or ``scale`` is not a
            finite real number greater than zero.

    """
    if isinstance(scale, bool) or not isinstance(scale, Real) or not math.isfinite(scale):
        raise InputInvalidError(
            f"importance scale must be a finite number greater than 0, got {scale!r}",
            details={"field": "scale", "value": repr(scale)},
        )
    if scale <= 0:
        raise InputInvalidError(
            f"importance scale must be greater than 0, got {scale!r}; the PRD scale is 10",
            details={"field": "scale", "value": float(scale)},
        )
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise InputInvalidError(
            f"importance must be a finite number on the 1..{scale:g} scale, got {value!r}",
            details={"field": "importance", "value": repr(value)},
        )
    return min(1.0, max(0.0, float(value) / float(scale)))
