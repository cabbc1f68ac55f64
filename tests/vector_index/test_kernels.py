from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from f09_memory.errors import ErrorCode, InputInvalidError
from f09_memory.vector_index import ExactIndex
from f09_memory.vector_index.kernels import similarities

SHAPES = [(0, 384), (1, 384), (2, 3), (7, 1), (513, 64), (2_000, 384)]


def _data(n: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, dim)).astype(np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    q = rng.standard_normal(dim).astype(np.float32)
    q /= np.float32(np.linalg.norm(q))
    return matrix, q


@pytest.mark.parametrize(("n", "dim"), SHAPES)
def test_similarities_equal_matmul_within_float32_tolerance(n: int, dim: int) -> None:
    matrix, q = _data(n, dim, seed=n * 31 + dim)
    got = similarities(matrix, q)
    assert (n,) == got.shape
    assert np.allclose(matrix.astype(np.float64) @ q.astype(np.float64), got, rtol=0, atol=2e-6)
    assert np.allclose(matrix @ q, got, rtol=0, atol=2e-6)


@pytest.mark.parametrize(("n", "dim"), SHAPES)
def test_similarities_are_float64(n: int, dim: int) -> None:
    matrix, q = _data(n, dim, seed=3)
    assert np.float64 == similarities(matrix, q).dtype
    assert np.float64 == similarities(matrix, q, np.zeros(0, dtype=np.intp)).dtype


@pytest.mark.parametrize(("n", "dim"), SHAPES)
def test_repeat_calls_are_bit_identical(n: int, dim: int) -> None:
    matrix, q = _data(n, dim, seed=11)
    first = similarities(matrix, q).tobytes()
    for _ in range(20):
        assert first == similarities(matrix, q).tobytes()
    # a copy at another address gives the same bits too
    assert first == similarities(matrix.copy(), q.copy()).tobytes()


def test_rows_subset_equals_the_same_rows_of_the_full_product_bit_for_bit() -> None:
    matrix, q = _data(2_000, 384, seed=5)
    rows = np.random.default_rng(6).choice(2_000, 300, replace=False).astype(np.intp)
    got = similarities(matrix, q, rows)
    assert (300,) == got.shape
    assert similarities(matrix, q)[rows].tobytes() == got.tobytes()
    assert np.allclose(matrix[rows] @ q, got, rtol=0, atol=2e-6)


def test_rows_keep_order_and_repeats_and_accept_int64() -> None:
    matrix = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0]], dtype=np.float32)
    q = np.array([1.0, 1.0], dtype=np.float32)
    assert [4.0, 1.0, 4.0, 2.0] == similarities(matrix, q, np.array([2, 0, 2, 1])).tolist()
    assert [2.0] == similarities(matrix, q, np.array([1], dtype=np.int64)).tolist()
    assert [] == similarities(matrix, q, np.zeros(0, dtype=np.intp)).tolist()


def test_a_row_does_not_depend_on_the_other_rows() -> None:
    matrix, q = _data(1_000, 384, seed=8)
    full = similarities(matrix, q)
    for stop in (1, 5, 33, 999):
        assert full[:stop].tobytes() == similarities(matrix[:stop], q).tobytes()


def test_non_contiguous_matrix_works() -> None:
    matrix, q = _data(100, 384, seed=9)
    strided = matrix[::3]
    assert np.allclose(strided @ q, similarities(strided, q), rtol=0, atol=2e-6)


@pytest.mark.parametrize(
    ("matrix", "q", "fix"),
    [
        (np.zeros((4, 3), np.float32), np.zeros(5, np.float32), "length 3"),
        (np.zeros((4, 3), np.float32), np.zeros((1, 3), np.float32), "1-D float32"),
        (np.zeros((4, 3), np.float32), np.zeros(3, np.float64), "dtype=np.float32"),
        (np.zeros(3, np.float32), np.zeros(3, np.float32), "2-D float32"),
        (np.zeros((4, 3), np.float64), np.zeros(3, np.float32), "2-D float32"),
        ([[1.0, 2.0]], np.zeros(2, np.float32), "np.asarray(matrix, dtype=np.float32)"),
    ],
)
def test_shape_or_dtype_mismatch_raises_input_invalid_naming_the_fix(
    matrix: object, q: object, fix: str
) -> None:
    with pytest.raises(InputInvalidError) as info:
        similarities(matrix, q)  # type: ignore[arg-type]
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert fix in info.value.message
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "rows",
    [np.array([[0, 1]]), np.array([0.0, 1.0]), np.array([True, False, True, False]), [0, 1]],
)
def test_bad_rows_raise_input_invalid(rows: object) -> None:
    matrix, q = _data(4, 3, seed=1)
    with pytest.raises(InputInvalidError, match="1-D integer array"):
        similarities(matrix, q, rows)  # type: ignore[arg-type]


def test_out_of_range_rows_raise_input_invalid() -> None:
    matrix, q = _data(4, 3, seed=1)
    with pytest.raises(InputInvalidError, match="index the matrix's 4 rows"):
        similarities(matrix, q, np.array([0, 4], dtype=np.intp))


def test_exact_index_scores_the_same_whether_allowed_gathers_or_scans() -> None:
    matrix, q = _data(400, 32, seed=12)
    keys = np.arange(400, dtype=np.int64) * 3 + 1
    index = ExactIndex(32)
    index.add(keys, matrix)
    few = keys[::10]  # 40 < 400 / 4: gathered row by row
    many = keys[::2]  # 200 >= 400 / 4: one scan then a selection
    few_keys, few_sims = index.search(q, 40, allowed=few)
    many_keys, many_sims = index.search(q, 200, allowed=many)
    assert set(few_keys.tolist()) <= set(many_keys.tolist())
    by_key = dict(zip(many_keys.tolist(), many_sims.tolist(), strict=True))
    assert [by_key[k] for k in few_keys.tolist()] == few_sims.tolist()


_WORKER_TICKS = """
import os, threading
import numpy as np
from threadpoolctl import threadpool_limits
from f09_memory.vector_index.kernels import similarities

def ticks():  # CPU time (utime + stime, in clock ticks) of every thread but this one
    total = 0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) != threading.get_native_id():
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total

rng = np.random.default_rng(4)
m = rng.standard_normal((2000, 384)).astype(np.float32)
q = rng.standard_normal(384).astype(np.float32)
with threadpool_limits(2, user_api="blas"):
    t0 = ticks()
    for _ in range(600):
        similarities(m, q)
    t1 = ticks()
    for _ in range(600):
        m @ q
    t2 = ticks()
print(t1 - t0, t2 - t1)
"""


def test_similarities_never_run_on_a_blas_worker_thread() -> None:
    pytest.importorskip("threadpoolctl")
    if not Path("/proc/self/task").is_dir():
        pytest.skip("reads per-thread CPU time from Linux /proc")
    # a fresh process (cwd = the repo root, first on sys.path): no worker left spinning by an
    # earlier test, and the kernel runs before any BLAS product wakes the workers
    out = subprocess.run(
        [sys.executable, "-c", _WORKER_TICKS],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    kernel_ticks, matmul_ticks = int(out[0]), int(out[1])
    if matmul_ticks == 0:
        pytest.skip("this BLAS ran `@` on one thread too (one core?): nothing to compare")
    assert 0 == kernel_ticks
