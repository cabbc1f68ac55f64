"""WorkBudget: a tick's budget in deterministic work units.

``budget_ms`` becomes ``budget_ms * work_units_per_ms`` units; each kind of tick work is
charged in units (records scanned, ``removal_cost_units`` per pruned record,
``embed_cost_units`` per embedded text, ``index_insert_cost_units`` per indexed vector),
never by the wall clock, so the same calls do the same work on every machine.
"""

from __future__ import annotations

__all__ = ["WorkBudget"]


class WorkBudget:
    """Units a tick may spend (``total=None``: unbounded) and what it has spent."""

    __slots__ = ("total", "used")

    def __init__(self, total: int | None) -> None:
        self.total = total
        self.used = 0

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

    def spend(self, units: int) -> None:
        """Charge ``units``."""
        self.used += units
