"""Checks a regular expression cannot make: which parts of a built-in's match to redact.

A built-in pattern finds candidates; its check (a ``SpanCheck``) looks at each match and
returns the spans to replace, relative to the match start (empty: leave the match alone).
So a 16-digit run is a card only when its Luhn sum holds, an IBAN only when its mod-97
check holds, and ``Bearer`` keeps its word while only the token after it is replaced.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "SpanCheck",
    "aws_spans",
    "bearer_spans",
    "card_spans",
    "iban_spans",
    "looks_random",
    "luhn_valid",
    "phone_spans",
    "prefixed_key_spans",
]

SpanCheck = Callable[[re.Match[str]], Sequence[tuple[int, int]]]
"""``(match) -> spans``: the ``(start, end)`` parts of the match to replace, relative to
``match.start()``, in order and not overlapping; empty to keep the match as it is."""

_DIGIT_GROUP = re.compile(r"\d+")
_CARD_MIN, _CARD_MAX = 13, 19
_PREFIX_SUMS_FROM = 64  # digits in a match from which windows are checked by prefix sums
_IBAN_MIN, _IBAN_MAX = 15, 34
_DATE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}")
_PHONE_MIN, _PHONE_MAX = 7, 15


def luhn_valid(digits: str) -> bool:
    """Whether ``digits`` (decimal digits only, any script) pass the Luhn checksum.

    Runtime complexity: O(len(digits)).
    """
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


class _LuhnSums:
    """Prefix sums over a digit sequence giving any window's Luhn total in O(1).

    From a window's last digit leftwards every second digit is doubled (minus 9 above 9):
    the doubled ones are those whose index has the parity of the window's end.
    """

    __slots__ = ("_doubled", "_plain")

    def __init__(self, digits: str) -> None:
        if digits.isascii():
            d = np.frombuffer(digits.encode("ascii"), dtype=np.uint8).astype(np.int64) - 48
        else:  # other scripts' decimal digits
            d = np.array([int(ch) for ch in digits], dtype=np.int64)
        dd = np.where(d > 4, 2 * d - 9, 2 * d)
        odd = (np.arange(len(d)) % 2).astype(np.bool_)
        zero = np.zeros(1, dtype=np.int64)

        def prefix(values: NDArray[np.int64]) -> list[int]:
            out: list[int] = np.concatenate([zero, np.cumsum(values)]).tolist()
            return out

        # by index parity: prefix sums of the digits, and of their doubled values
        self._plain = (prefix(np.where(odd, 0, d)), prefix(np.where(odd, d, 0)))
        self._doubled = (prefix(np.where(odd, 0, dd)), prefix(np.where(odd, dd, 0)))

    def valid(self, a: int, b: int) -> bool:
        """Whether digits ``[a, b)`` pass the Luhn checksum."""
        q = b % 2
        total = (self._plain[1 - q][b] - self._plain[1 - q][a]
                 + self._doubled[q][b] - self._doubled[q][a])
        return total % 10 == 0


def card_spans(match: re.Match[str]) -> Sequence[tuple[int, int]]:
    """Card numbers inside a digit-group match: 13-19 digits whose Luhn sum holds.

    A match of separated groups (``4111 1111 1111 1111``) may hold several numbers or
    extra groups around one: windows of whole groups are tried left to right, the longest
    valid window at each start first. Runtime complexity: O(digits) (a window is checked
    in O(1); a start has at most 7 windows of 13-19 digits).
    """
    value = match.group(0)
    groups = [(m.start(), m.end()) for m in _DIGIT_GROUP.finditer(value)]
    # cum[k]: digits in groups[:k]; windows of more than _CARD_MAX digits are skipped.
    cum = list(itertools.accumulate((e - s for s, e in groups), initial=0))
    digits = "".join(value[s:e] for s, e in groups)
    valid: Callable[[int, int], bool] = (
        _LuhnSums(digits).valid if len(digits) > _PREFIX_SUMS_FROM
        else lambda a, b: luhn_valid(digits[a:b]))
    spans: list[tuple[int, int]] = []
    i, n = 0, len(groups)
    while i < n:
        found = None
        last = bisect.bisect_right(cum, cum[i] + _CARD_MAX) - 2  # the widest window's end
        for j in range(min(last, n - 1), i - 1, -1):
            if cum[j + 1] - cum[i] < _CARD_MIN:
                break
            if valid(cum[i], cum[j + 1]):
                found = j
                break
        if found is None:
            i += 1
            continue
        spans.append((groups[i][0], groups[found][1]))
        i = found + 1
    return spans


def _iban_valid(text: str) -> bool:
    compact = text.replace(" ", "").upper()
    if not _IBAN_MIN <= len(compact) <= _IBAN_MAX:
        return False
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in moved)
    return int(number) % 97 == 1


def iban_spans(match: re.Match[str]) -> Sequence[tuple[int, int]]:
    """The IBAN of a match: the whole match, or its longest prefix ending at a space.

    The part kept is the longest whose ISO 13616 mod-97 check holds (a grouped IBAN may be
    followed by an unrelated word in capitals).
    """
    value = match.group(0)
    ends = [len(value)] + [i for i in range(len(value) - 1, 0, -1) if value[i] == " "]
    for end in ends:
        if _iban_valid(value[:end]):
            return ((0, end),)
    return ()


def looks_random(token: str) -> bool:
    """Whether ``token`` looks machine-made: a digit, or upper case after the first letter.

    Secrets (keys, tokens) almost always pass; ordinary words and hyphenated phrases do not.
    """
    return any(ch.isdigit() for ch in token) or any(ch.isupper() for ch in token[1:])


def prefixed_key_spans(match: re.Match[str]) -> Sequence[tuple[int, int]]:
    """The whole match when its body (group ``body``) looks random (see :func:`looks_random`)."""
    return ((0, match.end() - match.start()),) if looks_random(match.group("body")) else ()


def bearer_spans(match: re.Match[str]) -> Sequence[tuple[int, int]]:
    """Only the token of ``Bearer <token>`` (group ``token``), when it looks random."""
    if not looks_random(match.group("token")):
        return ()
    base = match.start()
    return ((match.start("token") - base, match.end() - base),)


def aws_spans(match: re.Match[str]) -> Sequence[tuple[int, int]]:
    """The access key id and, when one follows it, the 40-character secret (gap kept)."""
    base = match.start()
    spans = [(0, match.end("id") - base)]
    if match.group("secret") is not None:
        spans.append((match.start("secret") - base, match.end("secret") - base))
    return spans


def phone_spans(match: re.Match[str]) -> Sequence[tuple[int, int]]:
    """The match when it holds 7-15 digits and is not a date (``2024-01-15``, ``15.01.2024``)."""
    value = match.group(0)
    digits = sum(ch.isdigit() for ch in value)
    if not _PHONE_MIN <= digits <= _PHONE_MAX or _DATE.fullmatch(value) is not None:
        return ()
    return ((0, len(value)),)
