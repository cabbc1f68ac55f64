"""LatencyReservoir: a fixed-size, seeded, uniform sample of a stream of latencies.

Algorithm R (Vitter, 1985): the first ``size`` values fill the sample; the value number
``n`` (0-based) after that replaces a uniformly drawn slot ``j`` of ``0..n`` when
``j < size``, so every value seen has the same chance ``size / count`` to be in the sample.
The draws come from a ``numpy.random.Generator`` seeded by the caller (taken in blocks of
``_DRAWS`` uniforms, so a value costs a list read, not a generator call): the same seed and
the same values give the same sample, in any process. The mean is exact (a running sum), the
quantiles are those of the sample (``numpy.percentile``, linear interpolation).

Memory is at most ``size`` float64 (8 KiB for the default 1,024) in an ``array("d")``
grown as values come, so a reservoir that saw ten values holds about ten.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import InputInvalidError

__all__ = ["LatencyReservoir", "check_reservoir_size"]

_DRAWS = 256
"""Uniforms drawn from the generator at once."""


def check_reservoir_size(size: object, field: str = "size") -> int:
    """Return ``size`` if it is an int in 1..2**20.

    Raises:
        InputInvalidError: ``size`` is not an int in 1..1048576 (details name ``field``).
    """
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 1 << 20:
        raise InputInvalidError(f"{field} must be an int in 1..1048576 (samples kept)",
                                details={"field": field})
    return size


def _seed_ints(seed: object) -> list[int]:
    """``seed`` as a non-empty list of ints >= 0 (never ``None``: no OS entropy)."""
    ints = [seed] if isinstance(seed, int) else (
        list(seed) if isinstance(seed, Sequence) and not isinstance(seed, str | bytes) else [])
    if not ints or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in ints):
        raise InputInvalidError("seed must be an int >= 0 or a non-empty sequence of them",
                                details={"field": "seed"})
    return ints


class LatencyReservoir:
    """A uniform sample of at most ``size`` values of a stream, plus its exact count and mean.

    Args:
        size: Values kept (1..2**20).
        seed: Seeds the generator of the replacement draws (an int or a sequence of ints,
            as ``numpy.random.default_rng`` takes them).

    Raises:
        InputInvalidError: ``size`` out of range, or a negative or non-integer seed.

    Example:
        >>> r = LatencyReservoir(4, seed=0)
        >>> for ms in (1.0, 2.0, 3.0, 4.0, 100.0):
        ...     r.add(ms)
        >>> r.count, r.mean, len(r.sample())
        (5, 22.0, 4)
    """

    __slots__ = ("_draws", "_next", "_rng", "_sample", "_seed", "count", "size", "total")

    def __init__(self, size: int = 1024, *, seed: int | Sequence[int] = 0) -> None:
        self.size = check_reservoir_size(size)
        self._seed = np.random.SeedSequence(_seed_ints(seed))
        self.reset()

    def reset(self) -> None:
        """Forget every value and restart the draws from the seed. O(1)."""
        self.count = 0
        self.total = 0.0
        self._sample = array("d")  # float64, grown by append up to ``size``
        self._rng: np.random.Generator | None = None  # made at the first draw
        self._draws: list[float] = []
        self._next = 0

    def add(self, value: float) -> None:
        """Offer one value to the sample. O(1) amortized."""
        n = self.count
        self.count = n + 1
        self.total += value
        if n < self.size:
            self._sample.append(value)
            return
        i = self._next
        if i == len(self._draws):
            if self._rng is None:
                self._rng = np.random.default_rng(self._seed)
            self._draws = self._rng.random(_DRAWS).tolist()
            i = 0
        self._next = i + 1
        j = int(self._draws[i] * (n + 1))
        if j < self.size:
            self._sample[j] = value

    @property
    def mean(self) -> float:
        """The exact mean of every value offered (0.0 before the first)."""
        return self.total / self.count if self.count else 0.0

    def sample(self) -> NDArray[np.float64]:
        """A copy of the values kept (at most ``size``, in slot order)."""
        return np.array(self._sample, dtype=np.float64)

    def quantiles(self, *percents: float) -> tuple[float, ...]:
        """Percentiles (0..100) of the sample; 0.0 each while it is empty. O(size)."""
        if not self.count:
            return tuple(0.0 for _ in percents)
        found = np.percentile(self.sample(), percents)
        return tuple(float(v) for v in np.atleast_1d(found))
