"""``explain``: a retrieval's own intermediate arrays, turned into an explanation.

The retrieval runs once, traced (``RetrievalService.trace``: the same checks, candidate
mask, semantic term, scoring, order and packing as ``retrieve``, with no event and no
query handed to an async worker). This module adds only what a retrieval does not need:

- why each live record that is not a candidate was left out (``filters.exclusion_reasons``,
  the candidate mask's own tests);
- each scored candidate's terms (``scoring.score_terms``) and its rank in the full order
  (``ranking.full_order``: quantized score descending, then id);
- for a preselected large agent, the exact scores of the candidates the preselection did
  not score (``compute_scores`` with the exact similarities, the same function and
  context: the explanation ranks every candidate; the bundle is the retrieval's);
- why a scored candidate is not in the bundle: ``limit`` once the bundle holds ``limit``
  records, else ``budget`` (it did not fit the room left).

Runtime complexity: the retrieval's, plus O(n log n) numpy for n candidates; the
per-candidate objects are built on first access (``Explanation.candidates``).
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np
from numpy.typing import NDArray

from f09_memory.canonical import quantize
from f09_memory.introspection.explanation import CandidateTable, Explanation
from f09_memory.introspection.views import RedactMany
from f09_memory.retrieval.filters import EXCLUSION_REASONS, exclusion_reasons
from f09_memory.retrieval.job import RetrievalTrace
from f09_memory.retrieval.orchestrator import NO_BUDGET, Retriever
from f09_memory.retrieval.ranking import full_order
from f09_memory.retrieval.scoring import (
    PROXIMITY_KEY,
    SCORE_KEYS,
    compute_scores,
    effective_weights,
    score_terms,
)
from f09_memory.retrieval.similarity import exact_similarities
from f09_memory.schema.enums import PressureState
from f09_memory.schema.retrieval import RetrievalRequest
from f09_memory.store.agent import AgentMemory

__all__ = ["BUDGET", "LIMIT", "explanation"]

BUDGET = 5
"""Exclusion code: scored, did not fit the budget left (``EXCLUDED[5] == "budget"``)."""
LIMIT = 6
"""Exclusion code: scored, after the bundle reached the request's limit."""

_REASON_ORDER = np.argsort(np.argsort(np.array(EXCLUSION_REASONS)))
"""Rank of each reason code's name in alphabetical order (excluded records sort by it)."""


def _scored(retriever: Retriever, am: AgentMemory, request: RetrievalRequest,
            pressure: PressureState, trace: RetrievalTrace,
            ) -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64],
                       NDArray[np.int64], NDArray[np.int64], NDArray[np.int8]]:
    """The candidates in rank order, with their terms, scores, costs and exclusion codes.

    Returns ``(slots, terms, scores, quantized, tokens, codes)`` (code 0: in the bundle).
    """
    cands, ctx = trace.candidates, trace.context
    assert cands is not None and ctx is not None and trace.scores is not None
    term = trace.term
    if term.rest is None:  # every candidate was scored: the retrieval's own arrays
        sims, near, scores = term.similarities, trace.proximity, trace.scores
    else:  # a preselection: score the others exactly, as a full scoring would
        assert term.query is not None and trace.proximities is not None
        sims = exact_similarities(am, cands, term.query)
        near = trace.proximities(am, cands)
        scores = compute_scores(am, cands, ctx, sims, near)
    q = quantize(scores, retriever.config.score_quantum)
    order = full_order(q, am.key[cands])
    slots = cands[order]
    terms = score_terms(am, slots, ctx, None if sims is None else sims[order],
                        None if near is None else near[order])
    included = np.isin(slots, trace.picked if trace.picked is not None else slots[:0])
    before: NDArray[np.int64] = np.cumsum(included) - included
    limit = request.limit
    codes = np.where(included, 0, np.where(
        (before >= limit) if limit is not None else False, LIMIT, BUDGET)).astype(np.int8)
    tokens = retriever.packing_tokens(am.tokens[slots], pressure)
    return slots, terms, scores[order], q[order], tokens, codes


def explanation(retriever: Retriever, am: AgentMemory | None, request: RetrievalRequest,
                pressure: PressureState, trace: RetrievalTrace, now: int,
                redact: RedactMany | None) -> Explanation:
    """The :class:`Explanation` of a traced retrieval (see the module docstring).

    Args:
        retriever: The engine's retriever (its layer policy, packing costs, config).
        am: The agent's memory (``None``: an agent without records).
        request: The parsed request the trace served.
        pressure: The pressure it was served under.
        trace: The traced retrieval's arrays.
        now: The logical time it was served at.
        redact: Redacts the candidates' contents when they are built (``None``: as stored).
    """
    bundle = trace.bundle
    assert bundle is not None
    diag = bundle.diagnostics
    positioned = len(diag.scoring_breakdown) == 5
    names = (*SCORE_KEYS, PROXIMITY_KEY) if positioned else SCORE_KEYS
    weights = trace.context.weights if trace.context is not None else effective_weights(
        retriever.config, request.purpose, request.strategy, pressure,
        trace.term.similarities is not None, positioned)
    table = None
    if am is not None and am.live:
        k = weights.shape[0]
        if trace.context is not None and trace.candidates is not None:
            slots, terms, scores, q, tokens, codes = _scored(retriever, am, request, pressure,
                                                            trace)
        else:
            slots, terms = np.zeros(0, dtype=np.intp), np.zeros((0, k))
            scores, q, tokens = np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64)
            codes = np.zeros(0, np.int8)
        scored = int(slots.shape[0])
        left, why = exclusion_reasons(am, request, now, retriever.layer_policy(request))
        if left.shape[0]:
            sort = np.lexsort((am.key[left], _REASON_ORDER[why]))
            left, why = left[sort], why[sort]
            slots = np.concatenate((slots, left))
            terms = np.concatenate((terms, np.zeros((left.shape[0], k))))
            scores = np.concatenate((scores, np.zeros(left.shape[0])))
            q = np.concatenate((q, np.zeros(left.shape[0], np.int64)))
            tokens = np.concatenate((tokens, retriever.packing_tokens(am.tokens[left],
                                                                      pressure)))
            codes = np.concatenate((codes, why))
        rows = slots.tolist()
        texts = list(itemgetter(*rows)(am.content)) if len(rows) > 1 else [
            am.content[s] or "" for s in rows]
        table = CandidateTable(
            am.agent_id, am.key[slots], am.layer[slots], names, weights, terms, scores, q,
            scored, codes == 0, codes, tokens, texts, redact)
    budget = trace.budget
    return Explanation.of({
        "agent_id": request.agent_id,
        "purpose": request.purpose,
        "strategy": request.strategy,
        "pressure_state": pressure,
        "now": now,
        "budget": None if budget == NO_BUDGET else budget,
        "weights": dict(zip(names, weights.tolist(), strict=True)),
        "semantic_fallback": diag.semantic_fallback,
        "candidate_count": diag.candidate_count,
        "filtered_count": diag.filtered_count,
        "bundle_ids": [r.id for r in bundle.records],
        "total_tokens": bundle.total_tokens,
        "truncated": bundle.truncated,
        "compression_applied": diag.compression_applied,
    }, table)
