"""The injected contracts. Adapters fit them structurally; none needs to import this package.

Every protocol is ``runtime_checkable`` so the engine can reject a wrong object early with
a clear error instead of failing deep inside a tick.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from f09_memory.schema.enums import PressureState

__all__ = ["EmbeddingProvider", "LLMClient", "PressureSource", "TokenCounter", "VectorIndex"]


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns texts into vectors.

    ``embed`` returns a float32 array of shape ``(len(texts), dim)``; ``version`` changes
    whenever the vectors of the same text would change (a new model), so stored vectors can
    be re-embedded.
    """

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    @property
    def version(self) -> str:
        """Identifier of the model and settings that produced the vectors."""
        ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` in order."""
        ...


@runtime_checkable
class LLMClient(Protocol):
    """A text-completion model behind the host's own rate governor."""

    def complete(
        self,
        prompt: str,
        *,
        system: str | None = None,
        temperature: float = 0.2,
        max_tokens: int = 512,
    ) -> str:
        """Return the model's completion of ``prompt``."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of a text for the target model (a tokenizer, or an estimate)."""

    def count(self, text: str) -> int:
        """Return the token count of ``text`` (>= 0)."""
        ...


@runtime_checkable
class PressureSource(Protocol):
    """The rate governor, polled by ``engine.tick``."""

    def poll(self, now: int) -> PressureState:
        """Return the pressure state in force at logical time ``now``."""
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """Nearest-neighbour search over one agent's record vectors, keyed by int64 record keys.

    ``search`` returns keys and cosine similarities ordered by quantized similarity
    descending, then key ascending (deterministic).
    """

    def __len__(self) -> int:
        """Number of live vectors."""
        ...

    def add(self, keys: NDArray[np.int64], vectors: NDArray[np.float32]) -> None:
        """Insert vectors (rows of an ``(n, dim)`` array) under ``keys``."""
        ...

    def remove(self, keys: NDArray[np.int64]) -> None:
        """Remove the vectors of ``keys`` (unknown keys are ignored)."""
        ...

    def search(
        self,
        query: NDArray[np.float32],
        k: int,
        allowed: NDArray[np.int64] | None = None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Return the top-``k`` keys by similarity to ``query`` (restricted to ``allowed``)."""
        ...
