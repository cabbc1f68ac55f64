from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from f09_memory.redaction import DEFAULT_PATTERNS, PLACEHOLDER_PREFIX, Redactor

PLACEHOLDER = re.compile(r"<REDACT:sha256-[0-9a-f]{12}>")
KEY = "redactor-test-key-0123456789"


def test_placeholders_are_keyed_hmac_and_deterministic_for_a_key() -> None:
    value = "4539148803436467"
    a = Redactor(["CARD"], key=KEY).redact_text(f"x {value}")
    assert a == Redactor(["CARD"], key=KEY).redact_text(f"x {value}")
    digest = hmac.new(KEY.encode(), value.encode(), hashlib.sha256).hexdigest()[:12]
    assert f"x <REDACT:sha256-{digest}>" == a
    assert a != Redactor(["CARD"], key=KEY + "2").redact_text(f"x {value}")
    assert a != Redactor(["CARD"]).redact_text(f"x {value}")  # unkeyed differs
    assert Redactor(["CARD"], key=KEY).keyed and not Redactor(["CARD"]).keyed


def test_without_a_key_placeholders_are_the_unkeyed_salted_sha256_of_before() -> None:
    digest = hashlib.sha256(b"pepper" + b"a@b.io").hexdigest()[:12]
    assert f"x <REDACT:sha256-{digest}>" == Redactor(["EMAIL"], salt="pepper").redact_text(
        "x a@b.io")
    assert Redactor(["EMAIL"]).redact_text("x a@b.io") != Redactor(
        ["EMAIL"], salt="pepper").redact_text("x a@b.io")


def test_the_salt_is_mixed_into_keyed_placeholders_too() -> None:
    assert Redactor(["EMAIL"], key=KEY).redact_text("a@b.io") != Redactor(
        ["EMAIL"], key=KEY, salt="s").redact_text("a@b.io")


def test_custom_patterns_apply_in_order_and_count() -> None:
    r = Redactor(["EMAIL", r"secret-\w+"])
    text, labels = r.redact("secret-abc and secret-xyz")
    assert ("CUSTOM1",) == labels
    assert 2 == len(PLACEHOLDER.findall(text))
    assert {"EMAIL": 0, "CUSTOM1": 2} == r.counts


def test_placeholders_are_not_redacted_again() -> None:
    once = f"{PLACEHOLDER_PREFIX}abcdef012345>"
    for patterns in ([r"<REDACT:[^>]+>"], [r"[0-9a-f]{6}"], [r"sha256-\w+"], [r"\d+"]):
        r = Redactor(patterns, key=KEY)
        assert (f"a {once} b", ()) == r.redact(f"a {once} b"), patterns


def test_a_later_pattern_never_rewrites_an_earlier_placeholder() -> None:
    r = Redactor(["EMAIL", "CARD", r"[0-9a-f]{4,}"], key=KEY)
    text, labels = r.redact("bob@example.com paid with 4111 1111 1111 1111, ref cafe42")
    email, card = r.placeholder("bob@example.com"), r.placeholder("4111 1111 1111 1111")
    assert f"{email} paid with {card}, ref {r.placeholder('cafe42')}" == text
    assert ("EMAIL", "CARD", "CUSTOM2") == labels
    assert r.redact(text) == (text, ())  # idempotent


def test_matches_names_the_patterns_without_counting_or_changing_anything() -> None:
    r = Redactor(["EMAIL", "CARD"], key=KEY, enabled=False)
    assert ("EMAIL",) == r.matches("npc-bob@example.com")
    assert () == r.matches("npc-7") == r.matches("")
    assert {"EMAIL": 0, "CARD": 0} == r.counts


def test_mode_off_keeps_text() -> None:
    assert ("a@b.io", ()) == Redactor(["EMAIL"], enabled=False).redact("a@b.io")


BATCH_TEXTS = [
    "plain words only.",
    "mail jane@example.org now",
    "card 4111 1111 1111 1111 and 4111-1111-1111-1111, iban DE89 3704 0044 0532 0130 00",
    "key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t at 10.0.0.1, Bearer mF_9.B5f-4.1JqM-Xz83kQ7aP",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "a-dash but no uuid, 42 digits",
    "Arabic-Indic digits \u0664\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661"
    "\u0661\u0661\u0661\u0661\u0661",
    "",
]


@pytest.mark.parametrize("patterns", [
    DEFAULT_PATTERNS, ("NUMSEQ16",), ("CARD", "PHONE", "SSN"), (r"jane\S*", "EMAIL"),
    (r"^plain",), (),
])
@pytest.mark.parametrize("start", range(len(BATCH_TEXTS)))
def test_redact_many_equals_redact_one_by_one(patterns: tuple[str, ...], start: int) -> None:
    texts = BATCH_TEXTS[start:] + BATCH_TEXTS[:start]
    one, many = Redactor(patterns, key=KEY), Redactor(patterns, key=KEY)
    expected = [one.redact(t) for t in texts]
    out, labels = many.redact_many(texts)
    assert expected == list(zip(out, labels or [()] * len(texts), strict=True))
    assert (labels is None) == all(not hits for _, hits in expected)
    assert one.counts == many.counts


def test_redact_many_of_a_clean_ascii_batch_runs_no_pattern() -> None:
    r = Redactor(DEFAULT_PATTERNS)
    texts = ["the smith at the well.", "rain over the mill!"]
    assert (texts, None) == r.redact_many(texts)
    assert ([], None) == r.redact_many([])
    assert (["a@b.cd"], None) == Redactor(("EMAIL",), enabled=False).redact_many(["a@b.cd"])


_PIECES = st.sampled_from([
    "a", "b@", "@x.io", "x.co", " ", "-", "4111", "1111 ", "0", "9", ".", "sk-", "é",
    "Ab3dEf6hIj9kLm2nOp5q", "eyJhbGciOi.", "Bearer ", "AKIA", "IOSFODNN7EXAMPLE", "DE89",
    "3704 ", "10.0.0.1", "ghp_", "_", "\u0664", "<REDACT:sha256-0123456789ab>"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_PIECES, max_size=20).map("".join), min_size=1, max_size=4))
def test_batches_equal_one_by_one_and_a_second_pass_keeps_every_placeholder(
        texts: list[str]) -> None:
    patterns = ("DEFAULT", "SSN", "PHONE")
    one, many = Redactor(patterns, key=KEY), Redactor(patterns, key=KEY)
    expected = [one.redact(t) for t in texts]
    out, labels = many.redact_many(texts)
    assert expected == list(zip(out, labels or [()] * len(texts), strict=True))
    for text in out:
        assert set(PLACEHOLDER.findall(text)) <= set(
            PLACEHOLDER.findall(Redactor(patterns, key=KEY).redact_text(text)))


def test_redact_many_counts_every_copy_of_a_repeated_text_like_redact_one_by_one() -> None:
    texts = ["mail a@b.example and c@d.example", "plain", "mail a@b.example and c@d.example",
             "card 4111 1111 1111 1111", "plain", "card 4111 1111 1111 1111"] * 2
    batch, single = Redactor(["EMAIL", "CARD"]), Redactor(["EMAIL", "CARD"])
    out, labels = batch.redact_many(texts)
    assert labels is not None
    assert [single.redact(t) for t in texts] == list(zip(out, labels, strict=True))
    assert batch.counts == single.counts and batch.counts["EMAIL"] == 8
    again = batch.redact_many(texts)  # every text remembered: the memo-only path
    assert (out, labels) == again
    assert [single.redact(t) for t in texts] == list(zip(*again, strict=True))
    assert batch.counts == single.counts and batch.counts["EMAIL"] == 16
    assert (out, labels) == batch.redact_many(texts, count=False)
    assert batch.counts["EMAIL"] == 16
    clean = ["plain", "plain"]
    assert (clean, None) == batch.redact_many(clean)  # remembered, nothing matched


def test_a_text_told_again_is_redacted_once_and_counted_each_time() -> None:
    from f09_memory.redaction import redactor as module

    r = Redactor(["EMAIL"])
    told = "Write to ana@example.org or bob@example.org."
    first = r.redact(told)
    assert first == r.redact(told) and first[0] == r.stored_form(told)
    texts, labels = r.redact_many([told, "nothing here", told])
    assert [first[0], "nothing here", first[0]] == texts
    assert [("EMAIL",), (), ("EMAIL",)] == labels
    assert 8 == r.counts["EMAIL"]  # two per telling; stored_form and matches count nothing
    assert ("EMAIL",) == r.matches(told) and 8 == r.counts["EMAIL"]
    r.redact_many([told], count=False)
    assert 8 == r.counts["EMAIL"]
    for i in range(module._MEMO_MAX + 5):  # the memo stays bounded
        r.redact(f"mail user{i}@example.org")
    assert len(r._memo) <= module._MEMO_MAX
    assert first == r.redact(told) and 10 + module._MEMO_MAX + 5 == r.counts["EMAIL"]


def test_a_batch_looks_up_the_texts_it_saw_and_gates_only_the_new_ones() -> None:
    from f09_memory.redaction import redactor as module

    r = Redactor(["EMAIL", "CARD"])
    mail, plain = "Mail ana@example.org now.", "Nothing private here."
    assert ([r.redact(mail)[0], plain], [("EMAIL",), ()]) == r.redact_many([mail, plain])
    assert 2 == r.counts["EMAIL"]  # one from redact, one from the batch
    batch = [plain, mail, "Card 4539148803436467 used.", mail]
    texts, labels = r.redact_many(batch)
    assert labels == [(), ("EMAIL",), ("CARD",), ("EMAIL",)]
    assert texts == [r.redact(t)[0] for t in batch] and "4539148803436467" not in texts[2]
    big = [f"user{i}@example.org" for i in range(module._MEMO_MAX + 1)]
    assert all(PLACEHOLDER_PREFIX in t for t in r.redact_many(big)[0])
    assert len(r._memo) <= module._MEMO_MAX  # a batch larger than the memo is not kept
    assert [r.redact(mail)[0]] == r.redact_many([mail], count=False)[0]


def test_the_memo_keeps_the_texts_told_lately_across_a_turnover() -> None:
    from f09_memory.redaction import redactor as module

    r = Redactor(["EMAIL"])
    told = "Write to ana@example.org."
    first = r.redact(told)
    for i in range(module._MEMO_MAX):  # the newer generation fills up and turns over
        r.redact_many([f"mail user{i}@example.org"])
    applied: list[str] = []
    apply = r._apply

    def counting(text: str, patterns: Any) -> Any:
        applied.append(text)
        return apply(text, patterns)

    r._apply = counting  # type: ignore[method-assign]
    assert first == r.redact(told)  # from the older generation, moved to the newer
    assert [first[0]] == r.redact_many([told])[0]
    assert [] == applied
    assert len(r._memo) <= module._MEMO_MAX and len(r._older) <= module._MEMO_MAX
    for i in range(2 * module._MEMO_MAX):  # two turnovers: it is redacted again
        r.redact(f"mail other{i}@example.org")
    assert first == r.redact(told) and told in applied
    assert 4 + 3 * module._MEMO_MAX == r.counts["EMAIL"]  # each telling counted


_PIECES = st.sampled_from([
    "4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111", "1234 5678 9012 3456 7",
    "DE89 3704 0044 0532 0130 00", "gb82west12345698765432", "10.0.0.1", "192.168.1.254",
    "+44 20 7946 0958", "+15551234567", "(555) 123.4567", "123-45-6789", "a@b.io",
    "123e4567-e89b-12d3-a456-426614174000",
    "\u0664\u0661\u0661\u0661 \u0661\u0661\u0661\u0661", "<REDACT:sha256-0123456789ab>",
    "agent-0012", "(3,4)", "step 12", " ", "-", ".", "..", "x", "DE", "42", "7", "0"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=12))
def test_the_digit_counts_and_gates_only_skip_patterns_that_replace_nothing(
        pieces: list[str]) -> None:
    """Every built-in (the opt-in ones too) applied without its digit count and gate gives
    the same text and labels: they are necessary conditions of a replacement."""
    text = "".join(pieces)
    redactor = Redactor(["DEFAULT", "PHONE", "SSN"], key=KEY)
    ungated = [p._replace(digits=0, gate=None) for p in redactor._compiled]
    assert redactor._apply(text, redactor._compiled) == redactor._apply(text, ungated)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_PIECES, max_size=6).map("".join), max_size=8))
def test_a_batch_redacts_each_text_as_alone(texts: list[str]) -> None:
    """The batch gates (the batch's digit count among them) only skip patterns that match
    no text of the batch: each text ends as redacted alone."""
    batch = Redactor(["DEFAULT", "PHONE", "SSN"], key=KEY).redact_many(texts)[0]
    alone = Redactor(["DEFAULT", "PHONE", "SSN"], key=KEY)
    assert batch == [alone.redact_text(text) for text in texts]


_GATE_PIECES = st.sampled_from([
    "4111", " 1111", "-1111", "1111", "9", "0", " ", "-", ".", "10.0.0.1", "DE89", "de89",
    "gb", "82", "123-45", "-6789", "+44 20", "+1555", "ab", "X", "\n", "\u0664\u0661\u0661\u0661",
    " \u0661\u0661\u0661\u0661", "\u00e9", "\ud800", "t=300000: ", "(11,23)"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_GATE_PIECES, max_size=10).map("".join), min_size=1, max_size=6))
def test_a_batch_gate_holds_on_the_joined_texts_whenever_a_text_s_gate_holds(
        texts: list[str]) -> None:
    """The contract a batch gate keeps: one of the texts passing its pattern's gate means
    the texts joined by newlines pass the batch gate (ASCII or not, lone surrogates too)."""
    joined = "\n".join(texts)
    for p in Redactor(["DEFAULT", "PHONE", "SSN"], key=KEY)._compiled:
        if p.gate is not None and p.batch_gate is not None and any(map(p.gate, texts)):
            assert p.batch_gate(joined), p.label


def test_a_clean_prompt_s_digits_leave_no_digit_pattern_to_run() -> None:
    """Timestamps, agent numbers and coordinates give a prompt many digits but no run a
    digit pattern needs: its batch gates skip them all, for every line at once."""
    r = Redactor(["DEFAULT", "PHONE", "SSN"], key=KEY)
    lines = ["Group 1 (25 events; about: sighting, agent-0002):"] + [
        f"- t={300_000 + 1_000 * i}: Saw agent-{i:04d} by the oak at ({i},{2 * i})."
        for i in range(25)]
    assert [p.label for p in r._batch_patterns(lines)] == ["UUID"]  # its gate: 4 dashes
    card = [*lines, "- t=1: Paid with 4111 1111 1111 1111."]
    assert {"CARD", "NUMSEQ16", "PHONE"} <= {p.label for p in r._batch_patterns(card)}


def test_redact_lines_gives_and_counts_what_redact_gives_and_keeps_no_line() -> None:
    lines = ["- t=5: mail ana@example.org", "", "- t=6: card 4111 1111 1111 1111",
             "- t=7: nothing", "- t=5: mail ana@example.org"]
    r, single = Redactor(DEFAULT_PATTERNS, key=KEY), Redactor(DEFAULT_PATTERNS, key=KEY)
    assert r.redact_lines(lines) == [single.redact_text(line) for line in lines]
    assert r.counts == single.counts and r.counts["EMAIL"] == 2 and r.counts["CARD"] == 1
    assert not r._memo and not r._older  # single-use lines are not remembered
    assert r.redact_lines([]) == [] and r.redact_lines(["a", "b"]) == ["a", "b"]
    off = Redactor(DEFAULT_PATTERNS, enabled=False)
    assert off.redact_lines(lines[:1]) == lines[:1] and not off.counts["EMAIL"]
