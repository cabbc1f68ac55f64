"""Heuristic importance: emotion intensity, novelty and flags, when the caller gives none."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from itertools import compress
from typing import Any

from f09_memory.canonical import text_digest64
from f09_memory.config.config import ImportanceSettings

__all__ = ["ImportanceModel", "Vocabulary", "boosted_importance"]

_WORD = re.compile(r"[a-z0-9']+")
_MASK64 = (1 << 64) - 1
_WORD_BYTES = b"abcdefghijklmnopqrstuvwxyz0123456789'"
_LOWER_WORDS = bytes(c + 32 if 65 <= c <= 90 else c if c in _WORD_BYTES else 32 for c in range(256))
"""``bytes.translate`` table of ASCII text: upper case to lower, every other character that
ends a content word to a space (its ``split()`` gives the runs of ``[a-z0-9']``)."""
_LOWER_WORDS_NUL = _LOWER_WORDS[:0] + b"\0" + _LOWER_WORDS[1:]
"""``_LOWER_WORDS`` keeping NUL, which separates the texts of a batch."""


def _ascii_words(text: str) -> list[str]:
    """The runs of ``[a-z0-9']`` of lower-cased ASCII ``text`` (``_WORD.findall``, faster)."""
    return text.encode().translate(_LOWER_WORDS).decode().split()


class Vocabulary:
    """An agent's recently seen words (the novelty reference), bounded by two generations.

    Words go into the current generation; when it holds ``max_size // 2`` words it becomes
    the previous one and a new generation starts, so between ``max_size // 2`` and
    ``max_size`` of the most recent distinct words are remembered. Set operations only.

    Each generation also keeps an order-independent 64-bit sum of its words' digests, so
    :meth:`digest` (part of the engine's state hash) costs O(1); words are interned, so
    agents that share words share their strings.

    Runtime complexity: ``observe`` is O(distinct words of the text).
    """

    __slots__ = ("_cur_sum", "_current", "_prev_sum", "_previous", "journal", "max_size")

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self.journal: tuple[list[tuple[Any, ...]], str] | None = None
        """Durable mode: ``(effects, agent_id)``; each observation is appended as an effect."""
        self._current: set[str] = set()
        self._previous: set[str] = set()
        self._cur_sum = 0
        self._prev_sum = 0

    def __len__(self) -> int:
        return len(self._current | self._previous)

    def observe(self, words: set[str]) -> float:
        """Record ``words`` and return the share of them not seen before (0.0 for none)."""
        if not words:
            return 0.0
        if self.journal is not None:
            self.journal[0].append(("vocab.observe", self.journal[1], sorted(words)))
        cur = self._current
        fresh = words - cur
        new = len(fresh - self._previous)
        if fresh:
            self._add(fresh)
            if len(cur) >= self.max_size // 2:
                self._previous, self._prev_sum = cur, self._cur_sum
                self._current, self._cur_sum = set(), 0
        return new / len(words)

    def observe_words(self, words: set[str], min_len: int = 1) -> None:
        """:meth:`observe` without computing the novelty share.

        Words shorter than ``min_len`` are left out (filtered after the set difference:
        few words are new).
        """
        fresh = words - self._current
        if fresh and min_len > 1:
            fresh = set(compress(fresh, map(min_len.__le__, map(len, fresh))))
        if self.journal is not None:
            kept = words if min_len <= 1 else set(compress(
                words, map(min_len.__le__, map(len, words))))
            if kept:
                self.journal[0].append(("vocab.observe", self.journal[1], sorted(kept)))
        if fresh:
            cur = self._current
            self._add(fresh)
            if len(cur) >= self.max_size // 2:
                self._previous, self._prev_sum = cur, self._cur_sum
                self._current, self._cur_sum = set(), 0

    def observe_union(self, words: set[str], min_len: int = 1) -> bool:
        """Record the words of several texts at once, if that ends as observing each would.

        Observing texts one by one only differs from observing the union of their words
        when a generation fills up on the way; then nothing is recorded and False is
        returned (the caller observes the texts one by one). Words shorter than
        ``min_len`` are left out (filtered after the set difference: few are new).
        """
        fresh = words - self._current
        if fresh and min_len > 1:
            fresh = set(compress(fresh, map(min_len.__le__, map(len, fresh))))
        if len(self._current) + len(fresh) >= self.max_size // 2:
            return False
        if fresh:
            if self.journal is not None:
                kept = words if min_len <= 1 else compress(
                    words, map(min_len.__le__, map(len, words)))
                self.journal[0].append(("vocab.union", self.journal[1], sorted(kept)))
            self._add(fresh)
        return True

    def _add(self, fresh: set[str]) -> None:
        """Add words not in the current generation to it (and to its digest sum)."""
        cur = self._current
        total = self._cur_sum
        intern = sys.intern
        for word in fresh:
            cur.add(intern(word))
            total += text_digest64(word)
        self._cur_sum = total & _MASK64

    def digest(self) -> tuple[int, int, int, int]:
        """``(previous sum, current sum, previous size, current size)``: equal for equal states."""
        return (self._prev_sum, self._cur_sum, len(self._previous), len(self._current))

    def get_state(self) -> list[list[str]]:
        """``[previous, current]`` generations as sorted lists."""
        return [sorted(self._previous), sorted(self._current)]

    def set_state(self, state: list[list[str]]) -> None:
        """Restore from :meth:`get_state`."""
        self._previous = {sys.intern(str(w)) for w in state[0]}
        self._current = {sys.intern(str(w)) for w in state[1]}
        self._prev_sum = sum(map(text_digest64, self._previous)) & _MASK64
        self._cur_sum = sum(map(text_digest64, self._current)) & _MASK64


class ImportanceModel:
    """Scores a text 0..1 from emotion intensity, novelty to the agent, and the flag bit.

    ``importance = clamp01(base + emotion_weight*emotion + novelty_weight*novelty +
    flag_weight*flagged)``; see :class:`~f09_memory.config.ImportanceSettings`.
    """

    def __init__(self, settings: ImportanceSettings) -> None:
        self.settings = settings
        self._lexicon = frozenset(settings.emotion_lexicon)
        self._content_word = re.compile(rf"[a-z0-9']{{{settings.novelty_min_word_len},}}")
        self._min_len = settings.novelty_min_word_len

    def words(self, text: str) -> set[str]:
        """Distinct lower-cased words of ``text`` with >= ``novelty_min_word_len`` chars.

        ASCII text is split with one ``bytes.translate`` (the same words as the regex,
        about twice as fast).
        """
        if text.isascii():
            return self._long(set(_ascii_words(text)))
        return set(self._content_word.findall(text.lower()))

    def _long(self, words: set[str]) -> set[str]:
        """``words`` with at least ``novelty_min_word_len`` characters."""
        short = self._min_len
        if short <= 1:
            return words
        return set(compress(words, map(short.__le__, map(len, words))))

    def score(self, text: str, vocabulary: Vocabulary, *, flagged: bool = False) -> float:
        """Return the heuristic importance of ``text`` and update ``vocabulary``.

        ASCII text is split once (one ``bytes.translate``: the words of the regex) for both
        the emotion lexicon and the novelty words.
        """
        s = self.settings
        if text.isascii():
            found = _ascii_words(text)
            words = self._long(set(found))
        else:
            found = _WORD.findall(text.lower())
            words = self.words(text)
        hits = sum(map(self._lexicon.__contains__, found)) + 0.5 * text.count("!")
        emotion = min(1.0, hits / s.emotion_saturation)
        novelty = vocabulary.observe(words)
        value = (
            s.base
            + s.emotion_weight * emotion
            + s.novelty_weight * novelty
            + (s.flag_weight if flagged else 0.0)
        )
        return round(min(1.0, max(0.0, value)), 6)

    def observe(self, text: str, vocabulary: Vocabulary) -> None:
        """Update ``vocabulary`` with ``text`` without scoring (caller gave the importance)."""
        if text.isascii():  # words() without its length filter (observe_words')
            vocabulary.observe_words(set(_ascii_words(text)), self._min_len)
        else:
            vocabulary.observe(self.words(text))

    def observe_many(self, texts: Sequence[str], vocabulary: Vocabulary) -> None:
        """:meth:`observe` of each text in order (one pass over the batch when possible).

        Runtime complexity: O(total characters), one scan of the joined texts.
        """
        if len(texts) > 1:
            joined = "\n".join(texts)
            if joined.isascii():  # words() without its length filter (observe_union's)
                raw = set(_ascii_words(joined))
                if vocabulary.observe_union(raw, self._min_len):
                    return
            elif vocabulary.observe_union(self.words(joined)):
                return
        for text in texts:
            self.observe(text, vocabulary)

    def observe_runs(self, texts: Sequence[str],
                     runs: Iterable[tuple[int, Vocabulary]]) -> None:
        """:meth:`observe_many` of consecutive runs of ``texts``, each with its vocabulary.

        ``runs`` gives each run's length and vocabulary, in order. ASCII texts are lower-cased
        and split for the whole batch at once (one ``bytes.translate``); each run then only
        takes the union of its words.
        """
        joined = "\0".join(texts)
        if not joined.isascii() or joined.count("\0") != len(texts) - 1:
            row = 0
            for k, vocabulary in runs:
                self.observe_many(texts[row:row + k], vocabulary)
                row += k
            return
        lowered = joined.encode().translate(_LOWER_WORDS_NUL).decode().split("\0")
        short = self._min_len
        row = 0
        for k, vocabulary in runs:
            if k == 1:
                vocabulary.observe_words(set(lowered[row].split()), short)
            elif k and not vocabulary.observe_union(
                    set(" ".join(lowered[row:row + k]).split()), short):
                for text in lowered[row:row + k]:
                    vocabulary.observe_words(set(text.split()), short)
            row += k

    def words_of_all(self, texts: Sequence[str]) -> set[str]:
        """The union of :meth:`words` over ``texts``.

        Words never span texts: they are joined by a newline, which no word contains, and
        lower-casing is per character where it matters (ASCII output).
        """
        return self.words("\n".join(texts))


def boosted_importance(importance: float, flagged: bool, boost: float) -> float:
    """The importance retrieval uses: ``importance * boost`` for flagged records."""
    return importance * boost if flagged else importance
