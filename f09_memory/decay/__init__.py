"""Decay (index 5): recency score ``exp(-dt/halfLife)`` and the decayed importance (lazy).

Modules: ``decay`` (recency_scores, importance_decayed, decay_pass).
"""

from f09_memory.decay.decay import decay_pass, importance_decayed, recency_scores

__all__ = ["decay_pass", "importance_decayed", "recency_scores"]
