"""Redactor: replaces private data with keyed placeholders before anything is stored."""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Sequence
from itertools import compress
from typing import TYPE_CHECKING, cast

from pydantic import SecretStr

from f09_memory.errors import ConfigInvalidError, InputInvalidError
from f09_memory.redaction.keys import (
    REDACTION_KEY_ENV,
    key_bytes,
    placeholder_digest,
    warn_unkeyed,
)
from f09_memory.redaction.patterns import CompiledPattern, compile_patterns

if TYPE_CHECKING:
    from f09_memory.config.config import MemoryConfig

__all__ = ["PLACEHOLDER_PREFIX", "PLACEHOLDER_RE", "Redactor"]

PLACEHOLDER_PREFIX = "<REDACT:sha256-"
"""How every placeholder the redactor writes begins."""
PLACEHOLDER_RE = re.compile(r"<REDACT:sha256-[0-9a-f]{12}>")
"""A placeholder the redactor wrote; text inside one is never redacted again."""
_SPLIT = re.compile(f"({PLACEHOLDER_RE.pattern})")
_DIGIT = re.compile(r"\d").search
_ASCII_DIGIT_BYTES = b"0123456789"
_MANY = 1 << 30
"""The digit count of a non-ASCII text that holds a digit (its digits are not counted)."""
_MEMO_MAX = 4096
"""Most texts in each of the memo's two generations: when the newer one is full it becomes
the older (the older is dropped), so the texts told lately stay remembered."""
_Redacted = tuple[str, tuple[str, ...], tuple[tuple[str, int], ...]]
"""A text's redaction: the text, the labels that matched, ``(label, replacements)``."""
_TEXT, _HITS, _MADE = (operator.itemgetter(i) for i in range(3))


def _digit_count(text: str) -> int:
    r"""The digits of ``text``, to compare with ``CompiledPattern.digits``.

    An ASCII text's are counted (one C-level pass); any other text gives :data:`_MANY` if it
    holds a digit of any script (``\d`` matches them all), else 0.
    """
    if text.isascii():
        return len(text) - len(text.encode().translate(None, _ASCII_DIGIT_BYTES))
    return _MANY if _DIGIT(text) is not None else 0


class Redactor:
    """Applies the configured patterns in order; compiled once at construction.

    A match becomes ``<REDACT:sha256-xxxxxxxxxxxx>``: the first 12 hex digits of
    HMAC-SHA256(key, salt + match) with a key, of sha256(salt + match) without one (see
    :mod:`f09_memory.redaction.keys`). Equal values stay equal after redaction (joins,
    filters and claims still work) without being readable. Placeholders are never redacted
    again: patterns only see the text between them. When ``enabled`` is False the text is
    returned unchanged (redaction mode OFF).

    Args:
        patterns: Built-in names or custom regexes (see ``compile_patterns``).
        key: The redaction key (``None``: unkeyed placeholders).
        salt: Mixed into every placeholder (deprecated: use ``key``; a salt is no secret).
        enabled: Redaction mode.

    Runtime complexity: one gate check per pattern, and one regex pass per pattern whose
    gate holds, O(len(text)) each.
    """

    def __init__(self, patterns: Iterable[str], *, key: str | bytes | SecretStr | None = None,
                 salt: str = "", enabled: bool = True) -> None:
        self.enabled = enabled
        self._key = key_bytes(key)
        self._salt = salt.encode("utf-8")
        self._compiled: tuple[CompiledPattern, ...] = compile_patterns(patterns)
        self.counts: dict[str, int] = {p.label: 0 for p in self._compiled}
        self._memo: dict[str, _Redacted] = {}
        """Texts redacted lately (the newer generation)."""
        self._older: dict[str, _Redacted] = {}
        """The generation before: a text found here moves to ``_memo``."""

    @classmethod
    def from_config(cls, config: MemoryConfig, *, enabled: bool | None = None) -> Redactor:
        """The redactor of ``config`` (patterns, key, salt; ``enabled``: its mode if None).

        Logs the unkeyed-placeholder warning (once per process) when the config has no key.

        Raises:
            ConfigInvalidError: The config names a key (``redaction_key_id``, as a snapshot's
                config does) but holds none.
        """
        secret = config.redaction_key
        if secret is None:
            if config.redaction_key_id is not None:
                raise ConfigInvalidError(
                    "this config was made with a redaction key (it has a redaction_key_id) "
                    "but holds none; give the same key: MemoryConfig(redaction_key=...), "
                    f"the {REDACTION_KEY_ENV} variable, or MemoryEngine.load(path, "
                    "redaction_key=...)", details={"field": "redaction_key"})
            warn_unkeyed()
        return cls(config.redact_patterns, key=secret, salt=config.redaction_salt,
                   enabled=config.redaction_mode if enabled is None else enabled)

    @property
    def keyed(self) -> bool:
        """Whether placeholders are keyed (a redaction key is set)."""
        return self._key is not None

    @property
    def labels(self) -> tuple[str, ...]:
        """Pattern labels in application order."""
        return tuple(p.label for p in self._compiled)

    def placeholder(self, value: str) -> str:
        """The placeholder of ``value`` (whatever the patterns and the mode)."""
        return f"{PLACEHOLDER_PREFIX}{placeholder_digest(value, self._key, self._salt)}>"

    def _replace(self, match: re.Match[str]) -> str:
        return self.placeholder(match.group(0))

    def _sub(self, pattern: CompiledPattern, text: str) -> tuple[str, int]:
        """Replace the matches of one pattern (or the parts its check picks) in ``text``."""
        check = pattern.check
        if check is None:
            return pattern.regex.subn(self._replace, text)
        replaced = 0

        def replace(match: re.Match[str]) -> str:
            nonlocal replaced
            value = match.group(0)
            spans = check(match)
            if not spans:
                return value
            replaced += len(spans)
            out: list[str] = []
            pos = 0
            for start, end in spans:
                out += (value[pos:start], self.placeholder(value[start:end]))
                pos = end
            out.append(value[pos:])
            return "".join(out)

        return pattern.regex.sub(replace, text), replaced

    def _sub_between(self, pattern: CompiledPattern, text: str) -> tuple[str, int]:
        """:meth:`_sub` of the text between placeholders (they are left as they are)."""
        parts = _SPLIT.split(text)
        total = 0
        for i in range(0, len(parts), 2):
            if parts[i]:
                parts[i], n = self._sub(pattern, parts[i])
                total += n
        return "".join(parts), total

    def redact(self, text: str) -> tuple[str, tuple[str, ...]]:
        """Return ``(redacted_text, labels_that_matched)``; labels empty when nothing matched."""
        if not self.enabled or not text:
            return text, ()
        red, hits, made = self._result(text, self._compiled)
        if made:
            self._count(made)
        return red, hits

    def _count(self, made: tuple[tuple[str, int], ...]) -> None:
        """Add one text's replacements (``(label, n)`` pairs) to the diagnostics counts."""
        counts = self.counts
        for label, n in made:
            counts[label] += n

    def _result(self, text: str, patterns: Sequence[CompiledPattern]) -> _Redacted:
        """:meth:`_apply` of ``text``, remembered: a text told many times is redacted once.

        ``patterns`` may leave out patterns that cannot match ``text`` (a batch gate that
        failed): the result is the same as with all of them, so it is remembered by the
        text alone.
        """
        done = self._recall(text)
        if done is None:
            done = self._apply(text, patterns)
            self._remember({text: done})
        return done

    def _recall(self, text: str) -> _Redacted | None:
        """The remembered redaction of ``text`` (moved to the newer generation), or None."""
        done = self._memo.get(text)
        if done is None:
            done = self._older.get(text)
            if done is not None:
                self._make_room(1)
                self._memo[text] = done
        return done

    def _make_room(self, n: int) -> None:
        """Turn the generations over when ``n`` more texts would overfill the newer one."""
        if len(self._memo) + n > _MEMO_MAX:
            self._older, self._memo = self._memo, {}

    def _remember(self, found: dict[str, _Redacted]) -> bool:
        """Keep ``found`` in the memo; False (nothing kept) for more texts than it holds.

        When ``found`` would take the newer generation past ``_MEMO_MAX`` texts, it becomes
        the older one and a new one starts.
        """
        if len(found) > _MEMO_MAX:
            return False
        self._make_room(len(found))
        self._memo.update(found)
        return True

    def _apply(self, text: str, patterns: Sequence[CompiledPattern]) -> _Redacted:
        """Apply ``patterns`` (each behind its gate) to ``text``.

        Returns the redacted text, the labels that matched and ``(label, replacements)``
        of each.
        """
        hits: list[str] = []
        made: list[tuple[str, int]] = []
        protect: bool | None = None  # whether the text holds a placeholder (when needed)
        digits = -1  # the text's digit count (_digit_count), taken when first needed
        for pattern in patterns:
            need = pattern.digits
            if need:
                if digits < 0:
                    # Of the text as given: a replacement only removes digits from what
                    # later patterns may match (placeholders are never matched again).
                    digits = _digit_count(text)
                if digits < need:
                    continue
            gate = pattern.gate
            if (gate is not None and not gate(text)) or pattern.regex.search(text) is None:
                continue
            if protect is None:
                protect = PLACEHOLDER_PREFIX in text
            text, n = (self._sub_between if protect else self._sub)(pattern, text)
            if n:
                hits.append(pattern.label)
                made.append((pattern.label, n))
                protect = True
        return text, tuple(hits), tuple(made)

    def redact_many(self, texts: Sequence[str], *, count: bool = True
                    ) -> tuple[list[str], list[tuple[str, ...]] | None]:
        """:meth:`redact` of each text, in order, with the gates checked once for the batch.

        Texts redacted before are looked up (:meth:`_result`); the others are redacted
        with the patterns their batch gates leave. A built-in's batch gate (and its need of
        a digit) is a necessary condition that holds on the texts joined whenever its gate
        holds for one of them, so a batch gate that fails rules the pattern out for every
        text (the usual batch: no ``@``, no ``-``, no digit, none of the key prefixes).

        Returns:
            The redacted texts, and each text's labels (``None`` when nothing matched).
            Counts are updated as :meth:`redact` one by one would (unless ``count`` is
            False: a text redacted only to be compared, e.g. with stored texts).
        """
        if not self.enabled or not texts:
            return list(texts), None
        known = list(map(self._memo.get, texts))
        if None in known:  # resolve the misses only; the rest stays C-level
            self._resolve(texts, known)
        done_all = cast("list[_Redacted]", known)
        redacted = list(map(_TEXT, done_all))
        hits_all = list(map(_HITS, done_all))
        if count:
            for made in filter(None, map(_MADE, done_all)):
                self._count(made)
        return redacted, hits_all if any(hits_all) else None

    def _resolve(self, texts: Sequence[str], known: list[_Redacted | None]) -> None:
        """Fill ``known``'s gaps (texts not in the newer memo), each text redacted once.

        A text of the older generation is recalled; the new ones are redacted with the
        patterns their batch gates leave and remembered.
        """
        recall = self._recall
        new: dict[str, None] = {}
        for i in compress(range(len(texts)), map(operator.not_, known)):
            text = texts[i]
            done = recall(text) if text else (text, (), ())
            if done is None:
                new[text] = None
            else:
                known[i] = done
        if not new:
            return
        active = self._batch_patterns(list(new))
        found = {text: self._apply(text, active) if active else (text, (), ()) for text in new}
        self._remember(found)  # kept unless the batch is larger than the memo
        for i in compress(range(len(texts)), map(operator.not_, known)):
            known[i] = found[texts[i]]

    def _batch_patterns(self, texts: Sequence[str]) -> list[CompiledPattern]:
        """The patterns whose batch gates hold on ``texts`` joined (the others match none).

        The batch's digit count bounds each text's, so a pattern needing more digits than
        the whole batch holds matches no text of it.
        """
        joined = "\n".join(texts)
        digits = -1  # taken when first needed, as in _apply
        active = []
        for p in self._compiled:
            if p.digits:
                if digits < 0:
                    digits = _digit_count(joined)
                if digits < p.digits:
                    continue
            if p.batch_gate is None or p.batch_gate(joined):
                active.append(p)
        return active

    def redact_lines(self, texts: list[str]) -> list[str]:
        """:meth:`redact_text` of each text, with the gates checked once for the batch.

        For texts made once (a summary prompt's lines; an outgoing view's texts, which
        ``RedactionMemo`` remembers itself): counted like :meth:`redact_many`, but neither
        looked up in the memo nor kept there, where they would only fill it.
        """
        if not self.enabled or not texts:
            return list(texts)
        active = self._batch_patterns(texts)
        if not active:
            return list(texts)
        apply = self._apply
        out: list[str] = []
        for text in texts:
            if not text:
                out.append(text)
                continue
            red, _, made = apply(text, active)
            if made:
                self._count(made)
            out.append(red)
        return out

    def stored_form(self, text: str) -> str:
        """``text`` as it would be stored, counting nothing (to compare with stored texts)."""
        if not self.enabled or not text:
            return text
        return self._result(text, self._compiled)[0]

    def redact_text(self, text: str) -> str:
        """Return only the redacted text (for prompts and log lines)."""
        return self.redact(text)[0]

    def matches(self, text: str) -> tuple[str, ...]:
        """Labels of the patterns that would replace something in ``text`` (mode ignored).

        Nothing is counted and nothing is returned of the text itself: this is how a value
        that must not hold private data (an agent id) is checked.
        """
        return self._result(text, self._compiled)[1] if text else ()

    def refuse_private(self, value: str, *, field: str) -> None:
        """Raise when redaction mode is ON and ``value`` (an id) holds private data.

        Ids (agent ids) are stored, logged and sent in events as given, so an id a
        pattern would redact is refused rather than stored raw or rewritten.

        Raises:
            InputInvalidError: A pattern matches ``value``; the message names the field
                and the pattern, never the value.
        """
        if not self.enabled:
            return
        found = self.matches(value)
        if found:
            raise InputInvalidError(
                f"{field} holds private data (it matches the redaction pattern {found[0]}); "
                "ids are stored, logged and sent in events as given, so use an opaque id "
                "instead (a counter, or a keyed hash the host keeps)",
                details={"field": field, "patterns": list(found)})
