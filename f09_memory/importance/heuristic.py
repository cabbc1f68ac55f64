"""Heuristic importance: emotion intensity, novelty and flags, when the caller gives none."""

from __future__ import annotations

import re

from f09_memory.config.config import ImportanceSettings

__all__ = ["ImportanceModel", "Vocabulary", "boosted_importance"]

_WORD = re.compile(r"[a-z0-9']+")


class Vocabulary:
    """An agent's recently seen words (the novelty reference), bounded by two generations.

    Words go into the current generation; when it holds ``max_size // 2`` words it becomes
    the previous one and a new generation starts, so between ``max_size // 2`` and
    ``max_size`` of the most recent distinct words are remembered. Set operations only.

    Runtime complexity: ``observe`` is O(distinct words of the text).
    """

    __slots__ = ("_current", "_previous", "max_size")

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._current: set[str] = set()
        self._previous: set[str] = set()

    def __len__(self) -> int:
        return len(self._current | self._previous)

    def observe(self, words: set[str]) -> float:
        """Record ``words`` and return the share of them not seen before (0.0 for none)."""
        if not words:
            return 0.0
        cur = self._current
        new = len(words - cur - self._previous)
        cur |= words
        if len(cur) >= self.max_size // 2:
            self._previous = cur
            self._current = set()
        return new / len(words)

    def get_state(self) -> list[list[str]]:
        """``[previous, current]`` generations as sorted lists."""
        return [sorted(self._previous), sorted(self._current)]

    def set_state(self, state: list[list[str]]) -> None:
        """Restore from :meth:`get_state`."""
        self._previous, self._current = set(state[0]), set(state[1])


class ImportanceModel:
    """Scores a text 0..1 from emotion intensity, novelty to the agent, and the flag bit.

    ``importance = clamp01(base + emotion_weight*emotion + novelty_weight*novelty +
    flag_weight*flagged)``; see :class:`~f09_memory.config.ImportanceSettings`.
    """

    def __init__(self, settings: ImportanceSettings) -> None:
        self.settings = settings
        self._lexicon = frozenset(settings.emotion_lexicon)
        self._content_word = re.compile(rf"[a-z0-9']{{{settings.novelty_min_word_len},}}")

    def words(self, text: str) -> set[str]:
        """Distinct lower-cased words of ``text`` with >= ``novelty_min_word_len`` chars."""
        return set(self._content_word.findall(text.lower()))

    def score(self, text: str, vocabulary: Vocabulary, *, flagged: bool = False) -> float:
        """Return the heuristic importance of ``text`` and update ``vocabulary``."""
        s = self.settings
        lowered = text.lower()
        hits = sum(1 for w in _WORD.findall(lowered) if w in self._lexicon) + 0.5 * text.count("!")
        emotion = min(1.0, hits / s.emotion_saturation)
        novelty = vocabulary.observe(self.words(text))
        value = (
            s.base
            + s.emotion_weight * emotion
            + s.novelty_weight * novelty
            + (s.flag_weight if flagged else 0.0)
        )
        return round(min(1.0, max(0.0, value)), 6)

    def observe(self, text: str, vocabulary: Vocabulary) -> None:
        """Update ``vocabulary`` with ``text`` without scoring (caller gave the importance)."""
        vocabulary.observe(self.words(text))


def boosted_importance(importance: float, flagged: bool, boost: float) -> float:
    """The importance retrieval uses: ``importance * boost`` for flagged records."""
    return importance * boost if flagged else importance
