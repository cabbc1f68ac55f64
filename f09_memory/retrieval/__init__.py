"""Retrieval (index 8): candidates -> hybrid score -> stable order -> packing -> bundle.

Modules: ``filters`` (candidate masks, exclusion reasons), ``scoring`` (compute_scores,
score_terms, effective_weights, quantize), ``ranking`` (stable order and packing),
``orchestrator`` (Retriever), ``job`` (SemanticTerm, RetrievalTrace: a retrieval's
intermediate arrays for explanations), ``completion`` (the exact completion of a
preselection), ``similarity`` (the semantic term of stored vectors; a repeated query's
similarities kept per agent, recomputed only where a record changed), ``service`` (the
engine's front door).
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
