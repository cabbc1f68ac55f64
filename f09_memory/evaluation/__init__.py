"""Evaluation: retrieval quality of a whole engine on a hand-labeled set (outer ring).

``quality`` builds engines, ingests a labeled set and measures recall@k and MRR
(``evaluate_retrieval``, ``QualityReport``, ``recall_at_k``, ``mrr``,
``pure_weights_config``). It drives :class:`~f09_memory.engine.MemoryEngine`, so it lives
here rather than in :mod:`f09_memory.testing`, whose doubles import no engine.

Modules: ``quality``.
"""

from f09_memory.evaluation.quality import (
    QualityReport,
    evaluate_retrieval,
    mrr,
    pure_weights_config,
    recall_at_k,
)

__all__ = [
    "QualityReport",
    "evaluate_retrieval",
    "mrr",
    "pure_weights_config",
    "recall_at_k",
]
