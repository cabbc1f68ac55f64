"""The semantic term: record embeddings, query centroids, preselection for large agents.

- At ingest, a batch's contents are embedded in one ``embed_in_batches`` call. A provider
  that raises is reported (``memory:embedding:failed``, code ``MEMORY_EMBEDDING_FAILED``);
  the records are stored anyway, un-embedded, and ``tick`` retries them.
- Query texts reach the provider through ``redact`` (the engine's redactor while redaction
  mode is ON), as stored records were redacted at ingest: no raw private data leaves
  through a remote embedder, and a query's placeholders match the records'.
- A provider with a new ``version`` marks every vector stale; ``tick`` re-embeds in bounded
  slices (counted work, deterministic), never in one stall.
- ``semantic = max(0, cos(record, query centroid))``. The centroid is the normalized mean of
  the query text's embedding and any explicit query vectors. Un-embedded records score 0.
- Agents with more candidates than ``semantic_preselect_threshold`` are preselected from
  their vector index where that saves work (``retrieval.preselect.preselection_depth``: an
  HNSW index and candidates at least ``semantic_preselect_min_ratio`` times the search
  depth); otherwise (or while an agent's index is still being built) every candidate is
  scored.
- Indexes (above ``retrieval.indexing.index_threshold`` embedded records):
  :class:`~f09_memory.vector_index.ExactIndex` up to ``exact_index_max`` vectors,
  :class:`~f09_memory.vector_index.HnswIndex` above; built and migrated in tick slices
  (``retrieval.indexing``), inserting keys in ascending order. HNSW results are
  reproducible on the same build and CPU; exact search everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sortedcontainers import SortedSet

from f09_memory.bus import EmbeddingFailed, EngineBus
from f09_memory.config.config import DEFAULT_EMBED_UNITS, MemoryConfig
from f09_memory.embedding.batching import embed_in_batches
from f09_memory.embedding.hashing import HashingEmbedder
from f09_memory.embedding.null import is_available
from f09_memory.errors import ErrorCode, InputInvalidError, MemoryEngineError
from f09_memory.protocols import EmbeddingProvider
from f09_memory.retrieval.async_embedding import AsyncEmbedding, attach_job
from f09_memory.retrieval.indexing import slice_in_key_order
from f09_memory.retrieval.job import NO_SEMANTIC, SemanticTerm
from f09_memory.retrieval.preselect import preselected_term, preselection_depth
from f09_memory.retrieval.query_vectors import QueryVectors
from f09_memory.retrieval.similarity import remembered_similarities
from f09_memory.schema.retrieval import RetrievalRequest
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import record_id
from f09_memory.store.store import MemoryStore
from f09_memory.vector_index.checks import unit_rows

__all__ = ["NO_QUERY", "QUERY_PENDING", "SemanticMemory"]

NO_QUERY = "NO_QUERY"
"""``semantic_fallback`` when the request carried neither query text nor query vectors."""

QUERY_PENDING = "QUERY_PENDING"
"""``semantic_fallback`` in async embedding mode while the query text's vector is on its way
(it enters the query table at a tick; see ``retrieval.query_vectors``)."""

_NO_QUERY = SemanticTerm(None, NO_QUERY)

_QUERY_CACHE_MAX = 4096
_MAX_DIM = 65_536
"""The largest embedder dimension accepted."""


def _centroid(parts: list[NDArray[np.float32]]) -> NDArray[np.float32] | None:
    """The unit mean of the query parts; ``None`` when it is the zero vector."""
    if len(parts) == 1 and parts[0].shape[0] == 1:  # one vector: its own mean, exactly
        centroid = parts[0][0]
    else:
        centroid = np.concatenate(parts).mean(axis=0)
    norm = float(np.sqrt(centroid.dot(centroid)))  # np.linalg.norm's float32 steps
    if norm == 0.0:
        return None
    out: NDArray[np.float32] = (centroid / norm).astype(np.float32)
    return out


class SemanticMemory:
    """Owns the embedding provider and every agent's vectors and index."""

    def __init__(
        self, config: MemoryConfig, bus: EngineBus, provider: EmbeddingProvider | None, seed: int,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.config = config
        self.bus = bus
        self.seed = seed
        self.redact = redact
        """Applied to query texts before they are embedded (``None``: sent as given)."""
        self.provider: EmbeddingProvider | None = None
        self.dim: int | None = None
        """The provider's vector dimension, read (and checked) once when it is set."""
        self.version: str | None = None
        self._queries: dict[str, NDArray[np.float32]] = {}
        self._centroids: dict[str, tuple[NDArray[np.float32] | None]] = {}
        self.pending: AsyncEmbedding | None = (
            AsyncEmbedding(self._embed, config.embedding_latency_ms)
            if config.embedding_mode == "async" else None)
        """Async mode: the embedding jobs waiting for their tick."""
        self.queries = QueryVectors(_QUERY_CACHE_MAX)
        """Async mode: the query vectors applied by ticks (engine state; keyed by the
        redacted query text)."""
        self.retry_agents: SortedSet = SortedSet()
        """Agents that may hold live un-embedded records (failed or stale), in id order:
        ``retry_slice`` visits only these and drops those it finds done."""
        self.set_provider(provider)

    # ------------------------------------------------------------------ provider
    @property
    def query_dim(self) -> int | None:
        """The dimension query vectors must have (``None``: no provider, not checked)."""
        return self.dim if self.provider is not None else None

    @property
    def available(self) -> bool:
        """Whether a usable provider is configured."""
        return self.provider is not None and is_available(self.provider)

    def set_provider(self, provider: EmbeddingProvider | None) -> bool:
        """Use ``provider`` from now on; return True if stored vectors became stale.

        Raises:
            InputInvalidError: ``provider`` does not fit the EmbeddingProvider protocol.
        """
        dim, version = None, None
        if provider is not None:
            try:  # the protocol check reads the properties: an adapter's own error may come
                fits = isinstance(provider, EmbeddingProvider)
                if fits:
                    dim = provider.dim
                    version = str(provider.version) if is_available(provider) else None
            except Exception as exc:
                raise InputInvalidError(
                    "the embedder's dim, version or available raised: fix the adapter so they "
                    "return an int, a str and a bool", details={"field": "embedder"},
                ) from exc
            if not fits:
                raise InputInvalidError(
                    "embedder must provide dim, version and embed(texts) (EmbeddingProvider)",
                    details={"field": "embedder", "got": type(provider).__name__},
                )
            if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or not (
                    1 <= dim <= _MAX_DIM):
                raise InputInvalidError(
                    f"the embedder's dim must be an int in 1..{_MAX_DIM} (got "
                    f"{type(dim).__name__})", details={"field": "embedder.dim"})
        old = self.version
        self.provider = provider
        self.dim = None if dim is None else int(dim)
        self.version = version
        self._queries.clear()
        self._centroids.clear()
        return old is not None and old != self.version

    def switch_provider(self, provider: EmbeddingProvider | None, store: MemoryStore) -> None:
        """:meth:`set_provider` on a store that holds records (``MemoryEngine.set_embedder``).

        A provider that makes stored vectors stale (or no provider) invalidates them all;
        the same version retries every agent's records that failed to embed.
        """
        if self.set_provider(provider) or not self.available:
            self.invalidate(store)
        else:
            self.retry_all(store)

    def invalidate(self, store: MemoryStore) -> None:
        """Mark every vector stale and drop every index (after a provider change)."""
        if self.pending is not None:
            self.pending.drop()
            self.queries.clear()
        for am in store:
            am.clear_embedded()
            am.drop_index()
        self.retry_all(store)

    def embed_cost(self) -> int:
        """Work units a tick charges per text it embeds.

        ``tick_costs.embed`` if set, else the provider's ``tick_cost_units``, else
        ``DEFAULT_EMBED_UNITS``.
        """
        configured = self.config.tick_costs.embed
        if configured is not None:
            return configured
        declared = getattr(self.provider, "tick_cost_units", None)
        if isinstance(declared, int) and not isinstance(declared, bool) and declared > 0:
            return declared
        return DEFAULT_EMBED_UNITS

    def retry_all(self, store: MemoryStore) -> None:
        """Let ``retry_slice`` look at every agent (a new provider, a loaded state)."""
        self.retry_agents.update(store.agent_ids())

    # ------------------------------------------------------------------ embedding
    def _embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        provider = self.provider
        assert provider is not None
        if type(provider) is HashingEmbedder:
            # Our own embedder returns finite unit float32 rows already: skip the re-checks.
            return provider.embed(texts)
        return embed_in_batches(provider, texts, self.config.embedding_batch_size)

    def _embed_queries(self, texts: list[str]) -> NDArray[np.float32]:
        redact = self.redact
        return self._embed(texts if redact is None else [redact(t) for t in texts])

    def embed_keys(
        self, keys: Sequence[tuple[AgentMemory, int]], texts: Sequence[str], events: list[Any]
    ) -> NDArray[np.float32] | None:
        """Embed the texts of records about to be stored (one batched call for all).

        Returns ``None`` if no provider is available or it failed (then one
        ``memory:embedding:failed`` event per agent is queued in ``events``).
        """
        if not self.available or not texts:
            return None
        try:
            return self._embed(texts)
        except MemoryEngineError as exc:
            by_agent: dict[str, list[str]] = {}
            for am, key in keys:
                by_agent.setdefault(am.agent_id, []).append(am.id_of(key))
            self.retry_agents.update(by_agent)
            for agent_id, ids in by_agent.items():
                events.append(EmbeddingFailed(
                    agent_id=agent_id, record_ids=tuple(ids),
                    reason=f"{ErrorCode.MEMORY_EMBEDDING_FAILED.value}: {exc.message}"))
            return None

    def attach(self, am: AgentMemory, slot: int, key: int, vector: NDArray[np.float32]) -> None:
        """Store a record's vector; index it when the agent's index is complete."""
        am.attach_vectors(np.array([slot], dtype=np.intp), vector[None, :])

    def submit(self, keys: Sequence[tuple[AgentMemory, int]], texts: Sequence[str],
               now: int) -> None:
        """Async mode: hand records' texts to the worker (see ``retrieval.async_embedding``).

        An agent without a vector column gets it now, so the tick that attaches the vectors
        never allocates one (50 agents' first columns took 3 ms of one tick).
        """
        assert self.pending is not None and self.dim is not None
        for am, _ in keys:
            if am.vectors is None:
                am.ensure_vectors(self.dim)
        self.pending.submit([(am.agent_id, key) for am, key in keys], list(texts), now)

    def apply_due(self, store: MemoryStore, now: int, events: list[Any]) -> tuple[int, int]:
        """Attach the vectors of the async jobs due at ``now`` (waiting for the worker).

        A record that left the store, was re-embedded meanwhile, or whose content changed is
        skipped (a changed one is re-embedded by a later tick). A failed job is reported
        (``memory:embedding:failed``) and its records retried by later ticks. Returns how
        many vectors were attached and to how many agents' blocks (see :func:`attach_job`).
        """
        if self.pending is None or not self.available:
            return 0, 0
        done = agents = 0
        for job in self.pending.take_due(now):
            assert job.future is not None
            try:
                vectors = job.future.result()
            except Exception as exc:  # the provider's failure, raised on the worker
                reason = exc.message if isinstance(exc, MemoryEngineError) else str(exc)
                by_agent: dict[str, list[str]] = {}
                for agent_id, key in job.keys:
                    by_agent.setdefault(agent_id, []).append(record_id(agent_id, key))
                self.retry_agents.update(by_agent)
                events.extend(EmbeddingFailed(
                    agent_id=a, record_ids=tuple(ids),
                    reason=f"{ErrorCode.MEMORY_EMBEDDING_FAILED.value}: {reason}"[:300])
                    for a, ids in by_agent.items())
                continue
            if job.queries:
                self.queries.add(job.texts, vectors)
                continue
            attached, blocks = attach_job(store, job.keys, job.texts, vectors,
                                          self.retry_agents)
            done += attached
            agents += blocks
        return done, agents

    def set_executor(self, executor: Executor | None) -> None:
        """Run async embedding jobs on ``executor`` (``None``: the engine's own pool).

        Raises:
            InputInvalidError: Not in async embedding mode, or ``executor`` has no
                ``submit``.
        """
        if self.pending is None:
            raise InputInvalidError("set_embed_executor needs MemoryConfig(embedding_mode="
                                    "'async')", details={"field": "embedding_mode"})
        if executor is not None and not callable(getattr(executor, "submit", None)):
            raise InputInvalidError("executor must be a concurrent.futures.Executor",
                                    details={"field": "executor"})
        self.pending.set_executor(executor)

    def attach_many(self, am: AgentMemory, slots: Sequence[int], keys: Sequence[int],
                    vectors: NDArray[np.float32]) -> None:
        """:meth:`attach` for several records of one agent, ``vectors`` in slot order.

        Through ``AgentMemory.attach_rows``: a run of fresh slots (a ``range``) takes the
        rows in one block copy, a few other slots row by row.
        """
        if not slots:
            return
        am.attach_rows(slots, vectors, range(len(slots)))

    def retry_slice(self, store: MemoryStore, budget: int | None,
                    now: int = 0) -> tuple[int, int, list[Any]]:
        """Embed un-embedded live records (failed or stale) within ``budget`` work units.

        Agents in id order (those in :attr:`retry_agents`), keys in order. In async mode the
        texts go to the worker instead (see :meth:`_retry_async`). Returns ``(embedded,
        used_units, events)``.
        """
        events: list[Any] = []
        if not self.available or not self.retry_agents:
            return 0, 0, events
        if self.pending is not None:
            return 0, self._retry_async(store, now), events
        cost = self.embed_cost()
        done = used = 0
        for agent_id, am, waiting in self._retry_candidates(store):
            todo = slice_in_key_order(am, waiting, budget, used, cost)
            if todo is None:
                break
            if todo.shape[0] == int(np.count_nonzero(waiting)):
                self.retry_agents.discard(agent_id)  # this slice finishes the agent
            if todo.shape[0] == 0:
                continue
            slots = todo.tolist()
            keys = am.key[todo].tolist()
            used += cost * len(slots)
            try:
                vecs = self._embed([am.content[s] or "" for s in slots])
            except MemoryEngineError as exc:
                events.append(EmbeddingFailed(
                    agent_id=am.agent_id, record_ids=tuple(am.id_of(k) for k in keys),
                    reason=f"{ErrorCode.MEMORY_EMBEDDING_FAILED.value}: {exc.message}"))
                self.retry_agents.add(agent_id)
                break
            for i, slot in enumerate(slots):
                self.attach(am, slot, keys[i], vecs[i])
            done += len(slots)
        return done, used, events

    def _retry_candidates(
        self, store: MemoryStore
    ) -> Iterator[tuple[str, AgentMemory, NDArray[np.bool_]]]:
        """``(agent_id, memory, un-embedded live mask)`` of the agents to retry, in id order.

        Agents that left the store are dropped from :attr:`retry_agents`.
        """
        for agent_id in list(self.retry_agents):
            am = store.get(agent_id)
            if am is None:
                self.retry_agents.discard(agent_id)
                continue
            yield agent_id, am, am.alive[:am.hi] & ~am.embedded[:am.hi]

    def _retry_async(self, store: MemoryStore, now: int) -> int:
        """Async mode: hand the worker texts to re-embed, keeping one batch in flight.

        Up to ``embedding_batch_size`` texts wait for the worker at any time (a count that
        changes only at ticks, so the pacing is deterministic); the tick at ``now +
        embedding_latency_ms`` attaches them. The model never runs in the tick, which
        charges ``tick_costs.embed_apply`` per text handed over. Returns the units used.
        """
        pending = self.pending
        assert pending is not None
        room = self.config.embedding_batch_size - pending.waiting
        keys: list[tuple[str, int]] = []
        texts: list[str] = []
        by_agent = pending.keys_by_agent()
        for agent_id, am, waiting in self._retry_candidates(store):
            if room <= 0:
                break
            queued = by_agent.get(agent_id)
            if queued:
                waiting &= ~np.isin(am.key[:am.hi],
                                    np.fromiter(queued, np.int64, len(queued)))
            todo = slice_in_key_order(am, waiting, None, 0, 1)
            assert todo is not None
            if todo.shape[0] <= room:
                self.retry_agents.discard(agent_id)  # this hand-over finishes the agent
            todo = todo[:room]
            keys.extend((agent_id, k) for k in am.key[todo].tolist())
            texts.extend(am.content[s] or "" for s in todo.tolist())
            room -= int(todo.shape[0])
        if texts:
            pending.submit(keys, texts, now)
        return len(texts) * self.config.tick_costs.embed_apply

    # ------------------------------------------------------------------ indexes
    def retry_backlog(self, store: MemoryStore) -> int:
        """Live records waiting to be (re-)embedded, async jobs' texts included.

        0 without a usable provider.
        """
        if not self.available:
            return 0
        pending = self.pending
        total = 0 if pending is None else pending.waiting
        by_agent = {} if pending is None or not self.retry_agents else pending.keys_by_agent()
        for agent_id in self.retry_agents:
            am = store.get(agent_id)
            if am is not None:
                queued = len(by_agent.get(agent_id, ()))
                count = int(np.count_nonzero(am.alive[:am.hi] & ~am.embedded[:am.hi]))
                total += max(0, count - queued)  # queued ones are counted with their job
        return total

    # ------------------------------------------------------------------ retrieval
    def _query_key(self, text: str) -> str:
        """The query table's key of ``text`` (async mode): its redacted form."""
        return text if self.redact is None else self.redact(text)

    def query_pending(self, text: str | None) -> bool:
        """Async mode: whether ``text`` has no vector in the query table yet."""
        return (self.pending is not None and bool(text)
                and self._query_key(text or "") not in self.queries)

    def prepare_queries(self, texts: Sequence[str | None], now: int = 0) -> None:
        """Embed the distinct query texts not cached yet, in one batched call.

        Async mode: hand them to the worker instead; their vectors enter the query table at
        the first tick at or after ``now + embedding_latency_ms``. A provider failure is
        left for the per-request path (which falls back).
        """
        if not self.available:
            return
        pending = self.pending
        if pending is not None:
            fresh = list(dict.fromkeys(
                key for key in (self._query_key(t) for t in texts if t)
                if key not in self.queries and key not in pending.queued_queries))
            if fresh:
                pending.submit_queries(fresh, now)
            return
        todo = list(dict.fromkeys(t for t in texts if t and t not in self._queries))
        if not todo:
            return
        try:
            vectors = self._embed_queries(todo)
        except MemoryEngineError:
            return
        for text, vector in zip(todo[-_QUERY_CACHE_MAX:], vectors[-_QUERY_CACHE_MAX:],
                                strict=True):
            if len(self._queries) >= _QUERY_CACHE_MAX:
                self._queries.pop(next(iter(self._queries)))
            self._queries[text] = vector

    def query_vector(
        self, text: str | None, vectors: NDArray[np.float32] | None
    ) -> NDArray[np.float32] | None:
        """The unit query centroid from ``text`` and/or explicit ``vectors``.

        ``None`` when there is nothing to embed. ``vectors`` were checked
        (:func:`~f09_memory.retrieval.service.check_query_vectors`): a finite float
        ``(n, dim)`` array.

        Raises:
            EmbeddingFailedError: The provider failed on the query text.
        """
        assert self.provider is not None
        parts: list[NDArray[np.float32]] = []
        if text and self.pending is not None:  # async: the query table's vector, if any
            found = self.queries.get(self._query_key(text))
            if found is not None:
                parts.append(found[None, :])
            text = None
            if vectors is None:
                return _centroid(parts) if parts else None
        if text and vectors is None:  # the common case: the text's centroid, computed once
            hit = self._centroids.get(text)
            if hit is not None:
                return hit[0]
        if text:
            cached = self._queries.get(text)
            if cached is None:
                cached = self._embed_queries([text])[0]
                if len(self._queries) >= _QUERY_CACHE_MAX:
                    self._queries.pop(next(iter(self._queries)))
                self._queries[text] = cached
            parts.append(cached[None, :])
            if vectors is None:
                centroid = _centroid(parts)
                if len(self._centroids) >= _QUERY_CACHE_MAX:
                    self._centroids.pop(next(iter(self._centroids)))
                self._centroids[text] = (centroid,)
                return centroid
        if vectors is not None:  # checked by check_query_vectors: finite, (n, dim)
            parts.append(unit_rows(vectors))
        return _centroid(parts) if parts else None

    def term(
        self,
        am: AgentMemory,
        slots: NDArray[np.intp],
        request: RetrievalRequest,
        query_vectors: NDArray[np.float32] | None = None,
    ) -> tuple[SemanticTerm, NDArray[np.intp]]:
        """The semantic term for candidate ``slots`` and the slots to score.

        The slots are the candidates, or a preselected subset for large agents.
        """
        if not self.available:
            return NO_SEMANTIC, slots
        if request.query is None and request.query_vector is None and query_vectors is None:
            return _NO_QUERY, slots  # most of a crowd's requests: no call into the provider
        if request.query_vector is not None:
            given = np.asarray(request.query_vector, dtype=np.float32)[None, :]
            query_vectors = given if query_vectors is None else np.concatenate(
                (given, np.asarray(query_vectors, dtype=np.float32).reshape(-1, given.shape[1])))
        if query_vectors is None and self.query_pending(request.query):
            return SemanticTerm(None, QUERY_PENDING), slots
        try:
            q = self.query_vector(request.query, query_vectors)
        except MemoryEngineError as exc:
            if exc.code is not ErrorCode.MEMORY_EMBEDDING_FAILED:
                raise
            # A provider failing on the query degrades to the fallback score path.
            return SemanticTerm(None, ErrorCode.MEMORY_EMBEDDING_FAILED.value), slots
        if q is None:
            return _NO_QUERY, slots
        if am.vectors is None:
            return SemanticTerm(np.zeros(slots.shape[0]), None), slots
        index = am.index
        if index is not None and (
                depth := preselection_depth(self.config, am, index, slots, request)) is not None:
            return preselected_term(am, index, slots, q, depth)
        return SemanticTerm(remembered_similarities(am, slots, q), None), slots
