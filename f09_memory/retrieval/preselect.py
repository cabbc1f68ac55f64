"""Preselection: the semantic term of an agent with many candidates, from its vector index.

An agent with more candidates than ``semantic_preselect_threshold`` (and an index) is not
scored against every vector: the candidates among the index's top K by similarity are
scored exactly, K sized from what the request's budget packs and the candidate count
(:func:`search_depth`); every other candidate's similarity is at most the K-th's plus a
slack (:func:`nearest`'s bound), and the orchestrator's exact completion
(``retrieval.completion``) scores every one whose score bound could still change the bundle,
deepening the search (the term's ``search``) when the bound is loose.
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np
from numpy.typing import NDArray

from f09_memory.config.config import MemoryConfig
from f09_memory.protocols import VectorIndex
from f09_memory.retrieval.job import SemanticTerm
from f09_memory.retrieval.similarity import exact_similarities
from f09_memory.schema.retrieval import RetrievalRequest
from f09_memory.store.agent import AgentMemory
from f09_memory.vector_index.hnsw import HnswIndex

__all__ = ["nearest", "preselection_depth", "preselected_term", "search_depth"]

_DEPTH_PER_PACKED = 4
"""A preselection's first index search returns this many records per record the budget
packs (times the square root of the candidates over ``_DEPTH_SCALE_FROM``, above that)."""
_DEPTH_SCALE_FROM = 20_000
_BOUND_SLACK = 1e-5
"""Added to an index's K-th similarity: the index's float32 kernels and ours may differ in
the last bits (about 1e-7 for unit vectors), so the bound holds for our exact values too."""


def nearest(am: AgentMemory, index: VectorIndex, candidate: NDArray[np.bool_],
            q: NDArray[np.float32], k: int) -> tuple[NDArray[np.intp], float]:
    """The candidate slots among the index's top ``k`` by similarity, and the others' bound.

    The bound is the lowest similarity among the top ``k`` plus :data:`_BOUND_SLACK` (every
    record outside them is at most as similar: exact for an exact index, approximate for
    HNSW), or 0 when the index returned all it holds.
    """
    keys, sims = index.search(q, min(len(index), k))
    bound = min(1.0, max(0.0, float(sims.min()) + _BOUND_SLACK)) if (
        keys.shape[0] and keys.shape[0] < len(index)) else 0.0
    wanted = keys.tolist()
    try:  # one C-level pass of dict lookups; every indexed key is a stored record's
        found = itemgetter(*wanted)(am.slot_of) if len(wanted) > 1 else (
            [am.slot_of[wanted[0]]] if wanted else [])
    except KeyError:
        found = [s for s in map(am.slot_of.get, wanted) if s is not None]
    near = np.asarray(found, dtype=np.intp)
    return near[candidate[near]], bound


def search_depth(config: MemoryConfig, am: AgentMemory, slots: NDArray[np.intp],
                 request: RetrievalRequest) -> int:
    """The first index search depth, sized from what the budget packs.

    ``_DEPTH_PER_PACKED`` records per record the budget packs, times
    ``sqrt(candidates / _DEPTH_SCALE_FROM)`` above that many candidates: the records a
    loose bound lets through grow with the candidates and shrink about as fast as the
    depth grows, so the cheapest depth grows with their square root. At least
    ``semantic_preselect_k``, at most ``semantic_preselect_k_max``. The budget is the
    request's before pressure scaling, the record size the candidates' mean over a
    strided sample: estimates that size the search, never the answer.
    """
    n = int(slots.shape[0])
    budget = float(min(request.max_tokens or 2**62, config.max_context_tokens))
    mean = max(1.0, float(am.tokens[slots[:: max(1, n // 1024)]].mean()))
    packable = budget / mean
    if request.limit is not None:
        packable = min(packable, float(request.limit))
    scale = max(1.0, (n / _DEPTH_SCALE_FROM) ** 0.5)
    want = max(config.semantic_preselect_k, int(_DEPTH_PER_PACKED * scale * packable))
    return min(config.semantic_preselect_k_max, want)


def preselection_depth(config: MemoryConfig, am: AgentMemory, index: VectorIndex,
                       slots: NDArray[np.intp], request: RetrievalRequest) -> int | None:
    """The first search depth when ``slots`` are worth preselecting from ``index``, else None.

    Worth it above ``semantic_preselect_threshold`` candidates and, unless
    ``semantic_preselect_min_ratio`` is 0, only from an HNSW index and with at least that
    ratio times the search depth (:func:`search_depth`) in candidates: an exact index's
    search scans every vector, as scoring every candidate does, and a deep search over
    few candidates costs more than scoring them all.
    """
    n = int(slots.shape[0])
    if n <= config.semantic_preselect_threshold:
        return None
    k = search_depth(config, am, slots, request)
    ratio = config.semantic_preselect_min_ratio
    if ratio and (not isinstance(index, HnswIndex) or n < ratio * k):
        return None
    return k


def preselected_term(am: AgentMemory, index: VectorIndex, slots: NDArray[np.intp],
                     q: NDArray[np.float32], k: int) -> tuple[SemanticTerm, NDArray[np.intp]]:
    """The semantic term of ``slots`` preselected from ``index``, and the slots scored now.

    ``k`` is the first search depth (:func:`preselection_depth`). The slots scored now are
    the preselected ones. The term carries the left-out candidates (``rest``), their
    similarity bound, the query and a ``search`` that deepens the index search, for the
    orchestrator's completion.
    """
    candidate = np.zeros(am.hi, dtype=np.bool_)
    candidate[slots] = True

    def search(depth: int) -> tuple[NDArray[np.intp], float]:
        return nearest(am, index, candidate, q, depth)

    near, bound = search(k)
    left_out = candidate.copy()
    left_out[near] = False
    rest = slots[left_out[slots]]
    return SemanticTerm(exact_similarities(am, near, q), None, rest, bound, q, search, k), near
