"""Retrieval (index 8): candidates -> hybrid score -> stable order -> packing -> bundle.

Modules: ``scoring`` (compute_scores, effective_weights, quantize), ``orchestrator``
(Retriever, SemanticTerm), ``completion`` (the exact completion of a preselection).
"""

from f09_memory.retrieval.orchestrator import Retriever, SemanticScorer, SemanticTerm
from f09_memory.retrieval.scoring import (
    SCORE_KEYS,
    ScoringContext,
    compute_scores,
    effective_weights,
    quantize,
)

__all__ = [
    "SCORE_KEYS",
    "Retriever",
    "ScoringContext",
    "SemanticScorer",
    "SemanticTerm",
    "compute_scores",
    "effective_weights",
    "quantize",
]
