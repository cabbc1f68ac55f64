"""Calling an embedding provider safely: input checks, batching, result checks, normalization.

The engine never calls ``provider.embed`` directly; it goes through :func:`embed_in_batches`,
which turns every way a provider can misbehave (raising, returning the wrong shape, NaN) into
one :class:`~f09_memory.errors.EmbeddingFailedError`, so a broken adapter can never corrupt
an index or escape as a bare third-party exception.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import EmbeddingFailedError, InputInvalidError, MemoryEngineError
from f09_memory.protocols import EmbeddingProvider

__all__ = ["check_texts", "embed_in_batches", "l2_normalize_rows"]


def check_texts(texts: object) -> list[str]:
    """Validate that ``texts`` is a sequence of strings and return it as a list.

    A bare ``str`` is rejected (it is a sequence of characters, almost always a caller bug:
    pass ``[text]``).

    Args:
        texts: The value a caller passed as the texts to embed.

    Returns:
        The texts as a new list, in order.

    Raises:
        InputInvalidError: ``texts`` is a ``str``/``bytes``, not a sequence, or holds a
            non-``str`` item (the message names its position).

    """
    if isinstance(texts, str | bytes | bytearray) or not isinstance(texts, Sequence):
        raise InputInvalidError(
            "texts must be a sequence of str (a list or tuple); wrap a single text as [text]",
            details={"type": type(texts).__name__},
        )
    out = list(texts)
    for position, item in enumerate(out):
        if not isinstance(item, str):
            raise InputInvalidError(
                f"texts[{position}] is {type(item).__name__}, expected str",
                details={"position": position, "type": type(item).__name__},
            )
    return out


def l2_normalize_rows(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    """Scale each row of ``matrix`` to unit L2 norm in place; all-zero rows stay zero.

    Runtime complexity: ``O(n * dim)``.

    Args:
        matrix: A 2-D float32 array (modified in place).

    Returns:
        ``matrix`` itself, for chaining.

    """
    if matrix.size == 0:
        return matrix
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64))
    if norms.shape[0] == 1:  # one row (a query, a single ingest): the same floats, scalar
        norm = float(norms[0])
        matrix *= np.float32(1.0 / norm if norm > 0.0 else 0.0)
        return matrix
    scale = np.zeros_like(norms)
    np.divide(1.0, norms, out=scale, where=norms > 0.0)
    matrix *= scale.astype(np.float32)[:, None]
    return matrix


def _check_result(result: object, expected_rows: int, dim: int) -> NDArray[np.float32]:
    if not isinstance(result, np.ndarray):
        raise EmbeddingFailedError(
            f"embedding provider returned {type(result).__name__}, expected a numpy array",
            details={"type": type(result).__name__},
        )
    if result.ndim != 2 or result.shape[0] != expected_rows or result.shape[1] != dim:
        raise EmbeddingFailedError(
            f"embedding provider returned shape {tuple(result.shape)}, expected "
            f"({expected_rows}, {dim}); check the provider's dim",
            details={"shape": list(result.shape), "expected": [expected_rows, dim]},
        )
    kind = result.dtype
    if not np.issubdtype(kind, np.number) or np.issubdtype(kind, np.complexfloating):
        raise EmbeddingFailedError(
            f"embedding provider returned dtype {result.dtype}, expected float32",
            details={"dtype": str(result.dtype)},
        )
    as32 = result.astype(np.float32, copy=False)
    if not np.isfinite(as32).all():
        raise EmbeddingFailedError(
            "embedding provider returned NaN or infinite values",
            details={"rows": expected_rows},
        )
    return as32


def embed_in_batches(
    provider: EmbeddingProvider, texts: Sequence[str], batch_size: int
) -> NDArray[np.float32]:
    """Embed ``texts`` in slices of ``batch_size`` and return unit-length float32 rows.

    Each slice's result is checked (a numpy array of shape ``(len(slice), provider.dim)``
    with finite values). Rows are L2-normalized; an all-zero row (e.g. the hashing
    embedder's vector of a text with no words) stays zero. Order follows ``texts``.

    Runtime complexity: ``O(n * dim)`` plus the provider's own cost.

    Args:
        provider: The embedding provider.
        texts: The texts, in order.
        batch_size: Most texts per ``provider.embed`` call (``MemoryConfig.embedding_batch_size``).

    Returns:
        A float32 array of shape ``(len(texts), provider.dim)``; ``(0, dim)`` for no texts
        (the provider is not called).

    Raises:
        InputInvalidError: ``texts`` is not a sequence of str, or ``batch_size`` < 1.
        EmbeddingFailedError: The provider raised a non-engine exception (chained as
            ``__cause__``) or returned a malformed result.
        MemoryEngineError: Any engine error the provider raised itself (e.g.
            EmbeddingUnavailableError from the null provider) passes through unchanged.

    """
    items = check_texts(texts)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InputInvalidError(
            f"batch_size must be an int >= 1, got {batch_size!r}",
            details={"batch_size": repr(batch_size)},
        )
    dim = int(provider.dim)
    out = np.zeros((len(items), dim), dtype=np.float32)
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        try:
            result = provider.embed(chunk)
        except MemoryEngineError:
            raise
        except Exception as exc:
            raise EmbeddingFailedError(
                f"embedding provider {type(provider).__name__} raised "
                f"{type(exc).__name__}: {exc}",
                details={"provider": type(provider).__name__, "offset": start},
            ) from exc
        out[start : start + len(chunk)] = _check_result(result, len(chunk), dim)
    return l2_normalize_rows(out)
