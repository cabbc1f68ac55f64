"""Retrieval as the engine serves it: requests checked and redacted, then scored.

``MemoryEngine.retrieve`` and ``retrieve_many`` delegate here. A request is parsed, its
agent id checked for private data (for an agent the store does not know yet), its text
filters redacted like stored text, its semantic inputs prepared (query texts embedded once
per distinct text, or handed to the async worker), then the ``Retriever`` scores and packs
(single path or the crowd's shared numpy passes) with the spatial layer's proximity term.

``trace`` is ``retrieve`` without its effects, for ``introspection.explain``: the same
checks (the same errors), the same path, with a :class:`RetrievalTrace` kept and no
event, no log line, and no query handed to the async embedding worker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.core.state import EngineState
from f09_memory.errors import InputInvalidError
from f09_memory.redaction.redactor import Redactor
from f09_memory.retrieval.digest import RetrievedBundles
from f09_memory.retrieval.filters import redact_filters
from f09_memory.retrieval.orchestrator import (
    ProximityScorer,
    RetrievalTrace,
    Retriever,
    SemanticTerm,
)
from f09_memory.retrieval.semantic import SemanticMemory
from f09_memory.schema.enums import PressureState
from f09_memory.schema.retrieval import RetrievalRequest, RetrievedBundle
from f09_memory.store.agent import AgentMemory

__all__ = ["RetrievalService", "check_query_vectors"]

logger = logging.getLogger("f09_memory")


def _bad_vectors(dim: int | None) -> InputInvalidError:
    expected = f"({dim},) or (n, {dim})" if dim is not None else "(dim,) or (n, dim)"
    return InputInvalidError(
        f"query_vectors must be a non-empty, finite, real array of shape {expected}",
        details={"field": "query_vectors"})


def check_query_vectors(requests: Sequence[RetrievalRequest], dim: int | None,
                        vectors: object = None) -> NDArray[np.float32] | None:
    """Check the query vectors of a retrieval before anything is served.

    A request's ``query_vector`` must have the provider's dimension ``dim`` (``None``: no
    provider, any dimension); the explicit ``vectors`` (``query_vectors=`` of ``retrieve``)
    must be a non-empty, finite, real ``(n, dim)`` or ``(dim,)`` array.

    Returns:
        ``vectors`` as a float32 ``(n, dim)`` array (``None`` if not given; a view of
        ``vectors`` when it already is float32: read, never written).

    Raises:
        InputInvalidError: A wrong dimension (the message names the request's index), or
            malformed ``vectors``.
    """
    if dim is not None:
        for i, r in enumerate(requests):
            if r.query_vector is not None and len(r.query_vector) != dim:
                raise InputInvalidError(
                    f"request {i}: query_vector has {len(r.query_vector)} values; the "
                    f"engine's embedder makes {dim}-dimensional vectors: embed the query "
                    "with the same model, or pass the query text instead",
                    details={"index": i, "field": "query_vector", "dim": dim})
    if vectors is None:
        return None
    if isinstance(vectors, str | bytes):
        raise _bad_vectors(dim)
    try:
        raw = np.asarray(vectors)
    except (TypeError, ValueError, OverflowError):  # ragged, or not array-like
        raise _bad_vectors(dim) from None
    if raw.dtype.kind not in "fiu" or raw.ndim not in (1, 2) or raw.size == 0:
        raise _bad_vectors(dim)
    if raw.dtype == np.float32:  # nothing to convert (the result is a view, never written)
        arr = raw.reshape(-1, raw.shape[-1])
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            arr = raw.astype(np.float32).reshape(-1, raw.shape[-1])
    if (dim is not None and arr.shape[1] != dim) or not np.isfinite(arr).all():
        raise _bad_vectors(dim)
    return arr


class RetrievalService:
    """The engine's retrieval front door (see the module docstring).

    Args:
        state: The engine state (store and pressure).
        retriever: Scoring and packing.
        semantic: The semantic term (query vectors, async queries).
        redactor: The ingest redactor (private ids refused, filters redacted).
        proximity: The spatial layer's proximity term (navigation with a position).
    """

    def __init__(self, state: EngineState, retriever: Retriever, semantic: SemanticMemory,
                 redactor: Redactor, proximity: ProximityScorer) -> None:
        self._state = state
        self._retriever = retriever
        self._semantic = semantic
        self._redactor = redactor
        self._proximity = proximity

    def _prepare(self, request: object,
                 redact: Callable[[str], str] | None = None) -> RetrievalRequest:
        req = RetrievalRequest.parse(request)
        if self._state.store.get(req.agent_id) is None:  # known agents were checked
            self._redactor.refuse_private(req.agent_id, field="agent_id")
        return redact_filters(req, redact or self._redactor.redact_text)

    def retrieve(self, request: RetrievalRequest | Mapping[str, Any], now: int,
                 query_vectors: NDArray[np.float32] | None) -> RetrievedBundle:
        """One agent's bundle (``MemoryEngine.retrieve``).

        Raises:
            TokenBudgetUndefinedError: ``max_tokens`` missing or not positive.
            InputInvalidError: A malformed request.
        """
        req = self._prepare(request)
        semantic = self._semantic
        vectors = check_query_vectors([req], semantic.query_dim, query_vectors)
        if semantic.pending is not None:  # async: a new text goes to the worker
            semantic.prepare_queries([req.query], now)
        bundle = self._serve(req, now, vectors, None)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("[MEM][RETRIEVE] agent=%s purpose=%s used=%d tokens=%d",
                         req.agent_id, req.purpose.value, len(bundle.records),
                         bundle.total_tokens)
        return bundle

    def trace(self, request: RetrievalRequest | Mapping[str, Any], now: int,
              redact: Callable[[str], str]) -> tuple[RetrievalRequest, PressureState,
                                                     RetrievalTrace]:
        """:meth:`retrieve` without effects, keeping its intermediate arrays.

        Args:
            request: The request (a model or a mapping in either spelling).
            now: Logical time.
            redact: Redacts the request's tag and attribute filters as the ingest
                redactor does (same patterns, key and mode) without counting matches in
                the engine's redaction diagnostics.

        Returns:
            The parsed (filter-redacted) request, the pressure it was served under, and the
            trace (its ``bundle`` is the one ``retrieve`` returns for the same state).

        Raises:
            TokenBudgetUndefinedError: ``max_tokens`` missing or not positive.
            InputInvalidError: A malformed request.
        """
        req = self._prepare(request, redact)
        vectors = check_query_vectors([req], self._semantic.query_dim)
        trace = RetrievalTrace()
        self._serve(req, now, vectors, trace)
        return req, req.pressure_state or self._state.pressure, trace

    def _serve(self, req: RetrievalRequest, now: int, vectors: NDArray[np.float32] | None,
               trace: RetrievalTrace | None) -> RetrievedBundle:
        semantic = self._semantic

        def term(
            am: AgentMemory, slots: NDArray[np.intp], r: RetrievalRequest
        ) -> tuple[SemanticTerm, NDArray[np.intp]]:
            return semantic.term(am, slots, r, vectors)

        return self._retriever.retrieve(self._state.store.get(req.agent_id), req, now,
                                        req.pressure_state or self._state.pressure, term,
                                        self._proximity, trace)

    def retrieve_many(self, requests: object, now: int, *,
                      hashes: bool = False) -> RetrievedBundles:
        """A frame's bundles in request order, hashed if asked (``MemoryEngine.retrieve_many``).

        Raises:
            TokenBudgetUndefinedError: A request without a positive ``max_tokens``.
            InputInvalidError: ``requests`` is not a list of requests, or one is malformed;
                ``hashes`` is not a bool.
        """
        if isinstance(requests, str | bytes | Mapping) or not isinstance(requests, Iterable):
            raise InputInvalidError("requests must be a list of RetrievalRequest",
                                    details={"field": "requests"})
        if not isinstance(hashes, bool):
            raise InputInvalidError("hashes must be True or False", details={"field": "hashes"})
        reqs = [self._prepare(r) for r in requests]
        store, budget_for = self._state.store, self._retriever.budget_for
        jobs = []
        for r in reqs:  # every budget is checked before any work
            pressure = r.pressure_state or self._state.pressure
            jobs.append((store.get(r.agent_id), r, pressure, budget_for(r, pressure)))
        check_query_vectors(reqs, self._semantic.query_dim)
        self._semantic.prepare_queries([r.query for r in reqs], now)  # one batched call
        return self._retriever.retrieve_many(jobs, now, self._semantic.term, self._proximity,
                                             hashes=hashes)
