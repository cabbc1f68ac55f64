from __future__ import annotations

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from f09_memory.errors import ErrorCode, InputInvalidError
from f09_memory.observability import LatencyReservoir
from f09_memory.observability import reservoir as reservoir_module


def fed(values: list[float], size: int = 8, seed: int | list[int] = 0) -> LatencyReservoir:
    r = LatencyReservoir(size, seed=seed)
    for v in values:
        r.add(v)
    return r


def test_fills_then_keeps_size_values_with_exact_count_and_mean() -> None:
    values = [float(v) for v in range(1, 101)]
    r = fed(values[:5])
    assert [1.0, 2.0, 3.0, 4.0, 5.0] == r.sample().tolist()
    assert (3.0, 4.8) == r.quantiles(50, 95) == tuple(np.percentile(values[:5], [50, 95]))
    r = fed(values)
    assert 100 == r.count and 50.5 == r.mean and 8 == len(r.sample())
    assert set(r.sample().tolist()) <= set(values)


def test_same_seed_and_values_give_the_same_sample_another_seed_another() -> None:
    values = [float((i * 7919) % 1000) for i in range(5_000)]
    a, b, c = fed(values, 64, seed=1), fed(values, 64, seed=1), fed(values, 64, seed=2)
    assert a.sample().tolist() == b.sample().tolist() != c.sample().tolist()
    assert fed(values, 64, seed=[1, 2]).sample().tolist() != a.sample().tolist()


def test_reset_starts_over_from_the_seed() -> None:
    values = [float(i) for i in range(1_000)]
    r = fed(values, 16, seed=4)
    first = r.sample().tolist()
    r.reset()
    assert (0, 0.0, (0.0, 0.0)) == (r.count, r.mean, r.quantiles(50, 95))
    for v in values:
        r.add(v)
    assert first == r.sample().tolist()


def test_the_sample_is_uniform_over_the_stream() -> None:
    """Every value has the same chance: a late burst of slow calls shows in p95."""
    values = [1.0] * 9_000 + [100.0] * 1_000  # the slow 10% come last
    shares = [float(np.mean(fed(values, 256, seed=s).sample() == 100.0)) for s in range(20)]
    assert 0.07 < float(np.mean(shares)) < 0.13
    assert 100.0 == fed(values, 256, seed=0).quantiles(95)[0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1e6, allow_nan=False), max_size=300), st.integers(1, 40),
       st.integers(0, 2**32))
def test_sample_is_a_sub_multiset_of_the_values(values: list[float], size: int,
                                                 seed: int) -> None:
    r = fed(values, size, seed)
    kept = r.sample().tolist()
    assert len(kept) == min(size, len(values)) and r.count == len(values)
    for v in set(kept):
        assert kept.count(v) <= values.count(v)
    if len(values) <= size:
        assert kept == values
    assert r.mean == pytest.approx(float(np.mean(values)) if values else 0.0)


@pytest.mark.parametrize("size", [0, -1, 2.5, True, "8", None, 2**20 + 1])
def test_bad_size_is_refused(size: object) -> None:
    with pytest.raises(InputInvalidError) as info:
        LatencyReservoir(size)  # type: ignore[arg-type]
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code and "size" == info.value.details[
        "field"]


@pytest.mark.parametrize("seed", [-1, None, 1.5, "0", b"0", [], [1, -1], [True], (1, 2.0)])
def test_bad_seed_is_refused_never_os_entropy(seed: object) -> None:
    with pytest.raises(InputInvalidError) as info:
        LatencyReservoir(4, seed=seed)  # type: ignore[arg-type]
    assert "seed" == info.value.details["field"]


def test_module_examples_run() -> None:
    assert 0 == doctest.testmod(reservoir_module).failed


class ScalarReservoir:
    """Algorithm R one value at a time (the reservoir before it buffered): the reference."""

    def __init__(self, size: int, seed: int) -> None:
        self.size, self.count, self.total = size, 0, 0.0
        self.sample: list[float] = []
        self.rng = np.random.default_rng(np.random.SeedSequence(
            reservoir_module._seed_ints(seed)))
        self.draws: list[float] = []
        self.next = 0

    def add(self, value: float) -> None:
        n = self.count
        self.count, self.total = n + 1, self.total + value
        if n < self.size:
            self.sample.append(value)
            return
        if self.next == len(self.draws):
            self.draws, self.next = self.rng.random(reservoir_module._DRAWS).tolist(), 0
        j = int(self.draws[self.next] * (n + 1))
        self.next += 1
        if j < self.size:
            self.sample[j] = value


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 3_000), st.integers(1, 300), st.integers(0, 2**32),
       st.lists(st.integers(0, 3_000), max_size=6))
def test_folding_in_blocks_equals_adding_one_at_a_time(n: int, size: int, seed: int,
                                                       reads: list[int]) -> None:
    """Whenever the buffer is folded (a block filled, a read), the sample, count and sum
    are those of Algorithm R applied one value at a time."""
    rng = np.random.default_rng(seed)
    values = (rng.lognormal(0.0, 1.0, n) * 10.0).tolist()
    r, ref = LatencyReservoir(size, seed=seed), ScalarReservoir(size, seed)
    for i, v in enumerate(values):
        r.add(v)
        ref.add(v)
        if i in reads:  # a read folds the buffer mid-block
            assert (r.count, r.total) == (ref.count, ref.total)
            assert r.sample().tolist() == ref.sample
    assert (r.count, r.total, r.mean) == (ref.count, ref.total,
                                          ref.total / ref.count if ref.count else 0.0)
    assert r.sample().tolist() == ref.sample
    r.reset()
    assert (0, 0.0, []) == (r.count, r.total, r.sample().tolist())
