from __future__ import annotations

import re

import pytest

from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.redaction import BUILTIN_PATTERNS, PLACEHOLDER_PREFIX, Redactor, compile_patterns

PLACEHOLDER = re.compile(r"<REDACT:sha256-[0-9a-f]{12}>")


@pytest.mark.parametrize(("label", "secret"), [
    ("EMAIL", "jane.doe+npc@mail.example.org"),
    ("UUID", "123e4567-e89b-12d3-a456-426614174000"),
    ("NUMSEQ16", "4111111111111111"),
    ("NUMSEQ16", "4111 1111 1111 1111"),
    ("NUMSEQ16", "4111-1111-1111-1111-22"),
])
def test_builtin_patterns_replace_the_secret_with_a_hashed_placeholder(
    label: str, secret: str
) -> None:
    r = Redactor(BUILTIN_PATTERNS)
    text, labels = r.redact(f"before {secret} after")
    assert secret not in text
    assert (label,) == labels
    assert 1 == len(PLACEHOLDER.findall(text))
    assert text.startswith("before <REDACT:sha256-") and text.endswith("> after")


@pytest.mark.parametrize("clean", ["call 555-1234", "year 2024, 15 digits 123456789012345",
                                   "no at sign here", "version 1.2.3-beta"])
def test_ordinary_text_is_left_alone(clean: str) -> None:
    assert (clean, ()) == Redactor(BUILTIN_PATTERNS).redact(clean)


def test_placeholders_are_deterministic_and_salted() -> None:
    a = Redactor(["EMAIL"]).redact_text("x a@b.io")
    assert a == Redactor(["EMAIL"]).redact_text("x a@b.io")
    assert a != Redactor(["EMAIL"], salt="pepper").redact_text("x a@b.io")


def test_custom_patterns_apply_in_order_and_count() -> None:
    r = Redactor(["EMAIL", r"secret-\w+"])
    text, labels = r.redact("secret-abc and secret-xyz")
    assert ("CUSTOM1",) == labels
    assert 2 == len(PLACEHOLDER.findall(text))
    assert {"EMAIL": 0, "CUSTOM1": 2} == r.counts


def test_placeholders_are_not_redacted_again() -> None:
    r = Redactor([r"<REDACT:[^>]+>"])
    once = f"{PLACEHOLDER_PREFIX}abcdefabcdef>"
    assert once == r.redact_text(once)


def test_mode_off_keeps_text() -> None:
    assert ("a@b.io", ()) == Redactor(["EMAIL"], enabled=False).redact("a@b.io")


@pytest.mark.parametrize("bad", ["(", "x*", "", "   ", "(?P<n>a)(?P<n>b)"])
def test_invalid_patterns_are_rejected(bad: str) -> None:
    with pytest.raises(MemoryEngineError) as info:
        compile_patterns(["EMAIL", bad])
    assert ErrorCode.MEMORY_REDACTION_PATTERN_INVALID == info.value.code
    assert 1 == info.value.details["index"]


def test_builtin_names_are_case_insensitive() -> None:
    assert ["EMAIL", "UUID"] == [label for label, _ in compile_patterns(["email", " uuid "])]


BATCH_TEXTS = [
    "plain words only.",
    "mail jane@example.org now",
    "card 4111 1111 1111 1111 and 4111-1111-1111-1111",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "a-dash but no uuid, 42 digits",
    "Arabic-Indic digits \u0664\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661"
    "\u0661\u0661\u0661\u0661\u0661",
    "",
]


@pytest.mark.parametrize("patterns", [
    ("EMAIL", "UUID", "NUMSEQ16"), ("NUMSEQ16",), (r"jane\S*", "EMAIL"), (r"^plain",), (),
])
@pytest.mark.parametrize("start", range(len(BATCH_TEXTS)))
def test_redact_many_equals_redact_one_by_one(patterns: tuple[str, ...], start: int) -> None:
    texts = BATCH_TEXTS[start:] + BATCH_TEXTS[:start]
    one, many = Redactor(patterns, salt="s"), Redactor(patterns, salt="s")
    expected = [one.redact(t) for t in texts]
    out, labels = many.redact_many(texts)
    assert expected == list(zip(out, labels or [()] * len(texts), strict=True))
    assert (labels is None) == all(not hits for _, hits in expected)
    assert one.counts == many.counts


def test_redact_many_of_a_clean_ascii_batch_runs_no_pattern() -> None:
    r = Redactor(("EMAIL", "UUID", "NUMSEQ16"))
    texts = ["the smith at the well.", "rain over the mill!"]
    assert (texts, None) == r.redact_many(texts)
    assert ([], None) == r.redact_many([])
    assert (["a@b.cd"], None) == Redactor(("EMAIL",), enabled=False).redact_many(["a@b.cd"])
