"""Packing (index 9): token estimation and sequential packing under a budget.

Modules: ``tokens`` (HeuristicTokenCounter, estimate_total), ``packer`` (pack_sequential).
"""

from f09_memory.packing.packer import pack_sequential
from f09_memory.packing.tokens import HeuristicTokenCounter, estimate_total

__all__ = ["HeuristicTokenCounter", "estimate_total", "pack_sequential"]
