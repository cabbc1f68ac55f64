"""MemoryEngine: the one facade. Wires store, ingestion, retrieval and maintenance.

Logical time: every method takes ``now=`` (the host's ms or ticks) or uses the engine clock,
which ``tick(now)`` advances. Nothing reads the wall clock except the ``timeMs``
diagnostics, which no hash includes.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.bus import (
    DecayApplied,
    EngineBus,
    MemoryCompaction,
    PressureChanged,
    RecordCreated,
    RecordExpired,
    RecordRedacted,
    SummarizationCompleted,
    SummarizationFailed,
    SummarizationQueued,
)
from f09_memory.config.config import MemoryConfig
from f09_memory.decay.decay import decay_pass
from f09_memory.determinism.hashing import sha256_hex
from f09_memory.embedding.hashing import HashingEmbedder
from f09_memory.errors import (
    CapacityExceededError,
    InputInvalidError,
    MemoryEngineError,
    RecordNotFoundError,
    SnapshotInvalidError,
)
from f09_memory.importance.heuristic import Vocabulary
from f09_memory.ingestion.claims import TRUST, Claim, ClaimOutcome, normalize_value
from f09_memory.ingestion.pipeline import (
    MAX_CONTENT_CHARS,
    Ingestor,
    PendingRecord,
    validate_agent_id,
    validate_item,
    validate_mapping,
)
from f09_memory.ingestion.typed_extraction import (
    DEFAULT_TYPE_LAYERS,
    TypedExtractionPrompt,
    TypedExtractionResult,
    build_typed_extraction_prompt,
    parse_typed_memories,
    typed_memory_tags,
)
from f09_memory.packing.tokens import HeuristicTokenCounter
from f09_memory.persistence.durable import CommitMode, DurableLog
from f09_memory.persistence.journal import from_journal, journaled, to_journal
from f09_memory.persistence.snapshot import dumps as snapshot_dumps
from f09_memory.persistence.snapshot import loads as snapshot_loads
from f09_memory.persistence.snapshot import read_snapshot, write_snapshot
from f09_memory.persistence.state import engine_state, restore
from f09_memory.protocols import EmbeddingProvider, LLMClient, PressureSource, TokenCounter
from f09_memory.redaction.redactor import Redactor
from f09_memory.retention import CompactionCursor, Compactor, compact_store
from f09_memory.retrieval.orchestrator import Retriever, SemanticTerm
from f09_memory.retrieval.semantic import SemanticMemory
from f09_memory.schema.base import trusted
from f09_memory.schema.enums import MemoryLayer, PressureState
from f09_memory.schema.records import MemoryRecord, RecordMetadata
from f09_memory.schema.retrieval import RetrievalRequest, RetrievedBundle
from f09_memory.schema.tasks import SummarizationTask
from f09_memory.store.agent import AgentMemory
from f09_memory.store.store import MemoryStore, split_record_id
from f09_memory.summarization.control import SummarizationControl
from f09_memory.summarization.pipeline import Summarizer, SummaryOutcome

__all__ = ["MemoryEngine", "TickReport"]

logger = logging.getLogger("f09_memory")
_EPISODIC = MemoryLayer.EPISODIC


class _Default:
    """Marker for "use the default embedder" (``None`` means none)."""


_DEFAULT = _Default()
@dataclass(frozen=True, slots=True)
class TickReport:
    """What one ``tick`` did and what it left for the next.

    Attributes:
        now: The tick's logical time.
        budget_units: Work units the budget allowed (``None``: unbounded).
        used_units: Work units spent (records scanned).
        agents_processed: Agents whose decay and expiry ran this tick.
        decayed: Live records whose decayed importance was refreshed.
        expired: Records removed because their TTL passed.
        deferred_agents: Agents left for the next tick because the budget ran out.
        pruned: Records removed by compaction because their layer was over its cap.
        summaries_queued: Summarization tasks scheduled (finished at once under heuristic or
            skip pressure modes).
        embedded: Records (re-)embedded this tick (earlier failures, or a new provider).
        cycle_complete: Whether this tick finished a full pass over all agents.
        pressure: The pressure state in force after the tick.
    """

    now: int
    budget_units: int | None
    used_units: int
    agents_processed: int
    decayed: int
    expired: int
    deferred_agents: int
    cycle_complete: bool
    pruned: int
    summaries_queued: int
    embedded: int
    pressure: PressureState


@dataclass
class _AgentExtras:
    vocabulary: Vocabulary


@dataclass
class _Maintenance:
    cursor: int = 0  # index into the sorted agent list where the next slice starts
    extras: dict[str, _AgentExtras] = field(default_factory=dict)
    compaction: CompactionCursor = field(default_factory=CompactionCursor)


def _check_now(now: object, what: str = "now") -> int:
    if isinstance(now, bool) or not isinstance(now, int | np.integer) or now < 0:
        raise InputInvalidError(
            f"{what}={now!r:.40} is not logical time: pass a non-negative integer (ms or ticks)",
            details={"field": what},
        )
    return int(now)


class MemoryEngine:
    """A deterministic, rate-aware, multi-layer memory for many agents.

    Args:
        config: Settings; defaults to ``MemoryConfig()``.
        seed: Seeds every random choice the engine makes (none on the core path today; HNSW
            construction and scenario generators derive from it).
        token_counter: Token estimator (``TokenCounter``); defaults to the chars-per-token
            heuristic of the config.
        pressure_source: Rate governor polled by ``tick``.
        embedder: Embedding provider for the semantic term. Default: the deterministic
            ``HashingEmbedder`` (``embedding_dim``, seeded by ``seed``); ``None`` or a
            ``NullEmbedder`` turns the semantic term off (its weight is redistributed).

    Example:
        >>> engine = MemoryEngine(MemoryConfig(), seed=0)
        >>> rec = engine.ingest("npc-1", "Saw the smith at the well", importance=0.4, now=1_000)
        >>> rec.id
        'npc-1:0000000000'
        >>> bundle = engine.retrieve(RetrievalRequest(agent_id="npc-1", purpose="dialog",
        ...                                           max_tokens=400), now=2_000)
        >>> [r.content for r in bundle.records]
        ['Saw the smith at the well']
    """

    def __init__(
        self,
        config: MemoryConfig | None = None,
        *,
        seed: int = 0,
        token_counter: TokenCounter | None = None,
        pressure_source: PressureSource | None = None,
        embedder: EmbeddingProvider | _Default | None = _DEFAULT,
    ) -> None:
        if config is None:
            config = MemoryConfig()
        elif not isinstance(config, MemoryConfig):
            raise InputInvalidError(
                "config must be a MemoryConfig (build one with MemoryConfig(...) or "
                "MemoryConfig.from_env())",
                details={"got": type(config).__name__},
            )
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InputInvalidError("seed must be an int", details={"got": type(seed).__name__})
        if token_counter is not None and not isinstance(token_counter, TokenCounter):
            raise InputInvalidError("token_counter must have count(text) -> int")
        if pressure_source is not None and not isinstance(pressure_source, PressureSource):
            raise InputInvalidError("pressure_source must have poll(now) -> PressureState")
        self.config = config
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.bus = EngineBus(handler_errors=config.bus_handler_errors)
        self.counter: TokenCounter = token_counter or HeuristicTokenCounter(
            config.chars_per_token
        )
        self.pressure_source = pressure_source
        self._store = MemoryStore(config.episodic_max)
        self._ingestor = Ingestor(config, self.counter)
        self._retriever = Retriever(config, self.bus, self.counter)
        if isinstance(embedder, _Default):
            embedder = HashingEmbedder(config.embedding_dim, seed=seed)
        self._semantic = SemanticMemory(config, self.bus, embedder, seed)
        self._compactor = Compactor(config, removal_cost_units=config.removal_cost_units)
        # Prompts are always redacted, whatever the redaction mode (QG5).
        self._prompt_redactor = Redactor(config.redact_patterns, salt=config.redaction_salt)
        self._summarizer = Summarizer(config, redact=self._prompt_redactor.redact_text)
        self.summarization = SummarizationControl(
            self._summarizer, request=self._request_summary, poll=self._summary_poll,
            complete=self._summary_complete, fail=self._summary_fail,
            clock=lambda: self._clock)
        """Two-phase summarization: ``poll`` / ``complete`` / ``fail`` / ``request``."""
        self._clock = 0
        self._pressure = PressureState.NORMAL
        self._maint = _Maintenance()
        self._journal: DurableLog | None = None
        self._op_depth = 0
        self._checkpoint_every = 0

    # ------------------------------------------------------------------ properties
    @property
    def now(self) -> int:
        """The engine clock: the ``now`` of the last ``tick`` (0 before the first)."""
        return self._clock

    @property
    def pressure(self) -> PressureState:
        """The pressure state in force."""
        return self._pressure

    @property
    def redactor_counts(self) -> dict[str, int]:
        """Matches replaced so far, by pattern label (redaction diagnostics)."""
        return dict(self._ingestor.redactor.counts)

    def agents(self) -> list[str]:
        """Ids of agents that have stored memories, sorted."""
        return self._store.agent_ids()

    def count(self, agent_id: str | None = None, layer: MemoryLayer | str | None = None) -> int:
        """Live records of one agent (or all), optionally of one layer. O(agents)."""
        lay = None if layer is None else validate_item("x", layer=layer).layer
        ams = self._store if agent_id is None else [a for a in [self._store.get(agent_id)] if a]
        if lay is None:
            return sum(am.live for am in ams)
        return sum(int(am.layer_counts[lay.code]) for am in ams)

    # ------------------------------------------------------------------ ingestion
    def _time(self, now: object) -> int:
        return self._clock if now is None else _check_now(now)

    def _extras(self, agent_id: str) -> _AgentExtras:
        ex = self._maint.extras.get(agent_id)
        if ex is None:
            ex = self._maint.extras[agent_id] = _AgentExtras(
                Vocabulary(self.config.importance.novelty_vocab_max)
            )
        return ex

    def _check_capacity(self, am: AgentMemory | None, items: Sequence[PendingRecord]) -> None:
        live = am.live if am is not None else 0
        if live + len(items) <= self.config.max_records_per_agent:
            return  # the common case: far from the ceiling
        ring_live = am.ring.live if am is not None else 0
        episodic_new = sum(1 for it in items if it.layer is _EPISODIC)
        evictions = max(0, ring_live + episodic_new - self.config.episodic_max)
        after = live + len(items) - evictions
        if after > self.config.max_records_per_agent:
            agent = am.agent_id if am is not None else "?"
            raise CapacityExceededError(
                f"agent {agent!r} would hold {after} records, above max_records_per_agent="
                f"{self.config.max_records_per_agent}; raise the ceiling, lower retention caps, "
                "or let compaction run (engine.tick)",
                details={"agentId": agent, "live": live, "limit":
                         self.config.max_records_per_agent},
            )

    def _store_batch(
        self,
        am: AgentMemory,
        items: Sequence[PendingRecord],
        now: int,
        events: list[Any],
        anchor: int | None = None,
    ) -> list[MemoryRecord]:
        """Build, embed (one batch call) and store validated items, queueing their events."""
        vocabulary = self._extras(am.agent_id).vocabulary
        built = []
        for item in items:
            key = am.reserve_key()
            record, deadline, labels = self._ingestor.build(
                item, am.agent_id, am.id_of(key), now, vocabulary, anchor)
            built.append((key, record, deadline, labels))
        semantic = self._semantic
        vectors = semantic.embed_batch(am.agent_id, [b[1] for b in built], events)
        # Events nobody receives (no subscriber, no debug log) are not even built.
        logged = logger.isEnabledFor(logging.DEBUG)
        report_created = logged or self.bus.wants(RecordCreated.name)
        report_redacted = logged or self.bus.wants(RecordRedacted.name)
        out = []
        for i, (key, record, deadline, labels) in enumerate(built):
            if record.layer is _EPISODIC and am.ring.full:
                old = am.remove(am.ring.oldest())
                events.append(RecordExpired(id=old.id, layer=old.layer.value, reason="overflow"))
            if vectors is not None:
                # The record has not left the engine yet: set its embedding version in place.
                record.__dict__["embedding_ref"] = semantic.version
            slot = am.add(record, key, record.metadata.flagged, deadline)
            if vectors is not None:
                semantic.attach(am, slot, key, vectors[i])
            if report_created:
                events.append(RecordCreated(id=record.id, layer=record.layer.value,
                                            agent_id=am.agent_id, importance=record.importance))
            if labels and report_redacted:
                events.append(RecordRedacted(id=record.id, patterns=labels))
            out.append(record)
        return out

    def _publish(self, events: list[Any]) -> None:
        bus = self.bus
        debug = logger.isEnabledFor(logging.DEBUG)
        for ev in events:
            if debug:
                tag = {"memory:record:created": "[MEM][CREATE]",
                       "memory:record:redacted": "[MEM][REDACT]"}.get(ev.name, "[MEM]")
                logger.debug("%s %s %s", tag, ev.name, ev.to_dict())
            if bus.wants(ev.name):
                bus.emit(ev)

    @journaled
    def ingest(
        self,
        agent_id: str,
        content: str,
        *,
        layer: MemoryLayer | str = MemoryLayer.EPISODIC,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        ttl: int | None = None,
        flagged: bool = False,
        source_event: str | None = None,
        now: int | None = None,
    ) -> MemoryRecord:
        """Store one memory and return it.

        The content, tags, source event and string attributes are redacted first (when
        redaction mode is ON); importance is the heuristic's when not given; an episodic
        ingest into a full ring evicts the oldest episodic record (``memory:record:expired``
        with reason ``overflow``). Emits ``memory:record:created`` (and
        ``memory:record:redacted`` when something was replaced).

        Runtime complexity: amortized O(1) for episodic, O(log n) for other layers.

        Raises:
            InputInvalidError: A malformed argument (state unchanged).
            CapacityExceededError: The agent is at ``max_records_per_agent``.
        """
        agent_id = validate_agent_id(agent_id)
        t = self._time(now)
        item = validate_item(content, layer, importance, tags, metadata, ttl, flagged,
                             source_event)
        am = self._store.get(agent_id)
        self._check_capacity(am, (item,))
        if am is None:
            am = self._store.get_or_create(agent_id)
        events: list[Any] = []
        (record,) = self._store_batch(am, (item,), t, events)
        self._publish(events)
        return record

    @journaled
    def ingest_many(
        self,
        agent_id: str,
        items: Iterable[Mapping[str, Any] | str],
        *,
        now: int | None = None,
    ) -> list[MemoryRecord]:
        """Store several memories of one agent, all or nothing, in order.

        Each item is a content string or a mapping with the keyword arguments of
        :meth:`ingest` (``content`` required). Every item is validated before any is stored,
        so a bad item leaves the state unchanged. Events are emitted after all are stored.

        Raises:
            InputInvalidError: An item is malformed (the message gives its index).
            CapacityExceededError: The batch would pass ``max_records_per_agent``.
        """
        agent_id = validate_agent_id(agent_id)
        t = self._time(now)
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InputInvalidError("items must be a list of mappings or strings",
                                    details={"field": "items"})
        pending: list[PendingRecord] = []
        for i, raw in enumerate(items):
            try:
                pending.append(validate_mapping(raw))
            except MemoryEngineError as exc:
                exc.details["index"] = i
                exc.message = f"item {i}: {exc.message}"
                exc.args = (exc.message,)
                raise
        am = self._store.get(agent_id)
        self._check_capacity(am, pending)
        if not pending:
            return []
        if am is None:
            am = self._store.get_or_create(agent_id)
        events: list[Any] = []
        out = self._store_batch(am, pending, t, events)
        self._publish(events)
        return out

    def ingest_typed(
        self,
        agent_id: str,
        extraction: TypedExtractionResult | str,
        *,
        now: int | None = None,
    ) -> tuple[list[MemoryRecord], TypedExtractionResult]:
        """Store typed memories (seed 002) parsed from an LLM's extraction answer.

        Each memory becomes one record "<name>: <description>" plus its body, in the layer
        ``typed_memory_layers`` maps its type to (default: semantic; feedback procedural),
        tagged ``typed:<type>`` and ``typed-name:<slug>``, with ``typedName``, ``typedType``
        and ``filename`` attributes. Malformed blocks are reported in the result's
        diagnostics, never raised. All or nothing, like :meth:`ingest_many`.

        Args:
            agent_id: The agent.
            extraction: A :class:`TypedExtractionResult` or the raw LLM answer to parse.
            now: Logical time.

        Returns:
            The stored records (in block order) and the parse result.
        """
        result = (extraction if isinstance(extraction, TypedExtractionResult)
                  else parse_typed_memories(extraction))
        items = []
        for memory in result.memories:
            layer = self.config.typed_memory_layers.get(
                memory.type.value, DEFAULT_TYPE_LAYERS[memory.type])
            items.append({
                "content": f"{memory.name}: {memory.description}\n{memory.body}".strip(),
                "layer": layer,
                "tags": list(typed_memory_tags(memory)),
                "metadata": {"attributes": {"typedName": memory.name,
                                            "typedType": memory.type.value,
                                            "filename": memory.filename}},
            })
        return self.ingest_many(agent_id, items, now=now), result

    @journaled
    def ingest_claim(
        self,
        agent_id: str,
        content: str,
        claim: Claim,
        *,
        layer: MemoryLayer | str = MemoryLayer.SEMANTIC,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
        now: int | None = None,
    ) -> ClaimOutcome:
        """Store a memory carrying a claim, with supersession (see ``ingestion.claims``).

        The same value again reinforces the active claim (importance raised by 0.05, up to
        1); a conflicting value supersedes it when its provenance is at least as trusted,
        and is quarantined otherwise. Superseded and quarantined records stay stored and are
        excluded from retrieval unless ``RetrievalRequest.statuses`` lists them.

        Raises:
            InputInvalidError: A malformed argument, or a temporal claim whose ``valid_to``
                is not after ``now`` (state unchanged).
        """
        agent_id = validate_agent_id(agent_id)
        t = self._time(now)
        if not isinstance(claim, Claim):
            raise InputInvalidError("claim must be an f09_memory.ingestion.claims.Claim",
                                    details={"field": "claim"})
        ttl = None
        if claim.scope == "temporal":
            assert claim.valid_to is not None
            if claim.valid_to <= t:
                raise InputInvalidError("claim.valid_to must be after now",
                                        details={"field": "claim.valid_to"})
            ttl = claim.valid_to - t
        validate_item(content, layer, importance, tags, None, ttl)
        am = self._store.get(agent_id)
        current = am.claims.get(claim.key) if am is not None else None
        previous = am.record(current) if am is not None and current is not None else None
        if previous is not None and am is not None and current is not None:
            attrs = previous.metadata.attributes
            if attrs.get("claimValue") == normalize_value(claim.value):
                meta = dict(previous.metadata.__dict__)
                meta["attributes"] = {**attrs,
                                      "claimReinforced": int(attrs.get("claimReinforced", 0)) + 1}
                values = dict(previous.__dict__)
                values["metadata"] = trusted(RecordMetadata, meta)
                values["importance"] = min(1.0, round(previous.importance + 0.05, 6))
                reinforced = trusted(MemoryRecord, values)
                am.replace_record(current, reinforced)
                return ClaimOutcome(reinforced, "reinforced", previous.id)
        trust_ok = previous is None or TRUST[claim.provenance] >= TRUST[
            str(previous.metadata.attributes.get("claimProvenance", "inference"))]
        status = "active" if trust_ok else "quarantined"
        attributes = claim.attributes(status)
        if previous is not None and not trust_ok:
            attributes["conflictsWith"] = previous.id
        record = self.ingest(agent_id, content, layer=layer, importance=importance,
                             tags=tags, ttl=ttl, now=t, metadata={"attributes": attributes})
        if previous is None:
            return ClaimOutcome(record, "created")
        if not trust_ok:
            return ClaimOutcome(record, "quarantined", previous.id)
        am = self._store.get(agent_id)
        assert am is not None and current is not None
        meta = dict(previous.metadata.__dict__)
        meta["attributes"] = {**previous.metadata.attributes, "claimStatus": "superseded",
                              "supersededBy": record.id}
        values = dict(previous.__dict__)
        values["metadata"] = trusted(RecordMetadata, meta)
        am.replace_record(current, trusted(MemoryRecord, values))
        return ClaimOutcome(record, "superseded", previous.id)

    def typed_extraction_prompt(
        self, agent_id: str, record_ids: Sequence[str], *, today_date: str
    ) -> TypedExtractionPrompt:
        """The seed 002 extraction prompt over some of an agent's records.

        Use it on any records, e.g. the sources of a summarization task; the text is
        redacted whatever the redaction mode.

        Raises:
            RecordNotFoundError: An id is not a live record of ``agent_id``.
            InputInvalidError: ``today_date`` is not ``YYYY-MM-DD`` or there is no text.
        """
        lines = []
        for rid in record_ids:
            rec = self.get(rid)
            if rec.agent_id != agent_id:
                raise RecordNotFoundError(f"{rid!r} is not a record of agent {agent_id!r}",
                                          details={"id": rid, "agentId": agent_id})
            lines.append(f"- {rec.content}")
        return build_typed_extraction_prompt("\n".join(lines), today_date=today_date,
                                             redact=self._prompt_redactor.redact_text)

    # ------------------------------------------------------------------ retrieval
    def retrieve(
        self,
        request: RetrievalRequest | Mapping[str, Any],
        *,
        now: int | None = None,
        query_vectors: NDArray[np.float32] | None = None,
    ) -> RetrievedBundle:
        """Build the agent's context bundle for ``request`` (spec section 9).

        The semantic term is the cosine similarity to the centroid of ``request.query``
        (embedded once) and the optional ``query_vectors`` (``(n, dim)`` or ``(dim,)``).

        Ordering guarantee: quantized score descending, then id ascending; identical state
        and request give an identical bundle (``bundle_hash``) on any machine (with an HNSW
        preselection: on the same build and CPU).
        Runtime complexity: O(n) numpy work plus O(k log k) for the k packable records.

        Raises:
            TokenBudgetUndefinedError: ``max_tokens`` missing or not positive.
            InputInvalidError: A malformed request.
        """
        req = RetrievalRequest.parse(request)
        t = self._time(now)
        pressure = req.pressure_state or self._pressure
        semantic = self._semantic

        def term(
            am: AgentMemory, slots: NDArray[np.intp], r: RetrievalRequest
        ) -> tuple[SemanticTerm, NDArray[np.intp]]:
            return semantic.term(am, slots, r, query_vectors)

        bundle = self._retriever.retrieve(self._store.get(req.agent_id), req, t, pressure, term)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("[MEM][RETRIEVE] agent=%s purpose=%s used=%d tokens=%d",
                         req.agent_id, req.purpose.value, len(bundle.records),
                         bundle.total_tokens)
        return bundle

    def retrieve_many(
        self, requests: Iterable[RetrievalRequest | Mapping[str, Any]], *, now: int | None = None
    ) -> list[RetrievedBundle]:
        """Serve a whole tick of agents: one bundle per request, in request order.

        All requests are validated first; a bad one raises before any is served.
        """
        reqs = [RetrievalRequest.parse(r) for r in requests]
        for r in reqs:
            self._retriever.budget_for(r, r.pressure_state or self._pressure)
        t = self._time(now)
        return [self.retrieve(r, now=t) for r in reqs]

    # ------------------------------------------------------------------ records
    def get(self, record_id: str) -> MemoryRecord:
        """Return the live record ``record_id``. O(1).

        Raises:
            RecordNotFoundError: No live record has that id.
        """
        parts = split_record_id(record_id)
        am = self._store.get(parts[0]) if parts else None
        rec = am.record(parts[1]) if (am is not None and parts) else None
        if rec is None:
            raise RecordNotFoundError(
                f"no live record {record_id!r:.80}; it may have expired, been summarized or "
                "never existed (ids look like 'agent:0000000042')",
                details={"id": str(record_id)[:200]},
            )
        return rec

    def records(
        self, agent_id: str, layer: MemoryLayer | str | None = None
    ) -> list[MemoryRecord]:
        """The agent's live records, oldest first. O(n).

        All layers together are ordered by ``(recency_anchor, id)``; episodic alone in ring
        (insertion) order. An unknown agent has none.
        """
        agent_id = validate_agent_id(agent_id)
        lay = None if layer is None else validate_item("x", layer=layer).layer
        am = self._store.get(agent_id)
        if am is None:
            return []
        out: list[MemoryRecord] = []
        for key in am.keys_in_time_order(lay):
            rec = am.record(key)
            assert rec is not None
            out.append(rec)
        return out

    @property
    def embedder(self) -> EmbeddingProvider | None:
        """The embedding provider in use (``None``: semantic term off)."""
        return self._semantic.provider

    def set_embedder(self, embedder: EmbeddingProvider | None) -> None:
        """Switch the embedding provider.

        A provider with a different ``version`` makes stored vectors stale: they are
        re-embedded, and indexes rebuilt, by later ticks in bounded slices (until then stale
        records score 0 on the semantic term).

        Raises:
            InputInvalidError: ``embedder`` does not fit the EmbeddingProvider protocol.
        """
        if self._semantic.set_provider(embedder) or not self._semantic.available:
            self._semantic.invalidate(self._store)

    # ------------------------------------------------------------------ summarization
    def _apply_outcomes(self, outcomes: list[SummaryOutcome], events: list[Any]) -> None:
        """Store each summary, retire its sources, queue ``memory:summarization:*``."""
        for o in outcomes:
            task = o.task
            if not o.replaces_sources or o.summary_text is None:
                events.append(SummarizationFailed(task_id=task.id,
                                                  reason=o.reason or task.status.value))
                continue
            am = self._store.get_or_create(task.agent_id)
            for key in o.source_keys:  # retire first: the summary never pushes past a cap
                if key in am.slot_of:
                    old = am.remove(key)
                    events.append(RecordExpired(id=old.id, layer=old.layer.value,
                                                reason="summarized"))
            item = validate_item(
                o.summary_text[:MAX_CONTENT_CHARS], task.target_layer, o.importance,
                [t for t in o.tags if t.strip()] + ["summary"],
                {"sourceRefIds": list(o.source_ids), "sourceEvent": task.id})
            (record,) = self._store_batch(am, (item,), self._clock, events, o.recency_anchor)
            task.summary_record_id = record.id
            events.append(SummarizationCompleted(task_id=task.id, summary_record_id=record.id,
                                                 reduction_ratio=o.reduction_ratio))

    def _apply_and_publish(self, outcomes: list[SummaryOutcome]) -> None:
        events: list[Any] = []
        self._apply_outcomes(outcomes, events)
        self._publish(events)

    def _schedule_summary(self, am: AgentMemory, now: int, events: list[Any],
                          require: bool = False) -> SummarizationTask | None:
        mode = self.config.scoring.pressure[self._pressure].summarization
        task = self._summarizer.schedule(am, now, mode=mode, require=require)
        if task is not None:
            events.append(SummarizationQueued(task_id=task.id, agent_id=task.agent_id,
                                              source_count=len(task.source_ids)))
        self._apply_outcomes(self._summarizer.collect(), events)
        return task

    @journaled
    def _request_summary(self, agent_id: str, now: int) -> SummarizationTask | None:
        am = self._store.get(validate_agent_id(agent_id))
        if am is None:
            return None
        events: list[Any] = []
        task = self._schedule_summary(am, _check_now(now), events, require=True)
        self._publish(events)
        return task

    @journaled
    def _summary_poll(self, now: int) -> list[SummarizationTask]:
        return self._summarizer.poll(now)

    @journaled
    def _summary_complete(self, task_id: str, text: str | None) -> SummaryOutcome:
        outcome = self._summarizer.complete(task_id, text)
        self._apply_and_publish([outcome])
        return outcome

    @journaled
    def _summary_complete_error(self, task_id: str, error: str) -> SummaryOutcome:
        outcome = self._summarizer.complete_after_error(task_id, error)
        self._apply_and_publish([outcome])
        return outcome

    @journaled
    def _summary_fail(self, task_id: str, reason: str) -> SummaryOutcome:
        outcome = self._summarizer.fail(task_id, reason)
        self._apply_and_publish([outcome])
        return outcome

    def summarize_pending(self, llm: LLMClient, *, now: int | None = None) -> list[SummaryOutcome]:
        """Run every queued summarization task through ``llm`` synchronously and apply it.

        The convenience form of the two phases (``engine.summarization.poll`` then
        ``complete``). An LLM that raises, times out or returns garbage never loses a record:
        the local heuristic summary is used instead.

        Raises:
            InputInvalidError: ``llm`` has no ``complete(prompt, ...)``.
        """
        if not isinstance(llm, LLMClient):
            raise InputInvalidError("llm must have complete(prompt, *, system, temperature, "
                                    "max_tokens) -> str (LLMClient)")
        cfg = self.config
        outcomes: list[SummaryOutcome] = []
        for task in self._summary_poll(self._time(now)):
            try:
                reply: object = llm.complete(
                    task.prompt or "", system=self._summarizer.system_prompt,
                    temperature=cfg.summarization_temperature,
                    max_tokens=cfg.summarization_max_tokens)
            except Exception as exc:  # the adapter's failure: the heuristic summary instead
                outcomes.append(self._summary_complete_error(
                    task.id, f"{type(exc).__name__}: {exc}"))
                continue
            outcomes.append(self._summary_complete(
                task.id, reply if isinstance(reply, str) else None))
        return outcomes

    # ------------------------------------------------------------------ maintenance
    @journaled
    def set_pressure(self, state: PressureState | str) -> None:
        """Set the rate-governor pressure; emits ``memory:pressure:changed`` on a change.

        Raises:
            InputInvalidError: ``state`` is not a pressure state.
        """
        try:
            new = PressureState(state)
        except ValueError:
            raise InputInvalidError(
                f"unknown pressure state {state!r:.40}; use one of "
                f"{[p.value for p in PressureState]}",
                details={"field": "state"},
            ) from None
        old = self._pressure
        if new is not old:
            self._pressure = new
            self._publish([PressureChanged(previous=old.value, current=new.value)])

    @journaled
    def tick(self, now: int, budget_ms: float | None = None) -> TickReport:
        """Advance the clock to ``now`` and run a slice of maintenance.

        Maintenance is TTL expiry and the importance-decay pass, agent by agent in id order,
        then (with budget left) a compaction slice pruning layers over their retention caps
        (``memory:record:expired`` reason ``retention``, ``memory:compaction``), then
        re-embedding records whose embedding failed or went stale, then building or
        migrating vector indexes of large agents.

        The budget is counted in work units (records scanned; ``work_units_per_ms`` per
        millisecond), never by the wall clock, so the same calls do the same work on any
        machine. What does not fit is resumed by the next tick from where it stopped.

        Raises:
            InputInvalidError: ``now`` earlier than the engine clock, or a bad budget.
        """
        t = _check_now(now)
        if t < self._clock:
            raise InputInvalidError(
                f"tick(now={t}) is earlier than the engine clock {self._clock}; logical time "
                "must not run backwards",
                details={"now": t, "clock": self._clock},
            )
        budget: int | None = None
        if budget_ms is not None:
            if isinstance(budget_ms, bool) or not isinstance(budget_ms, int | float) or not (
                budget_ms > 0 and budget_ms < float("inf")
            ):
                raise InputInvalidError("budget_ms must be a positive number of milliseconds, "
                                        "or None for an unbounded tick",
                                        details={"field": "budget_ms"})
            budget = max(1, int(budget_ms * self.config.work_units_per_ms))
        self._clock = t
        if self.pressure_source is not None:
            self.set_pressure(self.pressure_source.poll(t))
        agents = list(self._store)
        n = len(agents)
        cursor = self._maint.cursor if self._maint.cursor < n else 0
        used = decayed = expired = processed = queued = 0
        events: list[Any] = []
        half_life = self.config.decay_half_life_ms
        while processed < n:
            am = agents[cursor]
            cost = am.hi + 1
            if budget is not None and processed and used + cost > budget:
                break
            used += cost
            expired += self._expire(am, t, events)
            affected = decay_pass(am, t, half_life)
            decayed += affected
            if affected:
                events.append(DecayApplied(agent_id=am.agent_id, affected=affected))
            if self._schedule_summary(am, t, events) is not None:
                queued += 1
            processed += 1
            cursor += 1
            if cursor == n:
                cursor = 0
                break
        complete = cursor == 0
        self._maint.cursor = cursor
        left = None if budget is None else max(0, budget - used)
        pruned = 0
        if left is None or left > 0:
            sweep = compact_store(self._store, t, left, self._maint.compaction, self._compactor)
            used += sweep.used_units
            for agent_id, removed, remaining in sweep:
                pruned += len(removed)
                events.extend(RecordExpired(id=r.id, layer=r.layer.value, reason="retention")
                              for r in removed)
                events.append(MemoryCompaction(agent_id=agent_id, removed=len(removed),
                                               remaining=remaining))
            left = None if budget is None else max(0, budget - used)
        if left is None or left > 0:
            embedded, spent, failures = self._semantic.retry_slice(self._store, left)
            events.extend(failures)
            used += spent
            left = None if budget is None else max(0, budget - used)
        else:
            embedded = 0
        if left is None or left > 0:
            used += self._semantic.index_slice(self._store, left)
        self._publish(events)
        return TickReport(
            now=t,
            budget_units=budget,
            used_units=used,
            agents_processed=processed,
            decayed=decayed,
            expired=expired,
            deferred_agents=0 if complete else n - cursor,
            cycle_complete=complete,
            pruned=pruned,
            summaries_queued=queued,
            embedded=embedded,
            pressure=self._pressure,
        )

    def _expire(self, am: AgentMemory, now: int, events: list[Any]) -> int:
        hi = am.hi
        due = np.flatnonzero(am.alive[:hi] & (am.deadline[:hi] <= now))
        if due.shape[0] == 0:
            return 0
        for key in np.sort(am.key[due]).tolist():
            rec = am.remove(key)
            events.append(RecordExpired(id=rec.id, layer=rec.layer.value, reason="ttl"))
        return int(due.shape[0])

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the whole engine state to ``path`` atomically (temp file, fsync, rename).

        ``MemoryEngine.load(path)`` gives an engine with the same ``state_hash()`` whose
        next retrievals are identical. O(total records).

        Returns:
            The path written.
        """
        return write_snapshot(path, engine_state(self))

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        token_counter: TokenCounter | None = None,
        pressure_source: PressureSource | None = None,
        embedder: EmbeddingProvider | _Default | None = _DEFAULT,
    ) -> MemoryEngine:
        """Rebuild an engine from a snapshot written by :meth:`save`.

        Adapters are not stored: pass the same ``embedder`` (same ``version``) to keep the
        saved vectors, otherwise records are re-embedded by later ticks.

        Raises:
            SnapshotInvalidError: The file is missing, truncated, corrupted, foreign or of
                another format version (``MEMORY_SNAPSHOT_INVALID``); nothing is half-loaded.
        """
        state = read_snapshot(path)
        try:
            config = MemoryConfig.parse(state.get("config"))
            seed = int(state.get("seed", 0))
        except (MemoryEngineError, TypeError, ValueError) as exc:
            raise SnapshotInvalidError(f"snapshot {str(path)!r} holds an invalid config",
                                       details={"path": str(path)}) from exc
        engine = cls(config, seed=seed, token_counter=token_counter,
                     pressure_source=pressure_source, embedder=embedder)
        restore(engine, state)
        return engine

    # ------------------------------------------------------------------ durable mode
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        config: MemoryConfig | None = None,
        *,
        seed: int = 0,
        commit: CommitMode = "call",
        checkpoint_every: int = 10_000,
        token_counter: TokenCounter | None = None,
        pressure_source: PressureSource | None = None,
        embedder: EmbeddingProvider | _Default | None = _DEFAULT,
    ) -> MemoryEngine:
        """Open (or create) a durable engine on an SQLite database (WAL).

        A new database starts from ``config`` and ``seed``; an existing one restores its
        snapshot and replays its journal (``config``/``seed`` are then ignored), giving the
        state of the last commit, with the same state hash, even after the process was
        killed. Every state-changing call is journaled and committed before it returns
        (``commit="call"``) or at each tick (``commit="tick"``).

        Raises:
            SnapshotInvalidError: The file is not a usable database or its snapshot is bad.
            InputInvalidError: ``checkpoint_every`` is not a positive integer.
        """
        if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or (
                checkpoint_every < 1):
            raise InputInvalidError("checkpoint_every must be a positive integer",
                                    details={"field": "checkpoint_every"})
        log = DurableLog(path, commit=commit)
        blob = log.snapshot()
        if blob is None:
            engine = cls(config, seed=seed, token_counter=token_counter,
                         pressure_source=pressure_source, embedder=embedder)
            log.checkpoint(snapshot_dumps(engine_state(engine)))
        else:
            state = snapshot_loads(blob, path)
            engine = cls(MemoryConfig.parse(state["config"]), seed=int(state["seed"]),
                         token_counter=token_counter, pressure_source=pressure_source,
                         embedder=embedder)
            restore(engine, state)
            engine._replay(log)
        engine._journal = log
        engine._checkpoint_every = checkpoint_every
        return engine

    def _replay(self, log: DurableLog) -> None:
        source, self.pressure_source = self.pressure_source, None
        try:
            for op in log.ops():
                args = from_journal(op["args"])
                if "pressure" in op:  # the state the rate governor reported at that tick
                    self._pressure = PressureState(op["pressure"])
                getattr(self, op["op"])(**args)
        finally:
            self.pressure_source = source

    def _record(self, name: str, arguments: dict[str, Any]) -> None:
        assert self._journal is not None
        op: dict[str, Any] = {"op": name, "args": to_journal(arguments)}
        if name == "tick" and self.pressure_source is not None:
            op["pressure"] = self._pressure.value
        self._journal.append(op)
        if name == "tick":
            self._journal.commit()
        if self._journal.pending >= self._checkpoint_every:
            self.checkpoint()

    def checkpoint(self) -> None:
        """Durable mode: rewrite the snapshot and empty the journal (one transaction)."""
        if self._journal is not None:
            self._journal.checkpoint(snapshot_dumps(engine_state(self)))

    def close(self) -> None:
        """Durable mode: checkpoint and close the database (no-op otherwise)."""
        if self._journal is not None:
            self.checkpoint()
            self._journal.close()
            self._journal = None

    # ------------------------------------------------------------------ hashing
    def canonical_state(self) -> dict[str, Any]:
        """Everything that determines future behaviour, in canonical form.

        This is what :meth:`state_hash` hashes: clock, pressure, maintenance cursor, and per
        agent its id counter, novelty vocabulary and live records (sorted by id) with their
        decayed importance.
        """
        agents = []
        for am in self._store:
            recs = []
            for key in sorted(am.slot_of):
                slot = am.slot_of[key]
                rec = am.records[slot]
                assert rec is not None
                data = rec.model_dump(mode="json", by_alias=True, exclude_none=True)
                data["decayed"] = float(am.decayed[slot])
                recs.append(data)
            vocab = self._extras(am.agent_id).vocabulary.get_state()
            agents.append({
                "agentId": am.agent_id,
                "nextKey": am.next_key,
                "vocabulary": sha256_hex(vocab),
                "records": recs,
            })
        return {
            "clock": self._clock,
            "pressure": self._pressure.value,
            "cursor": self._maint.cursor,
            "compactionCursor": self._maint.compaction.get_state(),
            "summarizer": self._summarizer.get_state(),
            "agents": agents,
        }

    def state_hash(self) -> str:
        """sha256 hex of :meth:`canonical_state` (quantized floats, sorted keys).

        Equal for equal seeds and inputs in any process. O(total records).
        """
        return sha256_hex(self.canonical_state(), self.config.score_quantum)

    def _check(self) -> None:
        """Assert the store's invariants (tests call this after every mutation)."""
        self._store._check()
        for am in self._store:
            assert am.agent_id in self._maint.extras
