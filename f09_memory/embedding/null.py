"""NullEmbedder: the explicit "no embeddings" provider, and :func:`is_available`.

An engine built without an embedding provider still stores and retrieves records (by
recency, importance and lexical cues); semantic similarity is simply absent. The null
provider makes that state explicit: it satisfies the ``EmbeddingProvider`` protocol, reports
``available = False``, and any attempt to embed raises
:class:`~f09_memory.errors.EmbeddingUnavailableError` telling the caller what to configure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import ConfigInvalidError, EmbeddingUnavailableError
from f09_memory.protocols import EmbeddingProvider

__all__ = ["NullEmbedder", "is_available"]


class NullEmbedder:
    """The provider used when no embeddings are configured.

    Example:
        >>> NullEmbedder().available
        False

    Args:
        dim: The configured vector dimension (``MemoryConfig.embedding_dim``), reported as
            :attr:`dim` so code that sizes buffers keeps working.

    Raises:
        ConfigInvalidError: ``dim`` < 1.

    """

    available = False
    """Always False: callers should skip semantic work (see :func:`is_available`)."""

    def __init__(self, dim: int = 384) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ConfigInvalidError(
                f"NullEmbedder dim must be an int >= 1, got {dim!r}",
                details={"field": "dim", "value": repr(dim)},
            )
        self._dim = dim

    @property
    def dim(self) -> int:
        """The configured vector dimension."""
        return self._dim

    @property
    def version(self) -> str:
        """Always ``"null"``."""
        return "null"

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Raise always: there is no model behind this provider.

        Args:
            texts: Ignored.

        Raises:
            EmbeddingUnavailableError: Always; configure a provider to embed.

        """
        raise EmbeddingUnavailableError(
            "no embedding provider is configured: pass embedding=HashingEmbedder(dim) "
            "(built in, deterministic) or SentenceTransformerEmbedder() "
            "(pip install 'f09-memory[embeddings]') to the engine",
            details={"texts": len(texts) if isinstance(texts, Sequence) else None},
        )


def is_available(provider: EmbeddingProvider | None) -> bool:
    """Tell whether ``provider`` can embed.

    Args:
        provider: A provider, or ``None``.

    Returns:
        False for ``None`` or a provider whose ``available`` attribute is ``False`` (such as
        :class:`NullEmbedder`); True otherwise (providers without the attribute count as
        available).

    """
    if provider is None:
        return False
    return getattr(provider, "available", True) is not False
