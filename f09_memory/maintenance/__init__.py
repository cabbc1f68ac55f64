"""Maintenance: the frame slice a ``tick`` runs.

Modules: ``budget`` (WorkBudget: deterministic work units), ``tick`` (Maintenance, the
tick loop, and TickReport).
"""

from f09_memory.maintenance.budget import WorkBudget
from f09_memory.maintenance.tick import Maintenance, TickBacklog, TickReport

__all__ = ["Maintenance", "TickBacklog", "TickReport", "WorkBudget"]
