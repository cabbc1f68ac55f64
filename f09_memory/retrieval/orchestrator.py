"""The retrieval orchestrator (spec section 9), for one agent or a whole crowd per frame.

1. candidates: the agent's live records with an unexpired TTL in a layer the purpose reads
   (or the request's ``layers``), with an allowed status, passing the request's filters;
2. hybrid score of each candidate (``scoring``);
3. stable order: quantized score descending, then id ascending;
4. sequential packing under the token budget (``packing``), at most ``limit`` records;
5. under a compressing pressure state, packed records are shortened (first sentence + tags,
   at most ``ceil(tokens * ratio)`` tokens each; cached per record version by
   ``compressed.CompressedRecords``);
6. ``memory:retrieval`` is emitted with the diagnostics.

A request with a ``position`` adds the proximity term (``scoring``): the engine passes a
:data:`ProximityScorer` (``spatial.SpatialService.proximity``) that gives each candidate's
proximity; without a position nothing of it runs and the scores are the four-term ones.

``retrieve_many`` does steps 1-4 for every request of a frame in shared numpy passes: the
agents' columns are concatenated once, the candidate mask and the scores are computed over
all of them with per-row weights, and the packable prefixes of all agents are cut, sorted
and packed row-wise (``ranking.rank_and_pack_many``); only building the records and the
bundle is per agent. Its bundles are identical to ``retrieve``'s, one by one.

``retrieve(..., trace=RetrievalTrace())`` keeps the intermediate arrays of steps 1-4 (see
``retrieval.job``) and emits nothing: ``introspection.explain`` is built on them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.bus import EngineBus, RetrievalPerformed
from f09_memory.canonical import quantize
from f09_memory.compression.strategies import compressed_budgets
from f09_memory.config.config import MemoryConfig
from f09_memory.config.tables import PressureProfile
from f09_memory.decay.decay import recency_scores
from f09_memory.errors import TokenBudgetUndefinedError
from f09_memory.protocols import TokenCounter
from f09_memory.retrieval.completion import Completion
from f09_memory.retrieval.compressed import CompressedRecords
from f09_memory.retrieval.crowd import CrowdRows, FrameColumns
from f09_memory.retrieval.digest import RetrievedBundles, hash_with_digests
from f09_memory.retrieval.filters import ALL_LAYERS, candidate_mask
from f09_memory.retrieval.job import (
    Job,
    ProximityScorer,
    RecordsBuilder,
    RecordsDigester,
    RetrievalTrace,
    SemanticScorer,
    SemanticTerm,
)
from f09_memory.retrieval.ranking import NO_LIMIT, rank_and_pack, rank_and_pack_many
from f09_memory.retrieval.scoring import (
    PROXIMITY_KEY,
    SCORE_KEYS,
    ScoringContext,
    compute_scores,
    effective_weights,
)
from f09_memory.retrieval.similarity import exact_similarities
from f09_memory.schema.base import trusted_factory
from f09_memory.schema.enums import LAYERS_BY_CODE, PressureState, Purpose, Strategy
from f09_memory.schema.records import MemoryRecord
from f09_memory.schema.retrieval import (
    RetrievalDiagnostics,
    RetrievalRequest,
    RetrievedBundle,
    ScoreComponent,
)
from f09_memory.store.agent import AgentMemory

__all__ = [
    "NO_BUDGET",
    "ProximityScorer",
    "RecordsBuilder",
    "RetrievalTrace",
    "Retriever",
    "SemanticScorer",
    "SemanticTerm",
]


NO_BUDGET = 2**62
"""The packing budget of a request with ``limit`` and no ``max_tokens``."""

_STRATEGY_VALUES = {strategy: strategy.value for strategy in Strategy}
_PURPOSE_VALUES = {purpose: purpose.value for purpose in Purpose}
_PRESSURE_VALUES = {pressure: pressure.value for pressure in PressureState}
_new_diagnostics = trusted_factory(RetrievalDiagnostics)
_new_bundle = trusted_factory(RetrievedBundle)


class Retriever:
    """Builds bundles for one engine; caches weight vectors and layer tables per request kind."""

    def __init__(self, config: MemoryConfig, bus: EngineBus, counter: TokenCounter,
                 build: RecordsBuilder, digests: RecordsDigester) -> None:
        self.config = config
        self.bus = bus
        self.counter = counter
        self._build = build
        self._digests = digests
        self._compressed = CompressedRecords(build, counter)
        self._frame = FrameColumns()
        """The last crowd frame's columns (``retrieve_many`` reuses the unchanged agents')."""
        self._weights: dict[
            tuple[Purpose, Strategy, PressureState, bool, bool],
            tuple[NDArray[np.float64], tuple[ScoreComponent, ...]],
        ] = {}
        self._policy = {
            p: np.array([layer in config.scoring.layer_policy[p] for layer in LAYERS_BY_CODE])
            for p in Purpose
        }
        self._layer_w = {p: ScoringContext.layer_weight_array(config, p) for p in Purpose}
        self._profiles = config.scoring.pressure

    def clear(self) -> None:
        """Drop what is cached for the store: compressed records, the last frame's columns.

        Called when the store was restored.
        """
        self._compressed.clear()
        self._frame = FrameColumns()

    def _weights_for(
        self, purpose: Purpose, strategy: Strategy, pressure: PressureState, semantic: bool,
        positioned: bool = False,
    ) -> tuple[NDArray[np.float64], tuple[ScoreComponent, ...]]:
        key = (purpose, strategy, pressure, semantic, positioned)
        hit = self._weights.get(key)
        if hit is None:
            w = effective_weights(self.config, purpose, strategy, pressure, semantic,
                                  positioned)
            names = (*SCORE_KEYS, PROXIMITY_KEY) if positioned else SCORE_KEYS
            parts = tuple(
                ScoreComponent.model_construct(key=k, weight=round(float(x), 9))
                for k, x in zip(names, w, strict=True)
            )
            hit = self._weights[key] = (w, parts)
        return hit

    def budget_for(self, request: RetrievalRequest, pressure: PressureState) -> int:
        """The token budget granted for ``request`` under ``pressure``.

        The request's budget clamped to ``max_context_tokens``, scaled by ``budget_scale``;
        :data:`NO_BUDGET` for a request with ``limit`` and no ``max_tokens``.

        Raises:
            TokenBudgetUndefinedError: The request has neither ``max_tokens`` nor ``limit``.
        """
        if request.max_tokens is None:
            if request.limit is not None:
                return NO_BUDGET
            raise TokenBudgetUndefinedError(
                "the retrieval has no token budget: set RetrievalRequest.max_tokens to a "
                "positive integer (the model's context share), or set limit for the top-k "
                "records", details={"field": "max_tokens"},
            )
        cap = min(request.max_tokens, self.config.max_context_tokens)
        scale = self.config.scoring.pressure[pressure].budget_scale
        return max(1, int(cap * scale))

    # ------------------------------------------------------------------ one agent
    def layer_policy(self, request: RetrievalRequest) -> NDArray[np.bool_]:
        """Allowed flag per layer code: the purpose's policy, all when ``layers`` is given."""
        return ALL_LAYERS if request.layers is not None else self._policy[request.purpose]

    def retrieve(
        self,
        am: AgentMemory | None,
        request: RetrievalRequest,
        now: int,
        pressure: PressureState,
        semantic: SemanticScorer | None = None,
        proximity: ProximityScorer | None = None,
        trace: RetrievalTrace | None = None,
    ) -> RetrievedBundle:
        """Build the bundle for ``request`` (see the module docstring for the steps).

        Ordering guarantee: records are in (quantized score desc, id asc) order; the same
        state and request give the same bundle on any machine.

        Args:
            am: The agent's memory (``None``: an agent without records).
            request: The request (parsed).
            now: Logical time.
            pressure: The pressure state in force for the request.
            semantic: The semantic scorer (``None``: no semantic term).
            proximity: The proximity scorer (for a request with a position).
            trace: Keeps the intermediate arrays (``introspection.explain``); a traced
                retrieval emits no ``memory:retrieval`` event.

        Raises:
            TokenBudgetUndefinedError: No positive token budget and no limit.
        """
        job = Job(am, request, pressure, self.budget_for(request, pressure),
                  time.perf_counter(), trace=trace)
        job.locate(proximity)
        if am is None or not am.live:
            return self._finish(job, None, 0, False)
        slots = candidate_mask(am, request, now, self.layer_policy(request)).nonzero()[0]
        if trace is not None:
            trace.candidates = slots
        job.candidates = int(slots.shape[0])
        if not job.candidates:
            return self._finish(job, None, 0, False)
        if semantic is not None:
            job.term, slots = semantic(am, slots, request)
        return self._score_and_pack(am, job, slots, now)

    def _score_and_pack(self, am: AgentMemory, job: Job, slots: NDArray[np.intp],
                        now: int) -> RetrievedBundle:
        """Score ``slots`` (with ``job.term`` already computed for them) and pack."""
        request, pressure = job.request, job.pressure
        weights, _ = self._weights_for(request.purpose, request.strategy, pressure,
                                       job.term.similarities is not None, job.near is not None)
        ctx = ScoringContext(now, weights, self._layer_w[request.purpose],
                             self.config.importance_boost, self.config.decay_half_life_ms)
        near = job.proximities(am, slots)
        scores = compute_scores(am, slots, ctx, job.term.similarities, near)
        q = quantize(scores, self.config.score_quantum)
        tokens = self.packing_tokens(am.tokens[slots], pressure)
        trace = job.trace
        if trace is not None:
            trace.term, trace.context, trace.scored, trace.scores = job.term, ctx, slots, scores
            trace.proximity, trace.proximities = near, job.proximities
        if job.term.rest is not None and job.term.rest.shape[0]:
            slots, q, tokens = self._complete_preselection(am, job, slots, q, tokens, ctx)
        job.slots = slots
        if trace is not None:
            trace.ranked, trace.quantized, trace.tokens = slots, q, tokens
        return self._bundle(job, q, tokens)

    def _complete_preselection(
        self, am: AgentMemory, job: Job, slots: NDArray[np.intp], q: NDArray[np.int64],
        tokens: NDArray[np.int64], ctx: ScoringContext,
    ) -> tuple[NDArray[np.intp], NDArray[np.int64], NDArray[np.int64]]:
        """Score exactly every left-out candidate that could change the bundle.

        See :mod:`~f09_memory.retrieval.completion`: the bundle equals full scoring whenever
        the preselection's similarity bound holds (always with an exact index) and at most
        ``semantic_exact_extra_max`` left-out candidates need scoring; a loose bound
        deepens the index search (up to ``semantic_preselect_k_max``).
        """
        term = job.term
        assert term.rest is not None and term.query is not None
        rest, query = term.rest, term.query
        completion = Completion(
            rest=rest, base=compute_scores(am, rest, ctx, None, job.proximities(am, rest)),
            rest_tokens=self.packing_tokens(am.tokens[rest], job.pressure), keys=am.key,
            sw=float(ctx.weights[2]), bound=term.bound, depth=term.depth,
            quantum=self.config.score_quantum)
        return completion.run(
            slots, q, tokens, budget=job.budget, limit=job.request.limit,
            allowance=self.config.semantic_exact_extra_max,
            depth_max=self.config.semantic_preselect_k_max,
            similarities=lambda extra: exact_similarities(am, extra, query),
            search=term.search)

    # ------------------------------------------------------------------ a crowd
    def retrieve_many(
        self,
        requests: Sequence[tuple[AgentMemory | None, RetrievalRequest, PressureState, int]],
        now: int,
        semantic: SemanticScorer | None = None,
        proximity: ProximityScorer | None = None,
        hashes: bool = False,
    ) -> RetrievedBundles:
        """Bundles for a frame's requests, in order, identical to :meth:`retrieve` each.

        Each request comes with its agent's memory, its pressure and its budget as
        :meth:`budget_for` granted it (the caller checks every budget before the frame).
        The candidate masks and scores of all agents are computed in shared numpy passes
        over their concatenated columns; the semantic term (where a request has a query) is
        per agent. With ``hashes`` the result also holds each bundle's ``bundle_hash``
        (:meth:`bundle_hash`).
        """
        t0 = time.perf_counter()
        jobs = [Job(am, req, p, budget, t0) for am, req, p, budget in requests]
        for job in jobs:
            job.locate(proximity)
        live = [i for i, j in enumerate(jobs) if j.am is not None and j.am.live]
        if not live:
            return self._frame_result(jobs, [self._finish(j, None, 0, False) for j in jobs],
                                      hashes)
        ams = [am for am in (jobs[i].am for i in live) if am is not None]
        crowd = CrowdRows(ams, self._frame)
        cat = crowd.column
        layer = cat("layer")
        mask = crowd.mask([jobs[i].request for i in live], self.layer_policy, layer, now)
        slot_of_row: NDArray[np.intp] | None = None  # when every row qualifies: on demand
        if mask.all():  # no gather needed when all rows qualify
            rows, bounds = None, crowd.starts
            ramp = np.arange(int(crowd.his.max()), dtype=np.intp)
        else:  # rows stay grouped by agent: per-agent counts, no per-row gather
            rows = np.flatnonzero(mask)
            counts = np.add.reduceat(mask, crowd.starts[:-1], dtype=np.intp)
            bounds = np.concatenate(([0], np.cumsum(counts)))
            slot_of_row = rows - np.repeat(crowd.starts[:-1], counts)

        def job_of() -> NDArray[np.intp]:
            """The agent (frame position) of each candidate row."""
            return crowd.row_agent if rows is None else np.repeat(
                np.arange(len(live), dtype=np.intp), np.diff(bounds))

        n_rows = mask.shape[0] if rows is None else rows.shape[0]

        def slots_between(a: int, b: int) -> NDArray[np.intp]:
            """The slots of rows ``a:b`` (one agent's)."""
            return ramp[: b - a] if slot_of_row is None else slot_of_row[a:b]

        sims = np.zeros(n_rows if semantic is not None else 0, dtype=np.float64)
        any_sims = False
        kinds: dict[tuple[Purpose, Strategy, PressureState, bool, bool], int] = {}
        prox: NDArray[np.float64] | None = None
        kind_of: list[int] = []
        keep = np.ones(n_rows, dtype=np.bool_)
        solo: dict[int, NDArray[np.intp]] = {}
        edges = bounds.tolist()
        for n, i in enumerate(live):
            job = jobs[i]
            a, b = edges[n], edges[n + 1]
            job.candidates = b - a
            if semantic is not None and b > a:
                job.term, chosen = semantic(ams[n], slots_between(a, b), job.request)
                if job.term.rest is not None:  # a preselected large agent: the single path
                    solo[i] = chosen
                    keep[a:b] = False
                elif job.term.similarities is not None:
                    sims[a:b] = job.term.similarities
                    any_sims = True
            request = job.request
            if job.near is not None and b > a and i not in solo:
                if prox is None:
                    prox = np.zeros(n_rows, dtype=np.float64)
                prox[a:b] = job.proximities(ams[n], slots_between(a, b))
            kind = (request.purpose, request.strategy, job.pressure,
                    job.term.similarities is not None, job.near is not None)
            index = kinds.get(kind)
            if index is None:
                index = kinds[kind] = len(kinds)
            kind_of.append(index)
        # One weight row and one layer-weight row per kind of request in the frame (rows of
        # requests without a position get a zero proximity weight when others have one).
        rows_w = [self._weights_for(*kind)[0] for kind in kinds]
        if any(kind[4] for kind in kinds):
            rows_w = [w if w.shape[0] == 5 else np.append(w, 0.0) for w in rows_w]
        weights = np.stack(rows_w)
        layer_w = np.stack([self._layer_w[kind[0]] for kind in kinds])

        def pick(name: str) -> NDArray[Any]:
            column = cat(name)
            return column if rows is None else column[rows]

        importance = pick("importance").astype(np.float64, copy=False)
        flagged = pick("flagged")
        boosted = np.where(flagged, importance * self.config.importance_boost,
                           importance) if flagged.any() else importance
        rows_layer = layer if rows is None else layer[rows]
        score = recency_scores(now, pick("anchor"), self.config.decay_half_life_ms)
        # Terms with a zero weight add exact zeros and are skipped (the same floats).
        if (weights == weights[0]).all() and (layer_w == layer_w[0]).all():
            iw, rw, sw, pw = weights[0][:4].tolist()  # one row for the frame
            score *= rw
            score += iw * boosted
            if pw:
                score += (pw * layer_w[0]).take(rows_layer)
            if sw and any_sims:
                score += sw * sims
            if prox is not None and weights[0][4]:
                score += float(weights[0][4]) * prox
        else:  # rows are grouped by agent: each weight is its agent's, repeated (1-D, in C)
            per_agent = np.diff(bounds)
            agent_kind = np.array(kind_of, dtype=np.intp)
            agent_w = weights[agent_kind]

            def weight(column: int) -> NDArray[np.float64]:
                return np.repeat(agent_w[:, column], per_agent)

            score *= weight(1)
            score += weight(0) * boosted
            cell = np.repeat(agent_kind * layer_w.shape[1], per_agent)
            cell += rows_layer
            score += (weights[:, 3:4] * layer_w).ravel().take(cell)
            if any_sims:
                score += weight(2) * sims
            if prox is not None:
                score += weight(4) * prox
        score *= self.config.score_quantum  # quantize in place: one pass fewer
        np.rint(score, out=score)
        q = score.astype(np.int64)
        tokens = self._crowd_tokens(pick("tokens"), jobs, live, job_of)
        keys = pick("key")
        sizes = np.diff(bounds)
        if solo:  # preselected agents were served alone: leave their rows out
            sizes[[n for n, i in enumerate(live) if i in solo]] = 0
            if slot_of_row is None:
                slot_of_row = np.arange(n_rows) - crowd.starts[crowd.row_agent]
            q, keys, tokens, slot_of_row = q[keep], keys[keep], tokens[keep], slot_of_row[keep]
        budgets = np.array([jobs[i].budget for i in live], dtype=np.int64)
        limits = np.array([NO_LIMIT if jobs[i].request.limit is None else jobs[i].request.limit
                           for i in live], dtype=np.int64)
        picked, counts, totals = rank_and_pack_many(
            q, keys, tokens, np.concatenate(([0], np.cumsum(sizes))), budgets, limits)
        picked_slots = (picked - crowd.starts[crowd.agent_of(picked)] if slot_of_row is None
                        else slot_of_row[picked])
        ends = np.cumsum(counts).tolist()
        packed = zip(ends, counts.tolist(), totals.tolist(), sizes.tolist(), strict=True)
        out: list[RetrievedBundle] = []
        live_at = dict(zip(live, packed, strict=True))
        for i, job in enumerate(jobs):
            alone = solo.get(i)
            if alone is not None:  # its term is computed: score and pack it alone
                assert job.am is not None
                out.append(self._score_and_pack(job.am, job, alone, now))
                continue
            at = live_at.get(i)
            if at is None or not at[3]:
                out.append(self._finish(job, None, 0, False))
                continue
            end, count, total, size = at
            out.append(self._finish(job, picked_slots[end - count:end], total, count < size))
        return self._frame_result(jobs, out, hashes)

    def _frame_result(self, jobs: list[Job], bundles: list[RetrievedBundle],
                      hashes: bool) -> RetrievedBundles:
        out = RetrievedBundles(bundles)
        if hashes:
            out.hashes = list(map(self.bundle_hash, jobs, bundles))
        return out

    def bundle_hash(self, job: Job, bundle: RetrievedBundle) -> str:
        """The ``bundle_hash`` of ``job``'s bundle, from the kept record digests.

        Only records that changed since they were last hashed are digested again (see
        ``core.records.RecordReader.digests``; compressed records are kept with their
        digests in :class:`CompressedRecords`).
        """
        am, picked, records = job.am, job.picked, bundle.records
        if am is None or picked is None or not records:
            return hash_with_digests(bundle, b"")
        profile = self._profiles[job.pressure]
        if profile.compress:
            digests = self._compressed.digests(am, picked, self._ratio(profile), profile,
                                               records)
        else:
            digests = self._digests(am, picked, records)
        return hash_with_digests(bundle, digests)

    def _crowd_tokens(self, tokens: NDArray[np.int32], jobs: list[Job], live: list[int],
                      job_of: Callable[[], NDArray[np.intp]]) -> NDArray[np.integer[Any]]:
        """:meth:`packing_tokens` of a frame's rows, each under its own request's pressure.

        Rows whose pressure does not compress keep the stored ``int32`` counts (no copy
        when none does). ``job_of()`` gives each row's position in ``live``.
        """
        pressures = sorted({jobs[i].pressure for i in live})
        compressing = [p for p in pressures if self.config.scoring.pressure[p].compress]
        if not compressing:
            return tokens
        if len(pressures) == 1:
            return self.packing_tokens(tokens, pressures[0])
        out = tokens.astype(np.int64)
        for pressure in compressing:
            rows = np.array([jobs[i].pressure is pressure for i in live])[job_of()]
            out[rows] = compressed_budgets(out[rows], self._ratio(
                self.config.scoring.pressure[pressure]))
        return out

    # ------------------------------------------------------------------ shared tail
    def packing_tokens(self, tokens: NDArray[np.int32],
                       pressure: PressureState) -> NDArray[np.int64]:
        """The packing cost of records of ``tokens`` under ``pressure`` (int64, a copy).

        Their token estimates, or their compressed budgets under a compressing pressure.
        """
        out = tokens.astype(np.int64)
        profile = self.config.scoring.pressure[pressure]
        if profile.compress:
            out = compressed_budgets(out, self._ratio(profile))
        return out

    def _ratio(self, profile: PressureProfile) -> float:
        return profile.compression_ratio or self.config.throttle_compression_ratio

    def _bundle(self, job: Job, q: NDArray[np.int64] | None,
                tokens: NDArray[np.int64] | None) -> RetrievedBundle:
        """Rank and pack ``job``'s scored candidates, then :meth:`_finish` the bundle."""
        am = job.am
        if am is None or job.slots is None or q is None or tokens is None:
            return self._finish(job, None, 0, False)
        chosen, total, truncated = rank_and_pack(q, am.key[job.slots], tokens, job.budget,
                                                 job.request.limit)
        return self._finish(job, job.slots[chosen], total, truncated)

    def _finish(self, job: Job, picked: NDArray[np.intp] | None, total: int,
                truncated: bool) -> RetrievedBundle:
        """Build the records in ``picked`` and the bundle; emit ``memory:retrieval``."""
        request, pressure, am = job.request, job.pressure, job.am
        job.picked = picked
        profile = self._profiles[pressure]
        records: list[MemoryRecord] = []
        if am is not None and picked is not None:
            if profile.compress:
                records, total = self._compressed.of(am, picked, self._ratio(profile), profile)
            else:
                records = self._build(am, picked)
        parts = self._weights_for(request.purpose, request.strategy, pressure,
                                  job.term.similarities is not None, job.near is not None)[1]
        candidates = job.candidates
        budget = job.budget
        elapsed_ms = (time.perf_counter() - job.t0) * 1000.0
        compressed = profile.compress and bool(records)
        diagnostics = _new_diagnostics({
            "candidate_count": candidates,
            "filtered_count": (am.live if am is not None else 0) - candidates,
            "scoring_breakdown": list(parts),
            "time_ms": elapsed_ms,
            "compression_applied": compressed,
            "pressure_state": pressure,
            "budget": 0 if budget == NO_BUDGET else budget,
            "semantic_fallback": job.term.fallback,
        })
        bundle = _new_bundle({
            "records": records,
            "total_tokens": total,
            "truncated": truncated,
            "strategy_applied": _STRATEGY_VALUES[request.strategy],
            "diagnostics": diagnostics,
        })
        trace = job.trace
        if trace is not None:  # an explanation: nothing is emitted
            trace.picked, trace.budget, trace.bundle = picked, budget, bundle
        elif self.bus.wants(RetrievalPerformed.name):
            # Positional, in field order: keywords cost a frozen dataclass 0.6 µs more.
            self.bus.emit(RetrievalPerformed(
                request.agent_id, _PURPOSE_VALUES[request.purpose], candidates, len(records),
                truncated, _PRESSURE_VALUES[pressure], compressed, elapsed_ms))
        return bundle
