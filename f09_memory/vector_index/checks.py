"""Argument checks shared by the vector indexes: keys, vectors, queries and ``k``.

Every check runs before an index changes, so a rejected call leaves the index untouched, and
every rejection is an :class:`~f09_memory.errors.InputInvalidError` naming the fix.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from f09_memory.embedding.batching import l2_normalize_rows
from f09_memory.errors import InputInvalidError

__all__ = ["as_keys", "as_query", "as_vectors", "check_k", "unit_rows"]


def as_keys(keys: object, *, non_negative: bool = False) -> NDArray[np.int64]:
    """Return ``keys`` as a 1-D int64 array.

    Args:
        keys: An integer array or a sequence of ints.
        non_negative: Also reject negative keys (HNSW labels are unsigned).

    Returns:
        A 1-D int64 array (a copy when a conversion was needed).

    Raises:
        InputInvalidError: Not 1-D, not integers (bools and floats are rejected), out of the
            int64 range, or negative when ``non_negative``.

    """
    try:
        arr = np.asarray(keys)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputInvalidError(
            "keys must be a 1-D array of int64 record keys", details={"type": type(keys).__name__}
        ) from exc
    if arr.ndim != 1:
        raise InputInvalidError(
            f"keys must be 1-D, got shape {tuple(arr.shape)}", details={"shape": list(arr.shape)}
        )
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InputInvalidError(
            f"keys must be integers (int64 record keys), got dtype {arr.dtype}",
            details={"dtype": str(arr.dtype)},
        )
    if arr.dtype == np.uint64 and int(arr.max()) > np.iinfo(np.int64).max:
        raise InputInvalidError("keys must fit in int64", details={"max": int(arr.max())})
    out = arr.astype(np.int64, copy=False)
    if non_negative and int(out.min()) < 0:
        raise InputInvalidError(
            f"keys must be >= 0 for this index, got {int(out.min())}",
            details={"min": int(out.min())},
        )
    return out


def unit_rows(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    """Return a float32 copy of ``matrix`` with unit-length rows; all-zero rows stay zero.

    Args:
        matrix: A 2-D float array.

    Returns:
        A new float32 array of the same shape.

    """
    return l2_normalize_rows(np.array(matrix, dtype=np.float32, copy=True))


def as_vectors(vectors: object, rows: int, dim: int) -> NDArray[np.float32]:
    """Check an ``(rows, dim)`` matrix of finite numbers and return its unit-row float32 copy.

    Args:
        vectors: The matrix to check.
        rows: Expected number of rows (the number of keys).
        dim: Expected number of columns (the index dimension).

    Returns:
        A new float32 array with unit-length rows (zero rows stay zero).

    Raises:
        InputInvalidError: Not numeric, wrong shape, or NaN/infinite values.

    """
    try:
        arr = np.asarray(vectors)
    except (TypeError, ValueError) as exc:
        raise InputInvalidError(
            "vectors must be a 2-D float array", details={"type": type(vectors).__name__}
        ) from exc
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise InputInvalidError(
            f"vectors must be float32, got dtype {arr.dtype}", details={"dtype": str(arr.dtype)}
        )
    if arr.ndim != 2 or arr.shape[0] != rows or arr.shape[1] != dim:
        raise InputInvalidError(
            f"vectors must have shape ({rows}, {dim}) (one row per key, index dim {dim}), "
            f"got {tuple(arr.shape)}",
            details={"shape": list(arr.shape), "expected": [rows, dim]},
        )
    as32 = arr.astype(np.float32, copy=False)
    if not np.isfinite(as32).all():
        raise InputInvalidError(
            "vectors contain NaN or infinite values (or values too large for float32)",
            details={"rows": rows},
        )
    return unit_rows(as32)


def as_query(query: object, dim: int) -> NDArray[np.float32]:
    """Check a query vector (shape ``(dim,)`` or ``(1, dim)``) and return it unit-length.

    Args:
        query: The query vector.
        dim: The index dimension.

    Returns:
        A new 1-D float32 array of length ``dim``; all zeros if the query is all zeros.

    Raises:
        InputInvalidError: Wrong shape, not numeric, or NaN/infinite values.

    """
    arr = np.asarray(query)
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 1 or arr.shape[0] != dim:
        raise InputInvalidError(
            f"query must have shape ({dim},), got {tuple(arr.shape)}",
            details={"shape": list(arr.shape), "expected": [dim]},
        )
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise InputInvalidError(
            f"query must be float32, got dtype {arr.dtype}", details={"dtype": str(arr.dtype)}
        )
    row: NDArray[np.float32] = np.array(arr, dtype=np.float32, copy=True)
    if not np.isfinite(row).all():
        raise InputInvalidError("query contains NaN or infinite values", details={"dim": dim})
    wide = row.astype(np.float64)
    norm = float(np.sqrt(np.dot(wide, wide)))
    if norm > 0.0:
        row *= np.float32(1.0 / norm)
    return row


def check_k(k: object) -> int:
    """Check a result count.

    Args:
        k: The number of results asked for.

    Returns:
        ``k`` as an int.

    Raises:
        InputInvalidError: ``k`` is not an int >= 0.

    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or int(k) < 0:
        raise InputInvalidError(f"k must be an int >= 0, got {k!r}", details={"k": repr(k)})
    return int(k)
