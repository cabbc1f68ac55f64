"""Key-moment detection: seed 000 prompt 1 tests, plus fact, role gating, overrides."""

from __future__ import annotations

import pytest

from f09_memory.errors import ErrorCode, InputInvalidError
from f09_memory.runtime import (
    DEFAULT_TRIGGERS,
    KeyMoment,
    MomentCategory,
    TriggerRule,
    detect_key_moments,
)

C = MomentCategory


# --- seed 000, prompt 1, tests 1-8 -------------------------------------------------------


def test_assistant_decision_is_detected_with_importance_point_nine() -> None:
    moments = detect_key_moments("Decision: use Supabase", role="assistant")
    assert [m.category for m in moments] == [C.DECISION]
    assert moments[0].importance_unit == pytest.approx(0.9)
    assert moments[0].importance == pytest.approx(9.0)
    assert "Supabase" in moments[0].text


def test_user_preference_is_detected_with_importance_point_seven() -> None:
    moments = detect_key_moments("I prefer dark mode", role="user")
    assert [(m.category, m.importance_unit) for m in moments] == [(C.PREFERENCE, 0.7)]


def test_text_with_multiple_moments_returns_all_of_them() -> None:
    text = (
        "Decision: use Supabase. We decided to keep the cache. "
        "Blocked by RLS permissions. Waiting on the DBA."
    )
    moments = detect_key_moments(text, role="assistant")
    assert [m.category for m in moments] == [C.DECISION, C.DECISION, C.BLOCKER, C.BLOCKER]


def test_text_without_moments_returns_empty_list() -> None:
    assert detect_key_moments("The weather is nice today.", role="both") == []
    assert detect_key_moments("", role="both") == []
    assert detect_key_moments("   \n ", role="both") == []


def test_matching_is_case_insensitive() -> None:
    moments = detect_key_moments("DECISION: go with postgres", role="assistant")
    assert [m.category for m in moments] == [C.DECISION]
    assert [m.category for m in detect_key_moments("todo: x", role="user")] == [C.COMMITMENT]


def test_todo_is_a_commitment() -> None:
    moments = detect_key_moments("TODO: fix the bug", role="user")
    assert [(m.category, m.importance_unit, m.text) for m in moments] == [
        (C.COMMITMENT, 0.8, "TODO: fix the bug")
    ]


def test_blocked_by_is_a_blocker_stored_as_open_thread() -> None:
    moments = detect_key_moments("Blocked by RLS permissions", role="assistant")
    assert [(m.category, m.importance_unit) for m in moments] == [(C.BLOCKER, 0.85)]
    assert moments[0].stored_category is C.OPEN_THREAD


def test_extracts_the_containing_sentence_not_the_paragraph() -> None:
    paragraph = (
        "We looked at three databases this morning. Each had trade-offs!\n"
        "Decision: use Supabase for auth. The rest can wait until Friday."
    )
    moments = detect_key_moments(paragraph, role="assistant")
    assert [m.text for m in moments] == ["Decision: use Supabase for auth."]


# --- all seed triggers, default importances ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "role", "category"),
    [
        ("Decision: ship on Monday.", "assistant", C.DECISION),
        ("We decided to drop Redis.", "assistant", C.DECISION),
        ("Going with option B.", "assistant", C.DECISION),
        ("Let's do the migration first.", "assistant", C.DECISION),
        ("Let\u2019s do the migration first.", "assistant", C.DECISION),
        ("Looks good, ship it.", "assistant", C.DECISION),
        ("I prefer aisle seats.", "user", C.PREFERENCE),
        ("I like short answers.", "user", C.PREFERENCE),
        ("I want tabs, not spaces.", "user", C.PREFERENCE),
        ("Always use UTC timestamps.", "user", C.PREFERENCE),
        ("I will send the report.", "user", C.COMMITMENT),
        ("We will meet at noon.", "user", C.COMMITMENT),
        ("TODO: rotate the keys.", "user", C.COMMITMENT),
        ("Action item: update the docs.", "user", C.COMMITMENT),
        ("Blocked by the firewall.", "assistant", C.BLOCKER),
        ("Blocker: missing credentials.", "assistant", C.BLOCKER),
        ("I can't proceed without access.", "assistant", C.BLOCKER),
        ("Waiting on legal review.", "assistant", C.BLOCKER),
    ],
)
def test_every_seed_trigger_phrase_detects_its_category(
    text: str, role: str, category: MomentCategory
) -> None:
    moments = detect_key_moments(text, role=role)  # type: ignore[arg-type]
    assert [m.category for m in moments] == [category]
    assert moments[0].text == text


def test_default_importances_match_seed_and_prd_scales() -> None:
    expected = {
        C.DECISION: 9.0, C.PREFERENCE: 7.0, C.FACT: 6.0, C.COMMITMENT: 8.0, C.BLOCKER: 8.5
    }
    assert expected == {c: r.importance for c, r in DEFAULT_TRIGGERS.items()}


def test_trigger_must_be_a_whole_word() -> None:
    assert detect_key_moments("I liked it and I wanted more.", role="user") == []
    assert detect_key_moments("Shipit is a tool.", role="assistant") == []


def test_whitespace_inside_a_trigger_is_flexible_and_collapsed_in_text() -> None:
    moments = detect_key_moments("We   decided\tto  wait.", role="assistant")
    assert [m.text for m in moments] == ["We decided to wait."]


# --- fact category -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "My name is Ada.",
        "I live in Lyon.",
        "I work at Acme.",
        "I work for the city.",
        "The depot is located in the north quarter.",
        "The deadline is March 3.",
        "The password policy is 12 characters minimum.",
    ],
)
def test_stable_facts_are_detected_for_the_user(text: str) -> None:
    moments = detect_key_moments(text, role="user")
    assert [(m.category, m.importance_unit) for m in moments] == [(C.FACT, 0.6)]


def test_fact_triggers_are_conservative() -> None:
    assert detect_key_moments("It is raining and the game is fun.", role="user") == []


# --- role gating and ordering ------------------------------------------------------------


MIXED = "Decision: use Supabase. I prefer dark mode. TODO: fix the bug. Blocked by RLS."


def test_role_gates_the_categories() -> None:
    by_role = {
        role: [m.category for m in detect_key_moments(MIXED, role=role)]
        for role in ("user", "assistant", "both", "tool", "system")
    }
    assert by_role == {
        "user": [C.PREFERENCE, C.COMMITMENT],
        "assistant": [C.DECISION, C.BLOCKER],
        "both": [C.DECISION, C.PREFERENCE, C.COMMITMENT, C.BLOCKER],
        "tool": [],
        "system": [],
    }


def test_default_role_is_assistant_as_in_the_seed() -> None:
    assert [m.category for m in detect_key_moments(MIXED)] == [C.DECISION, C.BLOCKER]


def test_one_sentence_with_two_categories_yields_both_in_category_order() -> None:
    moments = detect_key_moments("Waiting on QA, so Decision: ship Friday.", role="both")
    assert [(m.category, m.phrase) for m in moments] == [
        (C.DECISION, "Decision:"),
        (C.BLOCKER, "Waiting on"),
    ]


def test_two_triggers_of_one_category_in_a_sentence_yield_one_moment() -> None:
    moments = detect_key_moments("We decided: ship it.", role="assistant")
    assert [m.category for m in moments] == [C.DECISION]


def test_detection_is_deterministic_and_moments_are_frozen() -> None:
    first = detect_key_moments(MIXED, role="both")
    assert first == detect_key_moments(MIXED, role="both")
    with pytest.raises(AttributeError):
        first[0].text = "x"  # type: ignore[misc]
    assert isinstance(first[0], KeyMoment)


def test_sentences_split_on_newlines_and_keep_decimals() -> None:
    text = "- Release v1.2 is out\n- Blocker: the CDN cache\n"
    moments = detect_key_moments(text, role="assistant")
    assert [m.text for m in moments] == ["- Blocker: the CDN cache"]


# --- overrides and errors ----------------------------------------------------------------


def test_triggers_override_replaces_the_defaults() -> None:
    custom = {
        C.OPEN_THREAD: TriggerRule(("open question:",), 7.0, frozenset({"user"})),
    }
    moments = detect_key_moments(
        "Open question: who owns the map? TODO: nothing.", role="user", triggers=custom
    )
    assert [(m.category, m.importance, m.importance_unit) for m in moments] == [
        (C.OPEN_THREAD, 7.0, 0.7)
    ]


def test_triggers_override_can_extend_the_defaults() -> None:
    rule = TriggerRule(("we'll go with",), 10, frozenset({"user"}))
    extended = {**DEFAULT_TRIGGERS, C.DECISION: rule}
    moments = detect_key_moments("OK, we'll go with the blue one.", role="user", triggers=extended)
    assert [(m.category, m.importance_unit) for m in moments] == [(C.DECISION, 1.0)]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"phrases": (), "importance": 5, "roles": frozenset({"user"})}, "phrases"),
        ({"phrases": ("  ",), "importance": 5, "roles": frozenset({"user"})}, "phrases"),
        ({"phrases": ("x",), "importance": 11, "roles": frozenset({"user"})}, "importance"),
        ({"phrases": ("x",), "importance": 0.5, "roles": frozenset({"user"})}, "importance"),
        ({"phrases": ("x",), "importance": True, "roles": frozenset({"user"})}, "importance"),
        ({"phrases": ("x",), "importance": 5, "roles": frozenset({"npc"})}, "roles"),
    ],
)
def test_bad_trigger_rule_raises_input_invalid(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InputInvalidError) as info:
        TriggerRule(**kwargs)  # type: ignore[arg-type]
    assert info.value.code is ErrorCode.MEMORY_INPUT_INVALID
    assert info.value.details["field"] == field


def test_bad_arguments_raise_input_invalid() -> None:
    with pytest.raises(InputInvalidError):
        detect_key_moments(None)  # type: ignore[arg-type]
    with pytest.raises(InputInvalidError) as info:
        detect_key_moments("x", role="npc")  # type: ignore[arg-type]
    assert info.value.details["field"] == "role"
    with pytest.raises(InputInvalidError):
        bad_key = {"nope": DEFAULT_TRIGGERS[C.FACT]}
        detect_key_moments("x", triggers=bad_key)  # type: ignore[arg-type]
    with pytest.raises(InputInvalidError):
        detect_key_moments("x", triggers={C.FACT: ("my name is",)})  # type: ignore[dict-item]
