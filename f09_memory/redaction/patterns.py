"""Built-in redaction patterns and the one place patterns are compiled.

Built-ins on by default (``DEFAULT_PATTERNS``, the default of ``MemoryConfig.redact_patterns``):

- ``EMAIL``: ``local@domain.tld``, non-ASCII local parts and IDN domains included;
- ``UUID``: 8-4-4-4-12 hex groups;
- ``JWT``: three base64url segments starting ``eyJ``;
- ``BEARER``: the token after ``Bearer`` (the word is kept);
- ``API_KEY``: ``sk-…`` / ``sk-ant-…`` / ``sk-proj-…`` keys and Stripe ``sk_live_…`` keys;
- ``AWS_KEY``: ``AKIA…`` / ``ASIA…`` access key ids, and a 40-character secret following one;
- ``GITHUB_TOKEN``: ``ghp_…``, ``gho_…``, ``ghu_…``, ``ghs_…``, ``ghr_…``, ``github_pat_…``;
- ``IBAN``: an IBAN (grouped by four or not) whose mod-97 check holds;
- ``CARD``: 13-19 digits (plain, spaced or dashed groups) whose Luhn checksum holds;
- ``NUMSEQ16``: any run of 16 or more digits, single spaces or dashes allowed between digits
  (account numbers; kept in the defaults so nothing redacted before is stored raw now);
- ``IPV4``: a dotted-quad IPv4 address.

Opt-in built-ins (``OPT_IN_PATTERNS``; game text is full of digit groups): ``SSN`` (US
``123-45-6789``) and ``PHONE`` (7-15 digits in groups, or ``+`` and digits; dates are left
alone).
``DEFAULT`` in a pattern list stands for every default built-in, so
``("DEFAULT", "PHONE")`` adds phone numbers to the defaults. Patterns apply in list order.

Any other entry is a custom regular expression. A pattern that does not compile, or that
matches the empty string (it would redact everywhere), is rejected with
``MEMORY_REDACTION_PATTERN_INVALID``; the message names the pattern's index, never its text.

Each built-in carries a cheap necessary condition (its gate: a character or short run it
must contain) checked before its regex, and a check for what a regex cannot decide (Luhn,
mod-97, "looks random"): see :mod:`f09_memory.redaction.checks`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

from f09_memory.errors import RedactionPatternInvalidError
from f09_memory.redaction.checks import (
    SpanCheck,
    aws_spans,
    bearer_spans,
    card_spans,
    iban_spans,
    phone_spans,
    prefixed_key_spans,
)

__all__ = [
    "BUILTIN_PATTERNS",
    "DEFAULT_PATTERNS",
    "OPT_IN_PATTERNS",
    "CompiledPattern",
    "compile_patterns",
]

Gate = Callable[[str], object]
"""A necessary condition on text (truthy when the pattern may match)."""

# E-mail: ASCII letters, digits and ._%+- or any non-ASCII character (not whitespace) in the
# local part;
# domain labels of ASCII letters, digits and "-" or any non-ASCII character (IDN); a
# top-level domain of letters (or punycode).
_LOCAL = r"[^\x00-\x24\x26-\x2a\x2c\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f\s]"
_LABEL = r"[^\x00-\x2c\x2e\x2f\x3a-\x40\x5b-\x60\x7b-\x7f\s]"
_TLD = r"[^\x00-\x40\x5b-\x60\x7b-\x7f\s]"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_B64URL = r"[A-Za-z0-9_\-]"

BUILTIN_PATTERNS: dict[str, str] = {
    "EMAIL": rf"(?<!{_LOCAL}){_LOCAL}+@(?:{_LABEL}+\.)+(?:xn--[A-Za-z0-9\-]+|{_TLD}{{2,}})",
    "UUID": r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
    "JWT": rf"(?<!{_B64URL})eyJ{_B64URL}{{5,}}\.{_B64URL}{{2,}}\.{_B64URL}*",
    "BEARER": r"\b(?:[Bb]earer|BEARER)\s+(?P<token>[A-Za-z0-9\-._~+/]{16,}=*)",
    "API_KEY": r"(?<![A-Za-z0-9_\-])(?:sk-(?:ant-|proj-)?|[sr]k_(?:live|test)_)"
               r"(?P<body>[A-Za-z0-9_\-]{16,})",
    "AWS_KEY": r"(?<![A-Za-z0-9])(?P<id>(?:AKIA|ASIA)[A-Z0-9]{16})(?![A-Za-z0-9])"
               r"(?:[^A-Za-z0-9/+]{1,4}(?:[A-Za-z_]{1,30}[^A-Za-z0-9/+]{1,4})?"
               r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=]))?",
    "GITHUB_TOKEN": r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}"
                    r"|github_pat_[A-Za-z0-9_]{22,255})",
    "CARD": r"(?<!\d)(?:\d{13,19}|\d{2,6}(?:[ \-]\d{2,6})+)(?!\d)",
    "NUMSEQ16": r"(?<!\d)\d(?:[ \-]?\d){15,}(?!\d)",
    "IBAN": r"(?<![A-Za-z0-9])(?:[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?"
            r"|[a-z]{2}[0-9]{2}[a-z0-9]{11,30})(?![A-Za-z0-9])",
    "IPV4": rf"(?<![0-9.])(?:{_OCTET}\.){{3}}{_OCTET}(?![0-9]|\.[0-9])",
    "PHONE": r"(?<![\w+(])(?:\+[0-9]{7,15}|(?:\+[0-9]{1,3}[ \-.]?)?(?:\([0-9]{1,4}\)[ \-.]?)?"
             r"[0-9]{2,5}(?:[ \-.][0-9]{2,5}){1,4})(?![0-9])",
    "SSN": r"(?<![0-9\-])(?!000|666|9[0-9]{2})[0-9]{3}([\- ])(?!00)[0-9]{2}\1(?!0000)[0-9]{4}"
           r"(?![0-9\-])",
}
"""Every built-in by name: its regular expression (see the module docstring)."""

DEFAULT_PATTERNS: tuple[str, ...] = (
    "EMAIL", "UUID", "JWT", "BEARER", "API_KEY", "AWS_KEY", "GITHUB_TOKEN", "IBAN", "CARD",
    "NUMSEQ16", "IPV4")
"""The built-ins on by default, in the order they are applied."""

OPT_IN_PATTERNS: tuple[str, ...] = ("SSN", "PHONE")
"""Built-ins off by default: name them in ``MemoryConfig.redact_patterns`` to use them."""

_DEFAULT_NAME = "DEFAULT"


def _search(regex: str) -> Gate:
    return re.compile(regex).search


def _digit_run(regex: str) -> Gate:
    r"""A gate of ``regex`` written with ``0-9``, which an ASCII text is searched with.

    Any other text is searched with ``0-9`` read as ``\d`` (any script's digits, as the
    patterns ``CARD`` and ``NUMSEQ16`` take them). The ASCII classes scan about twice as
    fast (the regex engine skips to a listed character; it tries every position for ``\d``).
    """
    ascii_search = re.compile(regex).search
    any_search = re.compile(regex.replace("0-9", r"\d")).search
    return lambda t: (ascii_search(t) if t.isascii() else any_search(t)) is not None


_IPV4_PAIR = re.compile(r"[0-9]\.[0-9]").search


def _ipv4_gate(text: str) -> bool:
    return text.count(".") >= 3 and _IPV4_PAIR(text) is not None


_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_SHAPE = bytes.maketrans(b"0123456789" + _LETTERS + b" -", b"0" * 10 + b"a" * 52 + b"--")
"""A text's shape: ASCII digits -> ``0``, letters -> ``a``, space and ``-`` -> ``-``."""
_RUN_SHAPE = bytes.maketrans(b"0123456789 -", b"0" * 12)
"""A digit run's shape: ASCII digits, space and ``-`` -> ``0``."""


def _shape_gate(needles: tuple[bytes, ...], table: bytes, other: Gate | None = None) -> Gate:
    """A batch gate: one of ``needles`` in the texts' UTF-8 bytes mapped by ``table``.

    A byte of a non-ASCII character maps to itself, so the test holds for the joined texts
    whenever it holds for one of them; ``other`` (if given) takes non-ASCII batches
    instead (a pattern that reads any script's digits there). C speed: one translation and
    a substring search per needle.
    """
    def gate(joined: str) -> bool:
        if other is not None and not joined.isascii():
            return bool(other(joined))
        shape = joined.encode("utf-8", "surrogatepass").translate(table)
        return any(needle in shape for needle in needles)
    return gate


# Per built-in: (the fewest digits a replacement holds, gate on one text, gate on texts
# joined by "\n", check). A gate is a necessary condition of a replacement (after the digit
# count, which the Redactor takes once per text, and the digit test once per batch); a
# batch gate holds on the joined texts whenever the gate holds on one of them. Gates are
# substring tests where they can be (a rare character first: one memchr over a batch),
# regex scans only on texts with enough digits: a card is 13-19 digits (``card_spans``), a
# NUMSEQ16 run 16, a dotted quad 4, an IBAN's check digits 2, the shortest phone number
# the regex takes 4 (two groups of two, split by a separator), an SSN 9. A digit
# pattern's batch gate looks for what its gate scans for in the batch's shape (13 or 16
# run characters in a row, two letters and two digits, ...): a batch of clean texts with
# digits (timestamps, coordinates: most frames, most summary prompts) skips the pattern
# for all its texts at once.
_CARD_GATE = _digit_run(r"[0-9][0-9 \-]{11,}[0-9]")
_NUMSEQ_GATE = _digit_run(r"[0-9][0-9 \-]{14,}[0-9]")
_BUILTIN_PARTS: dict[str, tuple[int, Gate, Gate | None, SpanCheck | None]] = {
    "EMAIL": (0, lambda t: "@" in t, lambda j: "@" in j, None),
    "UUID": (0, lambda t: t.count("-") >= 4, lambda j: "-" in j, None),  # 8-4-4-4-12
    "JWT": (0, lambda t: "eyJ" in t, lambda j: "J" in j and "eyJ" in j, None),
    "BEARER": (0, lambda t: "earer" in t or "EARER" in t,
               lambda j: "earer" in j or "EARER" in j, bearer_spans),
    "API_KEY": (0, lambda t: "sk-" in t or "k_live_" in t or "k_test_" in t,
                lambda j: ("-" in j and "sk-" in j) or (
                    "_" in j and ("k_live_" in j or "k_test_" in j)), prefixed_key_spans),
    "AWS_KEY": (0, lambda t: "AKIA" in t or "ASIA" in t,
                lambda j: "IA" in j and ("AKIA" in j or "ASIA" in j), aws_spans),
    "GITHUB_TOKEN": (0, lambda t: "_" in t and "gh" in t,
                     lambda j: "_" in j and "gh" in j, None),
    "CARD": (13, _CARD_GATE, _shape_gate((b"0" * 13,), _RUN_SHAPE, _CARD_GATE), card_spans),
    "NUMSEQ16": (16, _NUMSEQ_GATE, _shape_gate((b"0" * 16,), _RUN_SHAPE, _NUMSEQ_GATE), None),
    # Two letters then two digits, found from a digit (the rarer class leads the scan).
    "IBAN": (2, _search(r"[0-9](?<=[A-Za-z]{2}[0-9])[0-9]"), _shape_gate((b"aa00",), _SHAPE),
             iban_spans),
    "IPV4": (4, _ipv4_gate, _shape_gate((b"0.0",), _SHAPE), None),
    # Digit groups split by a space, "-" or ".", or a "+" and a digit (the regex's two forms)
    "PHONE": (4, _search(r"[0-9][ \-.][0-9]|\+[0-9]"),
              _shape_gate((b"0-0", b"0.0", b"+0"), _SHAPE), phone_spans),
    "SSN": (9, _search(r"[0-9]{3}[\- ][0-9]{2}"), _shape_gate((b"000-00",), _SHAPE), None),
}


class CompiledPattern(NamedTuple):
    """One compiled pattern, as the Redactor applies it.

    Attributes:
        label: The built-in name, or ``CUSTOM<i>`` (``i``: the entry's index in the list).
        regex: The compiled regular expression.
        digits: The fewest digits a replacement holds (0: none needed). Tested once per
            text, before the gate: an ASCII text's digits are counted, any other text is
            only tested for a digit (its other scripts' digits are not counted).
        gate: A necessary condition on one text, checked before the regex (``None``:
            always run, as for custom patterns).
        batch_gate: The same condition on several texts joined by newlines (``None``:
            none beyond ``digit``).
        check: Which parts of a match to replace (``None``: the whole match).
    """

    label: str
    regex: re.Pattern[str]
    digits: int = 0
    gate: Gate | None = None
    batch_gate: Gate | None = None
    check: SpanCheck | None = None


def _builtin(name: str) -> CompiledPattern:
    digits, gate, batch_gate, check = _BUILTIN_PARTS[name]
    return CompiledPattern(name, re.compile(BUILTIN_PATTERNS[name]), digits, gate, batch_gate,
                           check)


def compile_patterns(names_or_regexes: Iterable[str]) -> tuple[CompiledPattern, ...]:
    """Compile built-in names and custom regexes, in the given order, once.

    Args:
        names_or_regexes: Built-in names (case-insensitive; ``DEFAULT`` for every default
            built-in) or regular expressions.

    Returns:
        The compiled patterns; a built-in named twice is applied once, where first named.

    Raises:
        RedactionPatternInvalidError: An entry is empty, or a custom pattern does not
            compile or matches "" (the message names the entry's index, not its text).
    """
    out: dict[str, CompiledPattern] = {}
    for i, entry in enumerate(names_or_regexes):
        if not isinstance(entry, str) or not entry.strip():
            raise RedactionPatternInvalidError(
                f"redaction pattern #{i} is empty: give a built-in name "
                f"({', '.join(BUILTIN_PATTERNS)}, or DEFAULT) or a non-empty regular "
                "expression",
                details={"index": i},
            )
        key = entry.strip().upper()
        if key == _DEFAULT_NAME:
            for name in DEFAULT_PATTERNS:
                out.setdefault(name, _builtin(name))
            continue
        if key in BUILTIN_PATTERNS:
            out.setdefault(key, _builtin(key))
            continue
        try:
            compiled = re.compile(entry)
        except re.error as exc:
            raise RedactionPatternInvalidError(
                f"redaction pattern #{i} does not compile ({exc.msg} at position {exc.pos}); "
                "fix the regular expression or use a built-in name",
                details={"index": i, "reason": exc.msg, "position": exc.pos},
            ) from None
        if compiled.fullmatch("") is not None:
            raise RedactionPatternInvalidError(
                f"redaction pattern #{i} matches the empty string and would redact "
                "everywhere; require at least one character (e.g. use + instead of *)",
                details={"index": i},
            )
        out[f"CUSTOM{i}"] = CompiledPattern(f"CUSTOM{i}", compiled)
    return tuple(out.values())
