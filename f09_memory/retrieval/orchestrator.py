"""The retrieval orchestrator (spec section 9).

1. candidates: the agent's live records with an unexpired TTL in a layer the purpose reads;
2. hybrid score of each candidate (``scoring``);
3. stable order: quantized score descending, then id ascending;
4. sequential packing under the token budget (``packing``);
5. under a compressing pressure state, packed records are shortened (first sentence + tags,
   at most ``ceil(tokens * ratio)`` tokens each);
6. ``memory:retrieval`` is emitted with the diagnostics.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from f09_memory.bus import EngineBus, RetrievalPerformed
from f09_memory.compression.strategies import compress_record, compressed_budgets
from f09_memory.config.config import MemoryConfig
from f09_memory.config.tables import PressureProfile
from f09_memory.errors import TokenBudgetUndefinedError
from f09_memory.protocols import TokenCounter
from f09_memory.retrieval.ranking import rank_and_pack
from f09_memory.retrieval.scoring import (
    SCORE_KEYS,
    ScoringContext,
    compute_scores,
    effective_weights,
    quantize,
)
from f09_memory.schema.enums import LAYERS_BY_CODE, PressureState, Purpose, Strategy
from f09_memory.schema.records import MemoryRecord
from f09_memory.schema.retrieval import (
    RetrievalDiagnostics,
    RetrievalRequest,
    RetrievedBundle,
    ScoreComponent,
)
from f09_memory.store.agent import CLAIM_STATUSES, AgentMemory

__all__ = ["RecordBuilder", "Retriever", "SemanticScorer", "SemanticTerm"]


@dataclass(frozen=True, slots=True)
class SemanticTerm:
    """Similarities for the candidates, or the reason the semantic term is unavailable."""

    similarities: NDArray[np.float64] | None
    fallback: str | None = None


SemanticScorer = Callable[
    [AgentMemory, NDArray[np.intp], RetrievalRequest], tuple[SemanticTerm, NDArray[np.intp]]
]
"""Returns the semantic term for an agent's candidate slots and the slots to score (the
candidates themselves, or a preselected subset for large agents); wired by the engine."""

RecordBuilder = Callable[[AgentMemory, int], MemoryRecord]
"""Builds the record in a slot (``core.records.RecordReader.build``)."""

_NO_SEMANTIC = SemanticTerm(None, "MEMORY_EMBEDDING_UNAVAILABLE")
_COMPRESSED_MAX = 8192


class Retriever:
    """Builds bundles for one engine; caches weight vectors and layer tables per request kind."""

    def __init__(self, config: MemoryConfig, bus: EngineBus, counter: TokenCounter,
                 build: RecordBuilder) -> None:
        self.config = config
        self.bus = bus
        self.counter = counter
        self._build = build
        self._compressed: dict[tuple[str, int, int, tuple[float, str, bool]], MemoryRecord] = {}
        self._weights: dict[
            tuple[Purpose, Strategy, PressureState, bool],
            tuple[NDArray[np.float64], tuple[ScoreComponent, ...]],
        ] = {}
        self._policy = {
            p: np.array([layer in config.scoring.layer_policy[p] for layer in LAYERS_BY_CODE])
            for p in Purpose
        }
        self._layer_w = {p: ScoringContext.layer_weight_array(config, p) for p in Purpose}

    def _weights_for(
        self, purpose: Purpose, strategy: Strategy, pressure: PressureState, semantic: bool
    ) -> tuple[NDArray[np.float64], tuple[ScoreComponent, ...]]:
        key = (purpose, strategy, pressure, semantic)
        hit = self._weights.get(key)
        if hit is None:
            w = effective_weights(self.config, purpose, strategy, pressure, semantic)
            parts = tuple(
                ScoreComponent.model_construct(key=k, weight=round(float(x), 9))
                for k, x in zip(SCORE_KEYS, w, strict=True)
            )
            hit = self._weights[key] = (w, parts)
        return hit

    def budget_for(self, request: RetrievalRequest, pressure: PressureState) -> int:
        """The token budget granted for ``request`` under ``pressure``.

        The request's budget clamped to ``max_context_tokens``, scaled by ``budget_scale``.

        Raises:
            TokenBudgetUndefinedError: The request has no positive ``max_tokens``.
        """
        if request.max_tokens is None:
            raise TokenBudgetUndefinedError(
                f"retrieval for agent {request.agent_id!r} has no token budget: set "
                "RetrievalRequest.max_tokens to a positive integer (the model's context share)",
                details={"agentId": request.agent_id},
            )
        cap = min(request.max_tokens, self.config.max_context_tokens)
        scale = self.config.scoring.pressure[pressure].budget_scale
        return max(1, int(cap * scale))

    def retrieve(
        self,
        am: AgentMemory | None,
        request: RetrievalRequest,
        now: int,
        pressure: PressureState,
        semantic: SemanticScorer | None = None,
    ) -> RetrievedBundle:
        """Build the bundle for ``request`` (see the module docstring for the steps).

        Ordering guarantee: records are in (quantized score desc, id asc) order; the same
        state and request give the same bundle on any machine.

        Raises:
            TokenBudgetUndefinedError: No positive token budget.
        """
        t0 = time.perf_counter()
        budget = self.budget_for(request, pressure)
        profile = self.config.scoring.pressure[pressure]
        records: list[MemoryRecord] = []
        total = 0
        truncated = False
        candidates = 0
        filtered = 0
        term = _NO_SEMANTIC
        if am is not None and am.live:
            hi = am.hi
            mask = am.alive[:hi] & (am.deadline[:hi] > now)
            mask &= self._policy[request.purpose][am.layer[:hi]]
            if request.statuses is not None:
                allowed = np.array([name in request.statuses for name in CLAIM_STATUSES])
                mask &= allowed[am.status[:hi]]
            else:
                mask &= am.status[:hi] == 0
            slots = np.flatnonzero(mask)
            candidates = int(slots.shape[0])
            filtered = am.live - candidates
            if candidates:
                if semantic is not None:
                    term, slots = semantic(am, slots, request)
                weights, _ = self._weights_for(
                    request.purpose, request.strategy, pressure, term.similarities is not None
                )
                ctx = ScoringContext(
                    now, weights, self._layer_w[request.purpose],
                    self.config.importance_boost, self.config.decay_half_life_ms,
                )
                scores = compute_scores(am, slots, ctx, term.similarities)
                q = quantize(scores, self.config.score_quantum)
                tokens = am.tokens[slots].astype(np.int64)
                ratio = profile.compression_ratio or self.config.throttle_compression_ratio
                if profile.compress:
                    tokens = compressed_budgets(tokens, ratio)
                chosen, total, truncated = rank_and_pack(q, am.key[slots], tokens, budget)
                picked = slots[chosen]
                if profile.compress:
                    records, total = self._compress(am, picked, ratio, profile)
                else:
                    build = self._build
                    records = [build(am, s) for s in picked.tolist()]
        _, parts = self._weights_for(
            request.purpose, request.strategy, pressure, term.similarities is not None
        )
        diagnostics = RetrievalDiagnostics.model_construct(
            candidate_count=candidates,
            filtered_count=filtered,
            scoring_breakdown=list(parts),
            time_ms=(time.perf_counter() - t0) * 1000.0,
            compression_applied=profile.compress and bool(records),
            pressure_state=pressure,
            budget=budget,
            semantic_fallback=term.fallback,
        )
        bundle = RetrievedBundle.model_construct(
            records=records,
            total_tokens=total,
            truncated=truncated,
            strategy_applied=request.strategy.value,
            diagnostics=diagnostics,
        )
        if self.bus.wants(RetrievalPerformed.name):
            self.bus.emit(
                RetrievalPerformed(
                    agent_id=request.agent_id,
                    purpose=request.purpose.value,
                    candidate_count=candidates,
                    used=len(records),
                    truncated=truncated,
                    pressure_state=pressure.value,
                )
            )
        return bundle

    def _compress(
        self, am: AgentMemory, slots: NDArray[np.intp], ratio: float, profile: PressureProfile
    ) -> tuple[list[MemoryRecord], int]:
        """Compressed forms of the records in ``slots`` (cached per record version)."""
        out: list[MemoryRecord] = []
        total = 0
        cache = self._compressed
        settings = (ratio, profile.compression_strategy, profile.drop_metadata)
        for slot in slots.tolist():
            ck = (am.agent_id, int(am.key[slot]), int(am.rev[slot]), settings)
            hit = cache.get(ck)
            if hit is None:
                hit = compress_record(
                    self._build(am, slot), strategy=profile.compression_strategy, ratio=ratio,
                    counter=self.counter, drop_metadata=profile.drop_metadata)
                if len(cache) >= _COMPRESSED_MAX:
                    cache.clear()
                cache[ck] = hit
            out.append(hit)
            total += hit.tokens_estimate or 0
        return out, total
