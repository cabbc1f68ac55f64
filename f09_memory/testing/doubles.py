"""Test doubles for hosts testing their own games against the engine."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from numpy.typing import NDArray

from f09_memory.bus import EngineBus, EventLog
from f09_memory.errors import InputInvalidError
from f09_memory.schema.enums import PressureState

__all__ = [
    "FailingEmbedder",
    "FailingLLM",
    "FakeEmbedder",
    "ScriptedLLM",
    "ScriptedPressure",
    "capture_events",
]


class ScriptedLLM:
    """An ``LLMClient`` that returns scripted replies in order and records every call.

    Args:
        replies: Replies returned in order; the last one repeats once they run out.
    """

    def __init__(self, replies: Sequence[str]) -> None:
        if not replies:
            raise InputInvalidError("ScriptedLLM needs at least one reply")
        self.replies = list(replies)
        self.calls: list[dict[str, object]] = []

    def complete(
        self,
        prompt: str,
        *,
        system: str | None = None,
        temperature: float = 0.2,
        max_tokens: int = 512,
    ) -> str:
        """Record the call and return the next scripted reply."""
        self.calls.append({"prompt": prompt, "system": system, "temperature": temperature,
                           "max_tokens": max_tokens})
        index = min(len(self.calls) - 1, len(self.replies) - 1)
        return self.replies[index]


class FailingLLM:
    """An ``LLMClient`` whose every call raises ``error`` (default: ``TimeoutError``)."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error or TimeoutError("scripted LLM timeout")
        self.calls = 0

    def complete(
        self,
        prompt: str,
        *,
        system: str | None = None,
        temperature: float = 0.2,
        max_tokens: int = 512,
    ) -> str:
        """Raise the configured error."""
        self.calls += 1
        raise self.error


class FakeEmbedder:
    """A deterministic ``EmbeddingProvider`` built on sha256.

    Each text maps to a unit vector seeded by the sha256 of the text: equal texts give equal
    vectors, unrelated texts near-orthogonal ones. ``delay_s`` makes each ``embed`` call
    sleep that long first (a slow model, for time-outs).
    """

    def __init__(self, dim: int = 16, version: str = "fake-v1", *,
                 delay_s: float = 0.0) -> None:
        self._dim = dim
        self._version = version
        self.delay_s = delay_s
        self.calls = 0

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._dim

    @property
    def version(self) -> str:
        """Provider version."""
        return self._version

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` deterministically (after ``delay_s``)."""
        self.calls += 1
        if self.delay_s > 0:
            time.sleep(self.delay_s)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
            vec = np.random.default_rng(seed).standard_normal(self._dim)
            out[i] = vec / np.linalg.norm(vec)
        return out


class FailingEmbedder(FakeEmbedder):
    """A ``FakeEmbedder`` whose ``embed`` raises for the first ``failures`` calls."""

    def __init__(self, dim: int = 16, failures: int = 1_000_000) -> None:
        super().__init__(dim)
        self.failures = failures

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Raise while failures remain, then embed like ``FakeEmbedder``."""
        if self.failures > 0:
            self.failures -= 1
            self.calls += 1
            raise RuntimeError("scripted embedding failure")
        return super().embed(texts)


class ScriptedPressure:
    """A ``PressureSource`` following a schedule of ``(from_time, state)`` steps."""

    def __init__(self, schedule: Sequence[tuple[int, PressureState | str]]) -> None:
        self.schedule = sorted((t, PressureState(s)) for t, s in schedule)

    def poll(self, now: int) -> PressureState:
        """The state of the last step at or before ``now`` (``normal`` before the first)."""
        state = PressureState.NORMAL
        for start, s in self.schedule:
            if start <= now:
                state = s
        return state


@contextmanager
def capture_events(bus: EngineBus, pattern: str = "*") -> Iterator[EventLog]:
    """Record the events matching ``pattern`` for the duration of a ``with`` block."""
    log = EventLog(bus, pattern)
    try:
        yield log
    finally:
        log.close()
