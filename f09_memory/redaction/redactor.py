"""Redactor: replaces private data with hashed placeholders before anything is stored."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence

from f09_memory.redaction.patterns import CompiledPattern, compile_patterns

__all__ = ["PLACEHOLDER_PREFIX", "Redactor"]

PLACEHOLDER_PREFIX = "<REDACT:sha256-"
_DIGIT_RUN = re.compile(r"\d[\d \-]{14,}\d")  # 16+ digits with single separators sit in one


def _has_at(text: str) -> bool:
    return "@" in text


def _has_dash(text: str) -> bool:
    return "-" in text


def _has_digit_run(text: str) -> bool:
    return _DIGIT_RUN.search(text) is not None


_ASCII_DIGITS = "0123456789"


def _gate_on_batch(gate: Callable[[str], bool], joined: str) -> bool:
    """Whether ``gate`` may hold for some text of a batch (``joined``: the texts joined).

    The digit-run gate is a regex scan: on a batch it is replaced by a cheaper necessary
    condition (an ASCII batch without an ASCII digit has no digit run), and each text is
    still gated on its own when that condition holds.
    """
    if gate is _has_digit_run:
        return not joined.isascii() or any(d in joined for d in _ASCII_DIGITS)
    return gate(joined)


class Redactor:
    """Applies the configured patterns in order; compiled once at construction.

    A match becomes ``<REDACT:sha256-xxxxxxxxxxxx>`` (the first 12 hex digits of
    sha256(salt + match)), so equal values stay equal after redaction without being
    readable. Placeholders are never redacted again. When ``enabled`` is False the text is
    returned unchanged (redaction mode OFF).

    Runtime complexity: one regex pass per pattern, O(len(text)) each.
    """

    def __init__(self, patterns: Iterable[str], *, salt: str = "", enabled: bool = True) -> None:
        self.enabled = enabled
        self._salt = salt.encode("utf-8")
        self._compiled: tuple[CompiledPattern, ...] = compile_patterns(patterns)
        # A cheap necessary condition per built-in (a character it must contain, or a run
        # it must sit in), checked before its regex. Custom patterns always run.
        self._gates: dict[str, Callable[[str], bool]] = {
            "EMAIL": _has_at, "UUID": _has_dash, "NUMSEQ16": _has_digit_run}
        self.counts: dict[str, int] = {label: 0 for label, _ in self._compiled}

    @property
    def labels(self) -> tuple[str, ...]:
        """Pattern labels in application order."""
        return tuple(label for label, _ in self._compiled)

    def _placeholder(self, match: re.Match[str]) -> str:
        value = match.group(0)
        if value.startswith(PLACEHOLDER_PREFIX):
            return value
        digest = hashlib.sha256(self._salt + value.encode("utf-8")).hexdigest()[:12]
        return f"{PLACEHOLDER_PREFIX}{digest}>"

    def redact(self, text: str) -> tuple[str, tuple[str, ...]]:
        """Return ``(redacted_text, labels_that_matched)``; labels empty when nothing matched."""
        if not self.enabled or not text:
            return text, ()
        return self._apply(text, self._compiled)

    def _apply(self, text: str,
               patterns: Sequence[CompiledPattern]) -> tuple[str, tuple[str, ...]]:
        """Apply ``patterns`` (each behind its gate) to ``text``; count what matched."""
        hits: list[str] = []
        gates = self._gates
        for label, pattern in patterns:
            gate = gates.get(label)
            if (gate is not None and not gate(text)) or pattern.search(text) is None:
                continue
            text, n = pattern.subn(self._placeholder, text)
            if n:
                hits.append(label)
                self.counts[label] += n
        return text, tuple(hits)

    def redact_many(self, texts: Sequence[str]) -> tuple[list[str], list[tuple[str, ...]] | None]:
        """:meth:`redact` of each text, in order, with the gates checked once for the batch.

        A built-in's gate is a necessary condition that holds for a text whenever it holds
        for any substring, so a gate that fails on all the texts joined rules the pattern
        out for every one of them (the usual batch: no ``@``, no ``-``, no digit run).

        Returns:
            The redacted texts, and each text's labels (``None`` when nothing matched).
            Counts are updated as :meth:`redact` one by one would.
        """
        if not self.enabled or not texts:
            return list(texts), None
        joined = "\n".join(texts)
        gates = self._gates
        active: list[CompiledPattern] = []
        for label, pattern in self._compiled:
            gate = gates.get(label)
            if gate is None or _gate_on_batch(gate, joined):
                active.append((label, pattern))
        if not active:
            return list(texts), None
        out: list[str] = []
        labels: list[tuple[str, ...]] = []
        any_hit = False
        for text in texts:
            hits: tuple[str, ...] = ()
            if text:
                text, hits = self._apply(text, active)
            out.append(text)
            labels.append(hits)
            any_hit = any_hit or bool(hits)
        return out, labels if any_hit else None

    def redact_text(self, text: str) -> str:
        """Return only the redacted text (for prompts and log lines)."""
        return self.redact(text)[0]
