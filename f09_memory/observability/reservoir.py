"""LatencyReservoir: a fixed-size, seeded, uniform sample of a stream of latencies.

Algorithm R (Vitter, 1985): the first ``size`` values fill the sample; the value number
``n`` (0-based) after that replaces a uniformly drawn slot ``j`` of ``0..n`` when
``j < size``, so every value seen has the same chance ``size / count`` to be in the sample.
The draws come from a ``numpy.random.Generator`` seeded by the caller (taken in blocks of
``_DRAWS`` uniforms): the same seed and the same values give the same sample, in any
process. The mean is exact (a running sum, in the order the values came), the quantiles are
those of the sample (``numpy.percentile``, linear interpolation).

Offering a value only appends it to a buffer (a metrics handler runs inside every
retrieval); the buffer is folded into the sample every ``_FOLD`` values and before any read,
the slots of a whole block computed in one numpy pass. A fold gives exactly what adding the
values one at a time gives (the same draws, slots and sum: a test checks it), whenever it
happens.

Memory is at most ``size`` float64 (8 KiB for the default 1,024) in an ``array("d")``
grown as values come, so a reservoir that saw ten values holds about ten, plus the buffer
(at most ``_FOLD`` float64, 2 KiB).
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
_FOLD = 256
"""Values buffered before they are folded into the sample."""


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

    __slots__ = ("_count", "_draws", "_next", "_pending", "_rng", "_sample", "_seed", "_total",
                 "size")

    def __init__(self, size: int = 1024, *, seed: int | Sequence[int] = 0) -> None:
        self.size = check_reservoir_size(size)
        self._seed = np.random.SeedSequence(_seed_ints(seed))
        self.reset()

    def reset(self) -> None:
        """Forget every value and restart the draws from the seed. O(1)."""
        self._count = 0  # values folded into the sample
        self._total = 0.0
        self._pending = array("d")  # values offered since the last fold
        self._sample = array("d")  # float64, grown by append up to ``size``
        self._rng: np.random.Generator | None = None  # made at the first draw
        self._draws: NDArray[np.float64] = np.empty(0)
        self._next = 0

    def add(self, value: float) -> None:
        """Offer one value to the sample. O(1) amortized (an append; a fold every block)."""
        pending = self._pending
        pending.append(value)
        if len(pending) >= _FOLD:
            self._fold()

    @property
    def count(self) -> int:
        """How many values were offered."""
        return self._count + len(self._pending)

    @property
    def total(self) -> float:
        """The sum of every value offered, added in order."""
        self._fold()
        return self._total

    def _fold(self) -> None:
        """Add the buffered values, as ``add`` one at a time would have (Algorithm R)."""
        values = self._pending
        k = len(values)
        if not k:
            return
        self._pending = array("d")
        n = self._count
        self._count = n + k
        total = self._total
        for value in values:  # in order: the running sum's own rounding
            total += value
        self._total = total
        size, sample = self.size, self._sample
        fill = min(k, max(0, size - n))  # values that still fill the sample
        if fill:
            sample.extend(values[:fill])
        rest = k - fill
        if not rest:
            return
        # Value number m (0-based, m >= size) replaces slot int(draw * (m + 1)) if < size:
        # the same float64 product and truncation as Python's int(draw * (m + 1)).
        first = n + fill + 1
        slots = (self._take_draws(rest)
                 * np.arange(first, first + rest, dtype=np.float64)).astype(np.int64)
        for i in np.flatnonzero(slots < size).tolist():  # in order: a later value wins
            sample[int(slots[i])] = values[fill + i]

    def _take_draws(self, m: int) -> NDArray[np.float64]:
        """The stream's next ``m`` uniforms (the generator called in blocks of ``_DRAWS``)."""
        parts = []
        draws, i = self._draws, self._next
        while m:
            if i == draws.shape[0]:
                if self._rng is None:
                    self._rng = np.random.default_rng(self._seed)
                draws, i = self._rng.random(_DRAWS), 0
            take = min(m, draws.shape[0] - i)
            parts.append(draws[i:i + take])
            i += take
            m -= take
        self._draws, self._next = draws, i
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @property
    def mean(self) -> float:
        """The exact mean of every value offered (0.0 before the first)."""
        self._fold()
        return self._total / self._count if self._count else 0.0

    def sample(self) -> NDArray[np.float64]:
        """A copy of the values kept (at most ``size``, in slot order)."""
        self._fold()
        return np.array(self._sample, dtype=np.float64)

    def quantiles(self, *percents: float) -> tuple[float, ...]:
        """Percentiles (0..100) of the sample; 0.0 each while it is empty. O(size)."""
        if not self.count:
            return tuple(0.0 for _ in percents)
        found = np.percentile(self.sample(), percents)
        return tuple(float(v) for v in np.atleast_1d(found))
