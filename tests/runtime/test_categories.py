"""Memory categories, the storage mapping and importance normalization."""

from __future__ import annotations

import math

import pytest

from f09_memory.errors import ErrorCode, InputInvalidError
from f09_memory.runtime import IMPORTANCE_SCALE, MomentCategory, normalize_importance
from f09_memory.runtime import storage_category as stored


def test_categories_are_the_seed_and_prd_names_in_order() -> None:
    assert [c.value for c in MomentCategory] == [
        "decision", "preference", "fact", "commitment", "blocker", "open_thread",
        "session_snapshot",
    ]
    assert MomentCategory("open_thread") == "open_thread"


def test_blocker_is_stored_as_open_thread_others_as_themselves() -> None:
    assert stored(MomentCategory.BLOCKER) is MomentCategory.OPEN_THREAD
    assert stored("blocker") is MomentCategory.OPEN_THREAD
    others = [c for c in MomentCategory if c is not MomentCategory.BLOCKER]
    assert [stored(c) for c in others] == others


def test_storage_category_rejects_unknown_names() -> None:
    with pytest.raises(InputInvalidError) as info:
        stored("reflection")
    assert info.value.details["field"] == "category"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(9, 0.9), (7, 0.7), (8, 0.8), (8.5, 0.85), (10, 1.0), (1, 0.1), (0, 0.0),
     (12, 1.0), (-3, 0.0)],
)
def test_normalize_importance_divides_by_scale_and_clamps(value: float, expected: float) -> None:
    assert normalize_importance(value) == pytest.approx(expected)


def test_normalize_importance_custom_scale() -> None:
    assert IMPORTANCE_SCALE == 10.0
    assert normalize_importance(3, scale=5) == pytest.approx(0.6)
    assert normalize_importance(0.9, scale=1) == pytest.approx(0.9)


@pytest.mark.parametrize(
    ("value", "scale", "field"),
    [
        ("9", 10, "importance"),
        (None, 10, "importance"),
        (True, 10, "importance"),
        (math.nan, 10, "importance"),
        (math.inf, 10, "importance"),
        (5, 0, "scale"),
        (5, -10, "scale"),
        (5, math.inf, "scale"),
        (5, "10", "scale"),
    ],
)
def test_bad_importance_input_raises_input_invalid(
    value: object, scale: object, field: str
) -> None:
    with pytest.raises(InputInvalidError) as info:
        normalize_importance(value, scale=scale)  # type: ignore[arg-type]
    assert info.value.code is ErrorCode.MEMORY_INPUT_INVALID
    assert info.value.details["field"] == field
