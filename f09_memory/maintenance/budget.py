"""WorkBudget: a tick's budget in deterministic work units, and its minimum-progress rule.

``budget_ms`` becomes ``budget_ms * work_units_per_ms`` units; each kind of tick work is
charged in units by the cost model (``MemoryConfig.tick_costs``, calibrated against measured
time), never by the wall clock, so the same calls do the same work on every machine.

Items: a tick's work is cut into items (one summary to make or apply, one due agent's
TTL expiry or summary check, one compaction layer, one embedded text, one mined record).
An item is started only when its cost fits in what is left (:meth:`WorkBudget.admits`),
with one exception, the **minimum-progress rule**: the tick's first item is always
admitted, so a budget too small for any item still does one item per tick and no work
waits forever behind a small budget. A tick therefore overshoots by at most one item, and
only when that item is the only one it did.
"""

from __future__ import annotations

__all__ = ["WorkBudget"]


class WorkBudget:
    """Units a tick may spend (``total=None``: unbounded), what it has spent, its items."""

    __slots__ = ("items", "total", "used")

    def __init__(self, total: int | None) -> None:
        self.total = total
        self.used = 0
        self.items = 0
        """Items taken so far (:meth:`take`); 0 until the tick's first item."""

    @property
    def left(self) -> int | None:
        """Units left (``None``: unbounded)."""
        return None if self.total is None else max(0, self.total - self.used)

    @property
    def spent(self) -> bool:
        """Whether nothing is left of a bounded budget."""
        return self.total is not None and self.used >= self.total

    def fits(self, cost: int) -> bool:
        """Whether ``cost`` more units stay within the budget."""
        return self.total is None or self.used + cost <= self.total

    def admits(self, cost: int) -> bool:
        """Whether an item of ``cost`` units may start.

        It may when it fits, or when it is the tick's first item (minimum progress).
        """
        return self.total is None or self.used + cost <= self.total or not self.items

    def spend(self, units: int) -> None:
        """Charge ``units`` (fixed costs, or the rest of an item already taken)."""
        self.used += units

    def take(self, units: int) -> None:
        """Charge an item of ``units`` (admitted by :meth:`admits`) and count it."""
        self.used += units
        self.items += 1
