"""One request on its way through the retriever, and what it leaves for an explanation.

- :class:`SemanticTerm`: the candidates' similarities, or why the semantic term is off;
- the callables the engine wires in: :data:`SemanticScorer`, :data:`ProximityScorer`,
  :data:`RecordsBuilder`, :data:`RecordsDigester`;
- :class:`Job`: one request of a ``retrieve`` or of a frame's ``retrieve_many``;
- :class:`RetrievalTrace`: the intermediate arrays of one ``retrieve`` (candidate slots,
  scoring context, scores, quantized scores, packing costs, picked slots), kept when the
  caller passes one (``Retriever.retrieve(..., trace=)``). ``introspection.explain`` reads
  them, so an explanation is the retrieval's own computation, not a second copy of it. A
  traced retrieval emits no ``memory:retrieval`` event.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from f09_memory.retrieval.scoring import ScoringContext
from f09_memory.schema.enums import PressureState
from f09_memory.schema.records import MemoryRecord
from f09_memory.schema.retrieval import RetrievalRequest, RetrievedBundle
from f09_memory.store.agent import AgentMemory

__all__ = [
    "NO_SEMANTIC",
    "Job",
    "ProximityScorer",
    "RecordsBuilder",
    "RecordsDigester",
    "RetrievalTrace",
    "SemanticScorer",
    "SemanticTerm",
]


@dataclass(frozen=True, slots=True)
class SemanticTerm:
    """Similarities for the candidates, or the reason the semantic term is unavailable."""

    similarities: NDArray[np.float64] | None
    fallback: str | None = None
    rest: NDArray[np.intp] | None = None
    """Candidates left out by a preselection, ascending (their similarity is at most
    ``bound``)."""
    bound: float = 1.0
    query: NDArray[np.float32] | None = None
    """The query centroid (to score members of ``rest`` exactly when they may matter)."""
    search: Callable[[int], tuple[NDArray[np.intp], float]] | None = None
    """Deepens a preselection: ``search(k)`` gives the candidates among the index's top
    ``k`` by similarity and the similarity bound of the others."""
    depth: int = 0
    """The ``k`` of the index search that chose the scored candidates and ``bound``."""


NO_SEMANTIC = SemanticTerm(None, "MEMORY_EMBEDDING_UNAVAILABLE")
"""The term of a request no semantic scorer has seen (no candidates, no scorer)."""

SemanticScorer = Callable[
    [AgentMemory, NDArray[np.intp], RetrievalRequest], tuple[SemanticTerm, NDArray[np.intp]]
]
"""Returns the semantic term for an agent's candidate slots and the slots to score (the
candidates themselves, or a preselected subset for large agents); wired by the engine."""

ProximityScorer = Callable[
    [AgentMemory, NDArray[np.intp], tuple[float, float, float]], NDArray[np.float64]
]
"""Returns the proximity term of an agent's slots to a position (``(x, y, z)``); wired by
the engine (``spatial.SpatialService.proximity``)."""

RecordsBuilder = Callable[[AgentMemory, NDArray[np.intp]], list[MemoryRecord]]
"""Builds the records in some slots (``core.records.RecordReader.build_many``)."""

RecordsDigester = Callable[[AgentMemory, NDArray[np.intp], Sequence[MemoryRecord]], bytes]
"""The record digests of some slots' records, concatenated (``RecordReader.digests``)."""


@dataclass(slots=True)
class RetrievalTrace:
    """The intermediate arrays of one traced ``retrieve`` (see the module docstring).

    Every slot array indexes the agent's columns; ``None`` where the retrieval stopped
    before that step (an unknown agent, no candidates).
    """

    candidates: NDArray[np.intp] | None = None
    """The candidate slots (live, TTL not passed, layer policy, status, filters), ascending."""
    term: SemanticTerm = NO_SEMANTIC
    """The semantic term the scored slots got."""
    context: ScoringContext | None = None
    """Weights, time and tables of the scoring."""
    scored: NDArray[np.intp] | None = None
    """The slots scored in full: the candidates, or a preselection's subset."""
    scores: NDArray[np.float64] | None = None
    """``compute_scores`` of ``scored`` (float, before quantization), aligned."""
    proximity: NDArray[np.float64] | None = None
    """The proximity term of ``scored`` (``None`` without a position), aligned."""
    proximities: Callable[[AgentMemory, NDArray[np.intp]], NDArray[np.float64] | None] | None = (
        None)
    """The proximity term of any slots (the request's position; ``None`` without one)."""
    ranked: NDArray[np.intp] | None = None
    """The slots the packing saw (``scored`` plus what an exact completion added)."""
    quantized: NDArray[np.int64] | None = None
    """Quantized scores of ``ranked``, aligned."""
    tokens: NDArray[np.int64] | None = None
    """Packing costs of ``ranked`` (compressed budgets under a compressing pressure)."""
    picked: NDArray[np.intp] | None = None
    """The bundle's slots, in bundle order."""
    budget: int = 0
    """The token budget granted (``NO_BUDGET`` for a limit without ``max_tokens``)."""
    bundle: RetrievedBundle | None = None
    """The bundle ``retrieve`` returned."""


@dataclass(slots=True)
class Job:
    """One request of a ``retrieve`` or of a frame, on its way through the retriever."""

    am: AgentMemory | None
    request: RetrievalRequest
    pressure: PressureState
    budget: int
    t0: float
    term: SemanticTerm = NO_SEMANTIC
    candidates: int = 0
    slots: NDArray[np.intp] | None = None
    near: tuple[float, float, float] | None = None
    """The request's position as ``(x, y, z)`` when it has one and a scorer is wired."""
    proximity: ProximityScorer | None = None
    trace: RetrievalTrace | None = None
    """Where a traced ``retrieve`` keeps its intermediate arrays (``None``: not traced)."""
    picked: NDArray[np.intp] | None = None
    """The bundle's slots, in bundle order, once it is built (``None``: no records)."""

    def locate(self, proximity: ProximityScorer | None) -> None:
        """Take the request's position (padded to 3-D) when ``proximity`` can score it."""
        position = self.request.position
        if position is not None and proximity is not None:
            self.near = (position[0], position[1], position[2] if len(position) == 3 else 0.0)
            self.proximity = proximity

    def proximities(self, am: AgentMemory,
                    slots: NDArray[np.intp]) -> NDArray[np.float64] | None:
        """The proximity term of ``slots``, or ``None`` without a position."""
        if self.near is None or self.proximity is None:
            return None
        return self.proximity(am, slots, self.near)
