"""Similarity kernels: matrix-vector products over stored vectors that never wake BLAS threads.

``matrix @ q`` on a float32 ``(n, dim)`` matrix is a BLAS ``sgemv``. OpenBLAS runs it on all
of its threads once ``n * dim`` passes a small threshold (a few thousand elements), so a
2,000 x 384 product on a 2-core machine wakes a sleeping worker thread: ~0.05 ms of work
then costs 4-12 ms whenever the other core is busy (the worker waits for a scheduler tick).
A second thread never paid on 2 cores at the sizes one agent holds (up to ~100k x 384: the
product is memory-bound there, and with the other core busy two threads were twice as slow).

:func:`similarities` computes the product with :func:`numpy.vecdot`: one ``dim``-long dot
product per row (``cblas_sdot`` under numpy's OpenBLAS, which stays on the calling thread for
any embedding dimension below ~10,000), no process-wide thread setting to flip and restore,
no new dependency. Measured on the 2-core machine (``benchmarks/bench_kernels.py``): 0.11-0.16
ms p95 at 2k x 384 whatever the BLAS thread count and the other core's load, where ``@`` with
2 BLAS threads had 8-12 ms spikes at p95/p99.

Determinism: each row's value is one dot product of that row with ``q``, computed the same way
whatever the other rows are; so results are bit-identical run to run, and ``rows=`` gives the
same bits as slicing the full product. They can differ from ``matrix @ q`` in the last float32
bit (a different summation order), which the score quantum absorbs.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import InputInvalidError
from f09_memory.json_types import JsonValue

__all__ = ["similarities"]


def _describe(value: object) -> dict[str, JsonValue]:
    if isinstance(value, np.ndarray):
        return {"shape": [int(s) for s in value.shape], "dtype": str(value.dtype)}
    return {"type": type(value).__name__}


def _check(matrix: object, q: object, rows: object) -> tuple[int, int]:
    if not isinstance(matrix, np.ndarray) or matrix.ndim != 2 or matrix.dtype != np.float32:
        raise InputInvalidError(
            "matrix must be a 2-D float32 array of shape (n, dim); pass "
            "np.asarray(matrix, dtype=np.float32)",
            details=_describe(matrix),
        )
    n, dim = (int(s) for s in matrix.shape)
    if (
        not isinstance(q, np.ndarray)
        or q.ndim != 1
        or q.dtype != np.float32
        or int(q.shape[0]) != dim
    ):
        raise InputInvalidError(
            f"q must be a 1-D float32 array of length {dim} (the matrix's columns); pass "
            f"np.asarray(q, dtype=np.float32).reshape({dim})",
            details={**_describe(q), "expected": [dim]},
        )
    if rows is not None and (
        not isinstance(rows, np.ndarray)
        or rows.ndim != 1
        or not np.issubdtype(rows.dtype, np.integer)
    ):
        raise InputInvalidError(
            "rows must be None or a 1-D integer array of row indices (np.intp); pass "
            "np.flatnonzero(mask) for a boolean mask",
            details=_describe(rows),
        )
    return n, dim


def similarities(
    matrix: NDArray[np.float32],
    q: NDArray[np.float32],
    rows: NDArray[np.intp] | None = None,
) -> NDArray[np.float64]:
    """Return ``matrix[rows] @ q`` (or ``matrix @ q``) as float64, on the calling thread only.

    Every row is one float32 dot product with ``q`` (``numpy.vecdot``), so no BLAS worker
    thread is ever woken and each row's value depends only on that row and ``q``: bit-identical
    run to run, and ``similarities(m, q, rows)`` equals ``similarities(m, q)[rows]`` bit for
    bit. Values match ``matrix @ q`` to float32 rounding (~1e-7 for unit vectors).

    Runtime complexity: ``O(len(rows) * dim)`` (``O(n * dim)`` without ``rows``); ``rows``
    copies the selected rows first, like ``matrix[rows] @ q``.

    Example:
        >>> import numpy as np
        >>> m = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0]], dtype=np.float32)
        >>> similarities(m, np.array([1.0, 1.0], dtype=np.float32)).tolist()
        [1.0, 2.0, 4.0]
        >>> similarities(m, np.array([1.0, 1.0], dtype=np.float32), np.array([2, 0])).tolist()
        [4.0, 1.0]

    Args:
        matrix: ``(n, dim)`` float32 matrix (any strides; C-contiguous is fastest).
        q: ``(dim,)`` float32 vector.
        rows: Optional 1-D integer row indices into ``matrix`` (repeats allowed, any order).

    Returns:
        A new float64 array: ``len(rows)`` values in the order of ``rows``, or ``n`` values.

    Raises:
        InputInvalidError: ``matrix`` is not 2-D float32, ``q`` is not a float32 vector of
            ``matrix.shape[1]`` values, or ``rows`` is not a 1-D integer array of indices in
            ``-n ..< n``.

    """
    n, _ = _check(matrix, q, rows)
    if rows is None:
        picked = matrix
    else:
        try:
            picked = matrix[rows]
        except IndexError as exc:
            raise InputInvalidError(
                f"rows must index the matrix's {n} rows (-{n} ..< {n}); pass only live rows",
                details={"rows": n},
            ) from exc
    out: NDArray[np.float64] = np.vecdot(picked, q).astype(np.float64)
    return out
