from __future__ import annotations

import re

import pytest

from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.redaction import (
    BUILTIN_PATTERNS,
    DEFAULT_PATTERNS,
    OPT_IN_PATTERNS,
    Redactor,
    compile_patterns,
)
from f09_memory.redaction.checks import luhn_valid

PLACEHOLDER = re.compile(r"<REDACT:sha256-[0-9a-f]{12}>")
KEY = "test-key-0123456789abcdef"
ALL = (*DEFAULT_PATTERNS, *OPT_IN_PATTERNS)

AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")


@pytest.mark.parametrize(("label", "secret"), [
    ("EMAIL", "jane.doe+npc@mail.example.org"),
    ("EMAIL", "john_doe@example.com"),
    ("EMAIL", "José.García@correo.example.es"),
    ("EMAIL", "用户@例子.广告"),
    ("EMAIL", "δοκιμή@παράδειγμα.δοκιμή"),
    ("EMAIL", "हिन्दी@उदाहरण.भारत"),
    ("EMAIL", "bob@xn--bcher-kva.example"),
    ("EMAIL", "ops@shop.xn--p1ai"),
    ("UUID", "123e4567-e89b-12d3-a456-426614174000"),
    ("UUID", "123E4567-E89B-12D3-A456-426614174000"),
    ("CARD", "4111111111111111"),
    ("CARD", "4111 1111 1111 1111"),
    ("CARD", "4111-1111-1111-1111"),
    ("CARD", "378282246310005"),  # Amex, 15 digits
    ("CARD", "3782 822463 10005"),
    ("CARD", "4222222222222"),  # 13 digits
    ("CARD", "6011 0009 9013 9424"),
    ("IBAN", "DE89370400440532013000"),
    ("IBAN", "DE89 3704 0044 0532 0130 00"),
    ("IBAN", "GB82 WEST 1234 5698 7654 32"),
    ("IBAN", "de89370400440532013000"),
    ("API_KEY", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"),
    ("API_KEY", "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AbCdEf_GhIj"),
    ("API_KEY", "sk-3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"),
    ("API_KEY", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("AWS_KEY", AWS_ID),
    ("GITHUB_TOKEN", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("GITHUB_TOKEN", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123"),
    ("JWT", JWT),
    ("IPV4", "192.168.1.20"),
    ("IPV4", "10.0.0.1"),
    ("PHONE", "+44 20 7946 0958"),
    ("PHONE", "(555) 123-4567"),
    ("PHONE", "555-123-4567"),
    ("PHONE", "+15551234567"),
    ("SSN", "123-45-6789"),
])
def test_each_builtin_replaces_its_secret(label: str, secret: str) -> None:
    r = Redactor(ALL, key=KEY)
    text, labels = r.redact(f"before {secret} after.")
    assert secret not in text
    assert (label,) == labels
    assert 1 == len(PLACEHOLDER.findall(text))
    assert text == f"before {r.placeholder(secret)} after."


def test_bearer_keeps_the_word_and_replaces_the_token() -> None:
    r = Redactor(DEFAULT_PATTERNS, key=KEY)
    token = "mF_9.B5f-4.1JqM-Xz83kQ7aP"
    text, labels = r.redact(f"Authorization: Bearer {token}")
    assert ("BEARER",) == labels
    assert f"Authorization: Bearer {r.placeholder(token)}" == text
    # a JWT after Bearer is replaced once, as a JWT
    text, labels = r.redact(f"authorization: bearer {JWT}")
    assert ("JWT",) == labels and 1 == len(PLACEHOLDER.findall(text))


def test_an_aws_key_id_and_the_secret_after_it_are_both_replaced() -> None:
    r = Redactor(DEFAULT_PATTERNS, key=KEY)
    for gap in (" ", ":", " secret=", ", aws_secret_access_key = "):
        text, labels = r.redact(f"creds {AWS_ID}{gap}{AWS_SECRET} end")
        assert ("AWS_KEY",) == labels
        assert f"creds {r.placeholder(AWS_ID)}{gap}{r.placeholder(AWS_SECRET)} end" == text
    text, _ = r.redact(f"{AWS_ID} is my key")
    assert f"{r.placeholder(AWS_ID)} is my key" == text


def test_several_cards_in_one_digit_run_are_each_replaced() -> None:
    r = Redactor(["CARD"], key=KEY)
    text, _ = r.redact("4111 1111 1111 1111 4012 8888 8888 1881 7")
    assert f"{r.placeholder('4111 1111 1111 1111')} {r.placeholder('4012 8888 8888 1881')} 7" \
        == text
    assert 2 == r.counts["CARD"]


def test_an_iban_followed_by_a_capitalised_word_is_cut_at_the_word() -> None:
    r = Redactor(["IBAN"], key=KEY)
    text, _ = r.redact("pay DE89 3704 0044 0532 0130 00 NOW")
    assert f"pay {r.placeholder('DE89 3704 0044 0532 0130 00')} NOW" == text


@pytest.mark.parametrize("clean", [
    "call 555-1234", "year 2024, 15 digits 123456789012345", "no at sign here",
    "version 1.2.3-beta", "4111 1111 1111 1112",  # Luhn fails, 16 digits: NUMSEQ16 only
    "meet @ the well", "bob@localhost", "x@y.z", "4111111111112",  # 13 digits, Luhn fails
    "the ring bearer of-the-northern-watchtower", "sk-the-long-way-round-to-the-mill",
    "risk-assessment-procedure-number", "GB82 WEST 1234 5698 7654 33",  # mod-97 fails
    "score 256.1.1.1", "1.2.3", "on 2024-01-15 at 10:30", "eyJ alone", "AKIA is a word",
    "ghp_short", "task-manager", "a 12 34 56 78 90 12 34 list",
])
def test_ordinary_text_is_left_alone_by_the_defaults(clean: str) -> None:
    labels = Redactor(DEFAULT_PATTERNS, key=KEY).redact(clean)[1]
    assert () == labels or ("NUMSEQ16",) == labels, labels
    if "1112" not in clean:
        assert () == labels


@pytest.mark.parametrize("clean", ["on 2024-01-15", "dated 15.01.2024", "room 12", "1 2 3 4 5",
                                   "year 1999", "ip 10.0.0.1"])
def test_phone_leaves_dates_and_short_numbers_alone(clean: str) -> None:
    assert () == Redactor(["PHONE"], key=KEY).redact(clean)[1]


@pytest.mark.parametrize("clean", ["000-12-3456", "666-12-3456", "900-12-3456", "123-00-4567",
                                   "123-45-0000", "123-45-67890", "123 45-6789"])
def test_ssn_needs_a_valid_shape(clean: str) -> None:
    assert () == Redactor(["SSN"], key=KEY).redact(clean)[1]


def test_numseq16_still_catches_long_runs_that_are_no_card() -> None:
    r = Redactor(DEFAULT_PATTERNS, key=KEY)
    assert ("NUMSEQ16",) == r.redact("account 9999-9999-9999-9999-99")[1]
    assert ("CARD",) == r.redact("account 4111-1111-1111-1111-22")[1]  # a card, then "-22"
    assert ("NUMSEQ16",) == r.redact("ref 12345678901234567890123")[1]


def test_phone_and_ssn_are_opt_in() -> None:
    text = "call +44 20 7946 0958 or ssn 123-45-6789"
    assert () == Redactor(DEFAULT_PATTERNS, key=KEY).redact(text)[1]
    assert ("SSN", "PHONE") == Redactor(("DEFAULT", "SSN", "PHONE"), key=KEY).redact(text)[1]
    assert not set(OPT_IN_PATTERNS) & set(DEFAULT_PATTERNS)
    assert set(BUILTIN_PATTERNS) == {*DEFAULT_PATTERNS, *OPT_IN_PATTERNS}


def test_default_expands_to_the_default_builtins_once() -> None:
    labels = [p.label for p in compile_patterns(["email", "DEFAULT", r"x+", " default "])]
    assert ["EMAIL", *DEFAULT_PATTERNS[1:], "CUSTOM2"] == labels


def test_builtin_names_are_case_insensitive() -> None:
    assert ["EMAIL", "UUID"] == [p.label for p in compile_patterns(["email", " uuid "])]


@pytest.mark.parametrize("bad", ["(", "x*", "", "   ", "(?P<n>a)(?P<n>b)"])
def test_invalid_patterns_are_rejected_without_echoing_them(bad: str) -> None:
    secret_bad = bad.replace("x", "(?:secret-bob)")
    with pytest.raises(MemoryEngineError) as info:
        compile_patterns(["EMAIL", secret_bad])
    assert ErrorCode.MEMORY_REDACTION_PATTERN_INVALID == info.value.code
    assert 1 == info.value.details["index"]
    assert "secret-bob" not in str(info.value) and "secret-bob" not in str(info.value.details)
    assert info.value.__cause__ is None


@pytest.mark.parametrize(("digits", "valid"), [
    ("4111111111111111", True), ("4111111111111112", False), ("79927398713", True),
    ("0", True), ("\u0664\u0661\u0661\u0661", False),
])
def test_luhn(digits: str, valid: bool) -> None:
    assert valid == luhn_valid(digits)


def test_each_gate_is_a_necessary_condition_of_its_pattern() -> None:
    samples = ["jane@example.org", "123e4567-e89b-12d3-a456-426614174000", JWT,
               "Bearer mF_9.B5f-4.1JqM-Xz83kQ7aP", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t",
               f"{AWS_ID} {AWS_SECRET}", "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
               "4111 1111 1111 1111", "DE89 3704 0044 0532 0130 00", "10.0.0.1",
               "+44 20 7946 0958", "123-45-6789", "1234567890123456789"]
    for p in compile_patterns(ALL):
        for sample in samples:
            if any(p.check is None or p.check(m) for m in p.regex.finditer(sample)):
                assert p.gate is not None and p.gate(sample), (p.label, sample)
                assert len(re.findall(r"\d", sample)) >= p.digits, (p.label, sample)
                joined = f"x\n{sample}\ny"
                assert p.batch_gate is None or p.batch_gate(joined), (p.label, sample)
                assert p.batch_gate is not None or p.digits
