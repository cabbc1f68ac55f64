"""Importance (index 4): heuristic importance (emotion, novelty, flags) and the flag boost.

Modules: ``heuristic`` (ImportanceModel, Vocabulary, boosted_importance).
"""

from f09_memory.importance.heuristic import ImportanceModel, Vocabulary, boosted_importance

__all__ = ["ImportanceModel", "Vocabulary", "boosted_importance"]
