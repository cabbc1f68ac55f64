"""MemoryEngine: the one facade, delegating to an explicit state and its services.

- ``core.state.EngineState``: store (columns), clock, pressure, cursors, vocabularies;
- ``core.writer.Writer``: the write path; ``core.claims``: supersession;
  ``core.records.RecordReader``: records built at the boundary;
- ``retrieval`` (Retriever + SemanticMemory), ``summarization.service``,
  ``maintenance.tick``, ``core.digest`` (the incremental state hash),
  ``persistence`` (snapshots, durable session; ``save`` / ``load`` / ``open`` / ``close``
  live in the base class ``persistence.facade.PersistenceFacade``);
- the game-world layers (engine events, social ledger, spatial memory, procedures) live in
  the base class ``world.WorldFacade``.

Logical time: every method takes ``now=`` (the host's ms or ticks) or uses the engine clock,
which ``tick(now)`` advances. Nothing reads the wall clock except the ``timeMs``
diagnostics, which no hash includes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory._owner import ThreadOwner, owned_by_thread
from f09_memory._validate import check_now, parse_layer
from f09_memory.bus import EngineBus
from f09_memory.config.config import MemoryConfig
from f09_memory.core.claims import ingest_claim
from f09_memory.core.digest import HashParts, combine_parts, config_fingerprint, hash_parts
from f09_memory.core.records import IngestedRecords, RecordReader
from f09_memory.core.state import EngineState, check_engine_arguments
from f09_memory.core.writer import Writer
from f09_memory.embedding.hashing import HashingEmbedder
from f09_memory.errors import (
    InputInvalidError,
)
from f09_memory.ingestion.claims import Claim, ClaimOutcome
from f09_memory.ingestion.pipeline import Ingestor
from f09_memory.ingestion.typed_extraction import (
    TypedExtractionPrompt,
    TypedExtractionResult,
    build_typed_extraction_prompt,
    parse_typed_memories,
    typed_memory_items,
)
from f09_memory.ingestion.validation import validate_agent_id, validate_item
from f09_memory.introspection.service import Introspector
from f09_memory.maintenance.tick import Maintenance, TickReport
from f09_memory.packing.tokens import HeuristicTokenCounter
from f09_memory.perception.service import Perception
from f09_memory.persistence import engine_io
from f09_memory.persistence.facade import DEFAULT_EMBEDDER, DefaultEmbedder, PersistenceFacade
from f09_memory.persistence.journal import journaled
from f09_memory.procedural.miner import ProceduralMiner
from f09_memory.protocols import EmbeddingProvider, LLMClient, PressureSource, TokenCounter
from f09_memory.redaction.redactor import Redactor
from f09_memory.retrieval.digest import RetrievedBundles
from f09_memory.retrieval.orchestrator import Retriever
from f09_memory.retrieval.semantic import SemanticMemory
from f09_memory.retrieval.service import RetrievalService
from f09_memory.schema.base import build_models
from f09_memory.schema.enums import MemoryLayer, PressureState
from f09_memory.schema.records import MemoryRecord
from f09_memory.schema.retrieval import RetrievalRequest, RetrievedBundle
from f09_memory.social.service import SocialService
from f09_memory.spatial.service import SpatialService
from f09_memory.store.agent import AgentMemory
from f09_memory.summarization.outcome import SummaryOutcome
from f09_memory.summarization.pipeline import Summarizer
from f09_memory.summarization.service import SummarizationService
from f09_memory.world import WorldFacade

__all__ = ["DEFAULT_EMBEDDER", "DefaultEmbedder", "MemoryEngine", "TickReport"]

logger = logging.getLogger("f09_memory")


@owned_by_thread(exclude=("bind_thread",))
class MemoryEngine(PersistenceFacade, WorldFacade):
    """A deterministic, rate-aware, multi-layer memory for many agents.

    Threads: the engine belongs to the thread that created it. Every public method and
    property (and those of ``engine.summarization``) raises ``MEMORY_INPUT_INVALID`` when
    called from another thread, before touching anything; hand the engine to another
    thread with :meth:`bind_thread` (see ``f09_memory._owner``).

    Args:
        config: Settings; defaults to ``MemoryConfig()``.
        seed: Seeds every random choice the engine makes (HNSW construction, the default
            embedder); scenario generators derive from it.
        token_counter: Token estimator (``TokenCounter``); defaults to the chars-per-token
            heuristic of the config.
        pressure_source: Rate governor polled by ``tick``.
        embedder: Embedding provider for the semantic term. Default
            (:data:`DEFAULT_EMBEDDER`): the deterministic ``HashingEmbedder``
            (``embedding_dim``, seeded by ``seed``); ``None`` or a ``NullEmbedder`` turns the
            semantic term off (its weight is redistributed).

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
        embedder: EmbeddingProvider | DefaultEmbedder | None = DEFAULT_EMBEDDER,
    ) -> None:
        build_models()  # the boundary models' first use is never inside a frame
        self._owner = ThreadOwner()
        config = check_engine_arguments(config, seed, token_counter, pressure_source)
        self.config = config
        self.seed = seed
        self.bus = EngineBus(handler_errors=config.bus_handler_errors)
        self.counter: TokenCounter = token_counter or HeuristicTokenCounter(
            config.chars_per_token)
        self._state = EngineState.new(config, seed)
        if isinstance(embedder, DefaultEmbedder):
            embedder = HashingEmbedder(config.embedding_dim, seed=seed)
        query_redactor = Redactor.from_config(config, enabled=True)
        self._semantic = SemanticMemory(
            config, self.bus, embedder, seed,
            redact=query_redactor.redact_text if config.redaction_mode else None)
        self._reader = RecordReader(self._state.store, lambda: self._semantic.version)
        self._retriever = Retriever(config, self.bus, self.counter, self._reader.build_many,
                                    self._reader.digests)
        self._ingestor = Ingestor(config, self.counter)
        self._writer = Writer(self._state, self.bus, self._ingestor, self._semantic,
                              self._reader)
        # Prompts are always redacted, whatever the redaction mode (QG5).
        self._prompt_redactor = Redactor.from_config(config, enabled=True)
        self.summarization = SummarizationService(
            self._state, self._writer,
            Summarizer(config, redact=self._prompt_redactor.redact_text,
                       redact_lines=self._prompt_redactor.redact_lines), owner=self._owner)
        """Two-phase summarization: ``poll`` / ``complete`` / ``fail`` / ``request``."""
        self._spatial = SpatialService(self._state, self._writer, self._reader,
                                       self._ingestor.redactor.redact_text)
        self._miner = ProceduralMiner(self._state, self._writer)
        self._maintenance = Maintenance(self._state, self._writer, self.summarization,
                                        self._semantic, self._miner, pressure_source)
        self._social = SocialService(self._state, self._writer)
        self._perception = Perception(self._state, self._writer, self._social, self._spatial)
        self._retrieval = RetrievalService(self._state, self._retriever, self._semantic,
                                           self._ingestor.redactor, self._spatial.proximity)
        self._introspection = Introspector(self._state, self._retrieval, self._retriever,
                                           self.summarization.summarizer, self._owner)
        self._fingerprint = config_fingerprint(config)
        self._parts = engine_io.EngineParts(self._state, self.summarization.summarizer,
                                            self._semantic, self._clear_caches)

    # ------------------------------------------------------------------ threads
    def bind_thread(self, thread: threading.Thread | None = None) -> None:
        """Hand the engine to ``thread`` (default: the calling thread).

        The engine belongs to one thread at a time; any other thread's call raises
        ``MEMORY_INPUT_INVALID``. Call this on the thread that takes over once the previous
        owner has stopped using the engine, for example on the game loop after a worker
        built or loaded the engine and passed it through a queue (or on the worker, naming
        the game loop's ``thread``). It is the one method any thread may call; handing over
        an engine that another thread is still using is the host's race.

        Durable mode (:meth:`open`) keeps an SQLite connection tied to the opening thread:
        there, ``close()`` the engine and ``open`` it again on the new thread instead.

        Raises:
            InputInvalidError: ``thread`` is not a started ``threading.Thread``, or the
                engine is in durable mode.
        """
        if self._durable is not None:
            raise InputInvalidError(
                "a durable engine cannot change threads (its SQLite connection belongs to the "
                "thread that opened it): close() it and MemoryEngine.open() it again on the "
                "new thread", details={"field": "thread"})
        self._owner.bind(thread)

    # ------------------------------------------------------------------ reading
    @property
    def now(self) -> int:
        """The engine clock: the ``now`` of the last ``tick`` (0 before the first)."""
        return self._state.clock

    @property
    def pressure(self) -> PressureState:
        """The pressure state in force."""
        return self._state.pressure

    @property
    def redactor_counts(self) -> dict[str, int]:
        """Matches replaced so far, by pattern label (redaction diagnostics)."""
        return dict(self._ingestor.redactor.counts)

    @property
    def introspection(self) -> Introspector:
        """Pure reads for operators: ``snapshot``, ``diff``, ``explain``, ``stats``.

        See :class:`~f09_memory.introspection.Introspector`: no state change, no event, the
        same ``state_hash``; text redacted on the way out unless ``redact=False``.
        """
        return self._introspection

    def agents(self) -> list[str]:
        """Ids of agents that have stored memories, sorted."""
        return self._state.store.agent_ids()

    def count(self, agent_id: str | None = None, layer: MemoryLayer | str | None = None) -> int:
        """Live records of one agent (or all), optionally of one layer. O(agents)."""
        code = None if layer is None else parse_layer(layer).code
        if agent_id is not None:
            agent_id = validate_agent_id(agent_id, self._ingestor.limits.agent_id)
        return self._reader.count(agent_id, code)

    def layer_counts(self) -> dict[str, dict[str, int]]:
        """Live records of every agent by layer, ``{agent: {layer: n}}``, agents in id order.

        One read of the per-agent counters :meth:`count` sums (every layer, zeros included):
        O(agents), about 1 us per agent, for metrics that poll a crowd.
        """
        return self._reader.layer_counts()

    def get(self, record_id: str) -> MemoryRecord:
        """Return the live record ``record_id``. O(1).

        Raises:
            RecordNotFoundError: No live record has that id.
        """
        return self._reader.get(record_id)

    def _agent(self, agent_id: str) -> AgentMemory | None:
        return self._state.store.get(validate_agent_id(agent_id, self._ingestor.limits.agent_id))

    def records(
        self, agent_id: str, layer: MemoryLayer | str | None = None
    ) -> list[MemoryRecord]:
        """The agent's live records, oldest first. O(n log n).

        All layers together are ordered by ``(recency_anchor, id)``; episodic alone in ring
        (insertion) order. An unknown agent has none.
        """
        lay = None if layer is None else parse_layer(layer)
        return self._reader.in_time_order(self._agent(agent_id), lay)

    def recent(self, agent_id: str, k: int,
               layer: MemoryLayer | str | None = None) -> list[MemoryRecord]:
        """The agent's ``k`` newest live records, newest first (by anchor, then id).

        Runtime complexity: O(n) numpy plus O(k log k); only the ``k`` records are built.

        Raises:
            InputInvalidError: ``k`` is not a non-negative integer.
        """
        lay = None if layer is None else parse_layer(layer)
        return self._reader.newest(self._agent(agent_id), k, lay)

    # ------------------------------------------------------------------ writing
    def _time(self, now: object) -> int:
        return self._state.clock if now is None else check_now(now)

    @journaled
    def ingest(
        self,
        agent_id: str,
        content: str,
        *,
        layer: MemoryLayer | str = MemoryLayer.EPISODIC,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, object] | None = None,
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

        Runtime complexity: amortized O(1).

        Raises:
            InputInvalidError: A malformed argument (state unchanged).
            CapacityExceededError: The agent is at ``max_records_per_agent``.
        """
        limits = self._ingestor.limits
        agent_id = validate_agent_id(agent_id, limits.agent_id)
        t = self._time(now)
        item = validate_item(content, layer, importance, tags, metadata, ttl, flagged,
                             source_event, limits)
        return self._writer.ingest_record(agent_id, item, t)

    @journaled
    def ingest_many(
        self, agent_id: str, items: Iterable[Mapping[str, object] | str], *, now: int | None = None
    ) -> IngestedRecords:
        """Store several memories of one agent, all or nothing, in order.

        Each item is a content string or a mapping with the keyword arguments of
        :meth:`ingest` (``content`` required). Every item is validated before any is stored,
        so a bad item leaves the state unchanged. Events are emitted after all are stored.
        The result is a sequence of the new records, built when accessed (``.ids`` is free).

        Raises:
            InputInvalidError: An item is malformed (the message gives its index).
            CapacityExceededError: The batch would pass ``max_records_per_agent``.
        """
        agent_id = validate_agent_id(agent_id, self._ingestor.limits.agent_id)
        t = self._time(now)
        return self._writer.ingest_records(agent_id, self._writer.validate_items(items), t)

    @journaled
    def ingest_batch(
        self, items: Iterable[Mapping[str, object]], *, now: int | None = None
    ) -> IngestedRecords:
        """Store one frame of a whole crowd: each item names its agent (``agent_id``).

        Items are mappings with ``agent_id`` plus the keyword arguments of :meth:`ingest`.
        All or nothing: every item is validated first. Agents are stored in id order; the
        result lists the new records in input order (built when accessed).

        Raises:
            InputInvalidError: An item is malformed (the message gives its index).
            CapacityExceededError: An agent would pass ``max_records_per_agent``.
        """
        return self._writer.ingest_batch(items, self._time(now))

    def ingest_typed(
        self, agent_id: str, extraction: TypedExtractionResult | str, *, now: int | None = None
    ) -> tuple[IngestedRecords, TypedExtractionResult]:
        """Store typed memories (seed 002) parsed from an LLM's extraction answer.

        Each memory becomes one record (see ``ingestion.typed_extraction.typed_memory_items``)
        in the layer ``typed_memory_layers`` maps its type to. Malformed blocks are reported
        in the result's diagnostics, never raised. All or nothing, like :meth:`ingest_many`.

        Returns:
            The stored records (in block order) and the parse result.
        """
        result = (extraction if isinstance(extraction, TypedExtractionResult)
                  else parse_typed_memories(extraction))
        items = typed_memory_items(result, self.config.typed_memory_layers)
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
        agent_id = validate_agent_id(agent_id, self._ingestor.limits.agent_id)
        return ingest_claim(self._writer, self._reader, agent_id, content,
                            claim, layer=layer, importance=importance, tags=tags,
                            now=self._time(now))

    @journaled
    def forget(self, record_ids: Iterable[str] | None = None, *,
               agent_id: str | None = None) -> int:
        """Remove records now: the ones named (all or nothing), or all of ``agent_id``.

        Each emits ``memory:record:expired`` with reason ``forgotten``. The agent keeps its
        id counter, so ids are never reused. Forgetting all of an agent also drops its own
        layer state: its opinions (others' opinions of it stay), its last known position
        and its mined patterns. Runtime complexity: O(records removed).

        Returns:
            How many records were removed.

        Raises:
            InputInvalidError: Neither or both arguments given.
            RecordNotFoundError: An id is not a live record (nothing is removed).
        """
        return self._writer.forget(record_ids, agent_id)

    @journaled
    def update(self, record_id: str, *, importance: float | None = None,
               tags: Sequence[str] | None = None, content: str | None = None) -> MemoryRecord:
        """Change a live record's importance, tags (replaced) and/or content in place.

        New text is redacted like an ingest; new content gets a new token estimate and is
        re-embedded by a later tick. Emits ``memory:record:updated``. O(1).

        Returns:
            The updated record.

        Raises:
            RecordNotFoundError: ``record_id`` is not a live record.
            InputInvalidError: A malformed value, or nothing to change (state unchanged).
        """
        return self._reader.build(*self._writer.update(record_id, importance, tags, content))

    def typed_extraction_prompt(
        self, agent_id: str, record_ids: Sequence[str], *, today_date: str
    ) -> TypedExtractionPrompt:
        """The seed 002 extraction prompt over some of an agent's records.

        The text is redacted whatever the redaction mode.

        Raises:
            RecordNotFoundError: An id is not a live record of ``agent_id``.
            InputInvalidError: ``today_date`` is not ``YYYY-MM-DD``, ``record_ids`` is not a
                list, or there is no text.
        """
        agent_id = validate_agent_id(agent_id, self._ingestor.limits.agent_id)
        lines = [f"- {text}" for text in self._reader.contents_of(agent_id, record_ids)]
        return build_typed_extraction_prompt("\n".join(lines), today_date=today_date,
                                             redact=self._prompt_redactor.redact_text)

    # ------------------------------------------------------------------ retrieval
    @journaled
    def retrieve(
        self,
        request: RetrievalRequest | Mapping[str, object],
        *,
        now: int | None = None,
        query_vectors: NDArray[np.float32] | None = None,
    ) -> RetrievedBundle:
        """Build the agent's context bundle for ``request`` (spec section 9).

        The semantic term is the cosine similarity to the centroid of ``request.query``
        (embedded once), ``request.query_vector`` and the optional ``query_vectors``
        (``(n, dim)`` or ``(dim,)``).

        Ordering guarantee: quantized score descending, then id ascending; identical state
        and request give an identical bundle (``bundle_hash``) on any machine (with an HNSW
        preselection: on the same build and CPU).
        Runtime complexity: O(n) numpy work plus O(k log k) for the k packable records.

        Raises:
            TokenBudgetUndefinedError: ``max_tokens`` missing or not positive.
            InputInvalidError: A malformed request.
        """
        return self._retrieval.retrieve(request, self._time(now), query_vectors)

    @journaled
    def retrieve_many(
        self, requests: Iterable[RetrievalRequest | Mapping[str, object]], *,
        now: int | None = None, hashes: bool = False,
    ) -> RetrievedBundles:
        """Serve a whole frame of agents: one bundle per request, in request order.

        The bundles are those :meth:`retrieve` would give one by one, computed in shared
        numpy passes over all the agents (one candidate mask and one scoring pass for the
        frame). All requests are validated first; a bad one raises before any is served.
        Query texts are embedded (and cached) per distinct text.

        With ``hashes=True`` the result's ``hashes`` holds each bundle's
        :func:`~f09_memory.bundle_hash`, from record digests kept per record version.

        Returns:
            The bundles (a list; ``hashes`` is ``None`` unless asked for).

        Raises:
            TokenBudgetUndefinedError: A request without a positive ``max_tokens``.
            InputInvalidError: ``requests`` is not a list, or ``hashes`` not a bool.
        """
        return self._retrieval.retrieve_many(requests, self._time(now), hashes=hashes)

    @property
    def embedder(self) -> EmbeddingProvider | None:
        """The embedding provider in use (``None``: semantic term off)."""
        return self._semantic.provider

    @journaled
    def set_embedder(self, embedder: EmbeddingProvider | None) -> None:
        """Switch the embedding provider.

        A provider with a different ``version`` makes stored vectors stale: they are
        re-embedded, and indexes rebuilt, by later ticks in bounded slices (until then stale
        records score 0 on the semantic term).

        Raises:
            InputInvalidError: ``embedder`` does not fit the EmbeddingProvider protocol.
        """
        self._semantic.switch_provider(embedder, self._state.store)
        self._reader.clear()

    def set_embed_executor(self, executor: Executor | None) -> None:
        """Run async embedding jobs (``embedding_mode="async"``) on ``executor``.

        ``None`` goes back to the engine's own one-thread pool. The executor only decides
        where the model runs: vectors are attached at the same logical tick either way.

        Raises:
            InputInvalidError: The engine is not in async embedding mode, or ``executor``
                has no ``submit``.
        """
        self._semantic.set_executor(executor)

    # ------------------------------------------------------------------ maintenance
    @journaled
    def summarize_pending(self, llm: LLMClient, *, now: int | None = None,
                          timeout_ms: int | None = None) -> list[SummaryOutcome]:
        """Run every queued summarization task through ``llm`` synchronously and apply it.

        The convenience form of ``engine.summarization.poll`` then ``complete``. An LLM
        that raises, returns garbage or does not answer within ``timeout_ms`` of wall time
        (default ``summarization_timeout_ms``; ``memory:summarization:timeout``) never
        loses a record: the local heuristic summary is used instead, and a late answer is
        dropped. In durable mode the whole call is one journal row.

        Raises:
            InputInvalidError: ``llm`` has no ``complete(prompt, ...)``, or a bad timeout.
        """
        return self.summarization.run(llm, now=now, timeout_ms=timeout_ms)

    @journaled
    def set_pressure(self, state: PressureState | str) -> None:
        """Set the rate-governor pressure; emits ``memory:pressure:changed`` on a change.

        Raises:
            InputInvalidError: ``state`` is not a pressure state.
        """
        self._maintenance.set_pressure(state)

    @journaled
    def tick(self, now: int, budget_ms: float | None = None) -> TickReport:
        """Advance the clock to ``now`` and run a slice of maintenance.

        Times out overdue LLM summarization tasks and applies tasks finished without the
        LLM; then, for the agents due (vectorized check), TTL expiry and summarization
        scheduling; then (with budget left) compaction of layers over their retention caps,
        re-embedding of records whose embedding failed or went stale, and vector-index
        slices (see ``maintenance.tick``).

        The budget is counted in work units (``work_units_per_ms`` per millisecond) by a
        cost model calibrated against measured time (``tick_costs``), never by the wall
        clock, so the same calls do the same work on any machine. What does not fit is
        resumed by the next tick and reported in ``TickReport.backlog``.

        Raises:
            InputInvalidError: ``now`` earlier than the engine clock, or a bad budget.
        """
        return self._maintenance.tick(now, budget_ms)

    # ------------------------------------------------------------------ persistence
    @classmethod
    def _build(cls, config: MemoryConfig | None, seed: int,
               adapters: dict[str, Any]) -> MemoryEngine:
        return cls(config, seed=seed, **adapters)

    def _clear_caches(self) -> None:
        self._reader.clear()
        self._retriever.clear()
        self._spatial.clear()

    # ------------------------------------------------------------------ hashing
    def state_hash(self) -> str:
        """sha256 hex of everything the engine holds that determines its answers.

        Config, clock, pressure, embedder and, per agent, its records, vocabulary, table rows
        and summarization tasks (not the maintenance cursors): equal in any process, after
        save/load and over any split into shards (``core.digest``). O(agents + changes).
        """
        return combine_parts(self.state_hash_parts())

    def state_hash_parts(self) -> HashParts:
        """The additive parts of :meth:`state_hash` (shards add theirs: ``core.digest``)."""
        return hash_parts(self._state, self._fingerprint,
                          self.summarization.summarizer.get_state(), self._semantic.version,
                          self._semantic.queries.digest())

    def _check(self) -> None:
        """Assert the state's invariants (tests call this after every mutation)."""
        self._state._check()
        self._spatial._check()
