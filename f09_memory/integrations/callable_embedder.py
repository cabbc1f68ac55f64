"""CallableEmbedder: an EmbeddingProvider over a one-text embedder callable.

Hosts such as Concordia hand memory an embedder that takes one text and returns one vector
(``sentence_embedder: Callable[[str], np.ndarray]``); the engine wants an
:class:`~f09_memory.EmbeddingProvider` (``dim``, ``version``, ``embed(texts)``). This adapter
calls the function once per text, checks each vector, and remembers the last text's vector.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from f09_memory.errors import EmbeddingFailedError, InputInvalidError

__all__ = ["CallableEmbedder", "SentenceEmbedder"]

SentenceEmbedder = Callable[[str], ArrayLike]
"""A one-text embedder: one text in, one vector (any array-like of numbers) out."""
_PROBE_TEXT = "dimension probe"


class CallableEmbedder:
    """An :class:`~f09_memory.EmbeddingProvider` over a one-text embedder callable.

    Concordia's ``sentence_embedder`` takes one text and returns one vector; ``embed(texts)``
    calls it once per text. The last text and its vector are remembered, so the bank's own
    call (made first, so an embedder error reaches the caller as in Concordia) and the
    engine's call for the same text cost one model call.

    Args:
        fn: The embedder, ``str -> vector`` (any array-like of numbers).
        dim: Its vector length; ``None`` calls ``fn`` once on a probe text to learn it.
        version: Names the model: a new version makes stored vectors stale (re-embedded).
            Default ``"concordia-callable:<dim>"``.

    Raises:
        InputInvalidError: ``fn`` is not callable or ``dim`` is not a positive int.
        EmbeddingFailedError: The probe call failed or returned no usable vector.
    """

    def __init__(self, fn: SentenceEmbedder, *, dim: int | None = None,
                 version: str | None = None) -> None:
        if not callable(fn):
            raise InputInvalidError("sentence_embedder must be a callable: str -> vector",
                                    details={"field": "sentence_embedder"})
        self._fn = fn
        self._last: tuple[str, NDArray[np.float32]] | None = None
        if dim is None:
            dim = int(self._call(_PROBE_TEXT).shape[0])
        if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= 8192:
            raise InputInvalidError("dim must be an int in 1..8192", details={"field": "dim"})
        if version is not None and not isinstance(version, str):
            raise InputInvalidError("version must be a str", details={"field": "version"})
        self._dim = dim
        self._version = f"concordia-callable:{dim}" if version is None else version

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._dim

    @property
    def version(self) -> str:
        """Identifier of the model behind ``fn``."""
        return self._version

    def _call(self, text: str) -> NDArray[np.float32]:
        try:
            raw = self._fn(text)
            vector = np.asarray(raw, dtype=np.float32).reshape(-1)
        except Exception as exc:
            raise EmbeddingFailedError("the sentence embedder raised (see the cause)",
                                       details={"field": "sentence_embedder"}) from exc
        if vector.size == 0 or not np.isfinite(vector).all():
            raise EmbeddingFailedError(
                "the sentence embedder returned an empty or non-finite vector",
                details={"field": "sentence_embedder"})
        return vector

    def vector(self, text: str) -> NDArray[np.float32]:
        """The vector of one text (the last one is remembered). O(one ``fn`` call).

        Raises:
            EmbeddingFailedError: ``fn`` raised, or its vector is not ``dim`` finite numbers.
        """
        last = self._last
        if last is not None and last[0] == text:
            return last[1]
        vector = self._call(text)
        if vector.shape[0] != self._dim:
            raise EmbeddingFailedError(
                f"the sentence embedder returned {vector.shape[0]} numbers, not dim="
                f"{self._dim}", details={"field": "sentence_embedder", "dim": self._dim})
        self._last = (text, vector)
        return vector

    def embed(self, texts: Iterable[str]) -> NDArray[np.float32]:
        """Embed ``texts`` in order: a float32 array of shape ``(len(texts), dim)``.

        Raises:
            EmbeddingFailedError: See :meth:`vector`.
        """
        rows = [self.vector(text) for text in texts]
        if not rows:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.stack(rows)
