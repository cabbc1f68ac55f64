"""Packing (index 9): token estimation and sequential packing under a budget.

Modules: ``tokens`` (HeuristicTokenCounter, estimate_total), ``packer`` (pack_sequential,
pack_rows: the same for many lists at once, one per row).
"""

from f09_memory.packing.packer import pack_rows, pack_sequential
from f09_memory.packing.tokens import HeuristicTokenCounter, estimate_total

__all__ = ["HeuristicTokenCounter", "estimate_total", "pack_rows", "pack_sequential"]
