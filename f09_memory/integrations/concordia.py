"""A Concordia memory bank backed by a MemoryEngine (extra ``[concordia]``, gdm-concordia 2.x).

Swap one import and Concordia's entities, components and game masters keep working::

    # from concordia.associative_memory import basic_associative_memory
    from f09_memory.integrations import concordia as basic_associative_memory

    bank = basic_associative_memory.AssociativeMemoryBank(sentence_embedder=embedder)
    entity = basic.Entity(params={"name": "Alice"}).build(model, bank)

:class:`AssociativeMemoryBank` has the interface of Concordia's bank, with the same
signatures and return types: ``add``, ``extend``, ``retrieve_associative``,
``retrieve_recent``, ``scan``, ``get_state`` / ``set_state``, ``len()``,
``get_all_memories_as_text``, ``get_data_frame``, ``set_embedder``. What it does, and where
it differs from Concordia's:

- **Every add is kept, as raw text, by default.** ``capacity=None`` sizes the episodic ring
  at ``max_records_per_agent`` and raises ``MEMORY_CAPACITY_EXCEEDED`` at that ceiling
  instead of evicting; ``capacity=N`` keeps the newest N (the oldest is evicted, ``len``
  stops growing). ``redact=False`` stores text as given, so ``scan`` selectors match what
  was added; ``redact=True`` stores ``<REDACT:...>`` placeholders instead of private values
  (and ``scan``, ``retrieve_*`` return those). Both are the bank's arguments, never a
  config default picked up silently (:func:`bank_config`).
- **Top-k by cosine.** ``retrieve_associative(query, k)`` is one ``RetrievalRequest`` with
  ``limit=k`` under a cosine-only weight preset (:func:`cosine_only_scoring`): the same
  top-k as Concordia's bank, except the order among memories of equal cosine (ours: oldest
  first; Concordia's sort leaves it unspecified) and among memories of negative cosine (the
  engine's semantic term is ``max(0, cos)``, so they tie). Concordia ranks by the raw dot
  product: the two agree when the embedder returns unit vectors, as sentence embedders do.
- **Dedup** like Concordia's: newlines become spaces, and a text equal to a stored one is
  ignored (a sha256 of the stored text, never ``hash()``; rebuilt from the records on
  ``set_state``). The embedder is not called for a duplicate.
- **Time** is a logical clock: each stored add is one unit (its ``created_at``), and
  retrievals run at the clock. The bank never ticks, so nothing is summarized, decayed away
  or compacted.
- **State** (``get_state``) is a JSON-safe mapping holding the engine's snapshot bytes
  (``MemoryEngine.dumps``, base64), as Concordia's checkpoints ``json.dump`` it; no temp
  file. ``set_state`` also takes the state of Concordia's own bank (its texts are added
  again, in order, through the embedder).
- **Threads.** Concordia calls components from a thread pool; the engine belongs to one
  thread. The bank serializes its calls with a lock and hands the engine to the calling
  thread (``MemoryEngine.bind_thread``) when it changes.

Nothing here imports Concordia: the bank is duck-typed like Concordia's, and
``get_data_frame`` imports pandas (a Concordia dependency) when called.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from f09_memory.config import MemoryConfig, ScoreWeights, ScoringTables
from f09_memory.engine import MemoryEngine
from f09_memory.errors import (
    CapacityExceededError,
    ConfigInvalidError,
    InputInvalidError,
    SnapshotInvalidError,
)
from f09_memory.integrations.callable_embedder import CallableEmbedder, SentenceEmbedder
from f09_memory.redaction import Redactor
from f09_memory.schema import PressureState, Purpose, RetrievalRequest, Strategy

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ASSOCIATIVE_PURPOSE",
    "ASSOCIATIVE_STRATEGY",
    "AssociativeMemoryBank",
    "COSINE_ONLY",
    "CallableEmbedder",
    "MAX_K",
    "STATE_FORMAT",
    "SentenceEmbedder",
    "bank_config",
    "cosine_only_scoring",
]

ASSOCIATIVE_PURPOSE = Purpose.REASONING
"""The purpose of the bank's requests (it reads every layer)."""
ASSOCIATIVE_STRATEGY = Strategy.SEMANTIC
"""The strategy whose weights :func:`cosine_only_scoring` replaces for that purpose."""
COSINE_ONLY = ScoreWeights(importance=0.0, recency=0.0, semantic=1.0, structural=0.0)
"""The cosine-only weights of associative retrieval."""
MAX_K = 100_000
"""The most memories one ``retrieve_associative`` / ``retrieve_recent`` returns."""
STATE_FORMAT = "f09_memory.integrations.concordia.AssociativeMemoryBank"
"""The ``format`` entry of :meth:`AssociativeMemoryBank.get_state`."""
_STATE_VERSION = 1


def cosine_only_scoring(scoring: ScoringTables) -> ScoringTables:
    """``scoring`` with the associative weights (reasoning x semantic) set to :data:`COSINE_ONLY`.

    Every other table entry is kept, so a host that queries the engine directly still gets
    the usual balanced, recency and importance mixes. Weights are renormalized after the
    pressure multipliers, so one positive weight stays cosine-only under every pressure
    state whose semantic multiplier is not 0 (the bank's own requests pin ``normal``
    pressure anyway, so the text it returns is never compressed).
    """
    weights = {purpose: dict(by_strategy) for purpose, by_strategy in scoring.weights.items()}
    weights[ASSOCIATIVE_PURPOSE][ASSOCIATIVE_STRATEGY] = COSINE_ONLY
    return ScoringTables(**{**dict(scoring), "weights": weights})  # validated


def bank_config(base: MemoryConfig | None = None, *, capacity: int | None = None,
                redact: bool = False) -> MemoryConfig:
    """The config an :class:`AssociativeMemoryBank` runs on: ``base`` plus the bank's choices.

    The bank's arguments decide, whatever ``base`` holds:

    - ``episodic_max``: ``capacity``, or ``base.max_records_per_agent`` when ``capacity``
      is ``None`` (every add kept; the bank raises at that ceiling instead of evicting);
    - ``redaction_mode``: ``redact`` (``False``: raw text, as Concordia stores it);
    - ``scoring``: :func:`cosine_only_scoring` of ``base.scoring``;
    - ``summarization_keep_recent``: ``episodic_max`` (nothing is ever summarized).

    Everything else (embedding dimension, redaction patterns and key, limits) is ``base``'s.

    Raises:
        ConfigInvalidError: ``capacity`` is not an int in ``1..base.max_records_per_agent``.
    """
    base = MemoryConfig() if base is None else base
    if not isinstance(base, MemoryConfig):
        raise ConfigInvalidError("config must be a MemoryConfig", details={"field": "config"})
    ceiling = base.max_records_per_agent
    if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int)
                                 or not 1 <= capacity <= min(ceiling, 10_000_000)):
        raise ConfigInvalidError(
            "capacity must be None (keep every add) or an int from 1 to "
            "max_records_per_agent (and at most 10,000,000)", details={"field": "capacity"})
    ring = min(ceiling, 10_000_000) if capacity is None else capacity
    if not isinstance(redact, bool):
        raise ConfigInvalidError("redact must be a bool", details={"field": "redact"})
    return base.replace(episodic_max=ring, redaction_mode=redact,
                        summarization_keep_recent=ring, scoring=cosine_only_scoring(base.scoring))


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


@dataclass(slots=True)
class _Contents:
    """What ``set_state`` swaps at once: the engine, the dedup index and the clock."""

    engine: MemoryEngine
    seen: dict[bytes, int]
    """sha256 of each stored text -> the clock of its add (for the ring: still stored?)."""
    clock: int


class AssociativeMemoryBank:
    """Concordia's ``AssociativeMemoryBank`` interface over a :class:`~f09_memory.MemoryEngine`.

    See the module docstring for what differs from Concordia's bank. Thread-safe (one lock);
    every method is O(1) Python work plus the engine's numpy work.

    Args:
        sentence_embedder: ``str -> vector``; ``None`` until :meth:`set_embedder`
            (``add`` and ``retrieve_associative`` raise before that, as in Concordia).
        capacity: ``None`` (default): keep every add, up to ``max_records_per_agent``, then
            raise ``MEMORY_CAPACITY_EXCEEDED``. An int: keep the newest ``capacity`` adds.
        redact: ``False`` (default): store text as given. ``True``: private values become
            ``<REDACT:...>`` placeholders before anything is stored or embedded.
        config: The base settings (see :func:`bank_config` for the four the bank decides).
        seed: The engine seed.
        agent_id: The engine's agent id for this bank's memories.
        embedder_dim: The embedder's vector length (``None``: probed with one call).
        embedder_version: Names the embedder's model (see :class:`CallableEmbedder`).

    Raises:
        ConfigInvalidError: A bad ``capacity``, ``redact`` or ``config``.
        InputInvalidError: A bad embedder, seed or agent id.
    """

    def __init__(
        self,
        sentence_embedder: SentenceEmbedder | None = None,
        *,
        capacity: int | None = None,
        redact: bool = False,
        config: MemoryConfig | None = None,
        seed: int = 0,
        agent_id: str = "entity",
        embedder_dim: int | None = None,
        embedder_version: str | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._config = bank_config(config, capacity=capacity, redact=redact)
        self._capacity = capacity
        self._seed = seed
        self._agent = agent_id
        self._dim_hint = embedder_dim
        self._version_hint = embedder_version
        self._embedder = (None if sentence_embedder is None else CallableEmbedder(
            sentence_embedder, dim=embedder_dim, version=embedder_version))
        self._redactor = Redactor.from_config(self._config) if redact else None
        engine = MemoryEngine(self._config, seed=seed, embedder=self._embedder)
        engine.count(agent_id)  # checks the agent id now, not at the first add
        self._contents = _Contents(engine, {}, 0)
        self._thread = threading.get_ident()
        self._requests: dict[int, RetrievalRequest] = {}

    # ------------------------------------------------------------------ the engine
    @property
    def engine(self) -> MemoryEngine:
        """The engine holding the memories (call it from the thread that used the bank last)."""
        return self._contents.engine

    @property
    def agent_id(self) -> str:
        """The engine's agent id of this bank's memories."""
        return self._agent

    @property
    def config(self) -> MemoryConfig:
        """The settings in force (:func:`bank_config` of the constructor's arguments)."""
        return self._config

    @property
    def capacity(self) -> int | None:
        """``None``: every add is kept (up to the engine's ceiling); else the ring's size."""
        return self._capacity

    def _own(self) -> _Contents:
        """Hand the engine to the calling thread if it changed (the lock is held)."""
        ident = threading.get_ident()
        if ident != self._thread:
            self._contents.engine.bind_thread()
            self._thread = ident
        return self._contents

    def _require_embedder(self, method: str) -> CallableEmbedder:
        if self._embedder is None:
            raise InputInvalidError(
                f"Embedder must be set before calling the `{method}` method: pass "
                "sentence_embedder= or call set_embedder()", details={"field": "embedder"})
        return self._embedder

    # ------------------------------------------------------------------ writing
    def add(self, text: str) -> None:
        """Add ``text`` (newlines become spaces) unless an equal text is stored.

        Raises:
            InputInvalidError: No embedder, or ``text`` is not a non-blank str.
            EmbeddingFailedError: The embedder failed (nothing is stored).
            CapacityExceededError: The bank keeps every add and is at its ceiling.
        """
        with self._lock:
            self._add(self._own(), text)

    def extend(self, texts: Iterable[str]) -> None:
        """:meth:`add` each text, in order (those before a failing one stay added)."""
        with self._lock:
            contents = self._own()
            for text in texts:
                self._add(contents, text)

    def _add(self, contents: _Contents, text: str) -> None:
        embedder = self._require_embedder("add")
        if not isinstance(text, str):
            raise InputInvalidError("text must be a str", details={"field": "text"})
        text = text.replace("\n", " ")
        stored = text if self._redactor is None else self._redactor.redact_text(text)
        key = _digest(stored)
        ring = self._config.episodic_max
        at = contents.seen.get(key)
        if at is not None and at >= contents.clock - ring:
            return  # stored already (and not evicted from the ring since)
        engine = contents.engine
        if self._capacity is None and engine.count(self._agent) >= ring:
            raise CapacityExceededError(
                f"the bank keeps every add and holds {ring} memories, the engine's ceiling: "
                "raise max_records_per_agent in config, or pass capacity= to keep the newest",
                details={"limit": ring})
        embedder.vector(stored)  # raises here, as Concordia's add; the engine reuses it
        engine.ingest(self._agent, text, now=contents.clock)
        contents.seen[key] = contents.clock
        contents.clock += 1
        if len(contents.seen) > 2 * ring + 16:  # ring mode: forget evicted texts
            floor = contents.clock - ring
            contents.seen = {k: t for k, t in contents.seen.items() if t >= floor}

    def set_embedder(self, embedder: SentenceEmbedder) -> None:
        """Use ``embedder`` from now on.

        Stored vectors are kept when its vector length is the old one's (as Concordia's
        bank keeps its embeddings); another length re-embeds every memory now.

        Raises:
            InputInvalidError: ``embedder`` is not callable.
            EmbeddingFailedError: Probing or re-embedding failed.
        """
        with self._lock:
            contents = self._own()
            adapter = CallableEmbedder(embedder, dim=self._dim_hint,
                                       version=self._version_hint)
            stale = self._embedder is not None and self._embedder.version != adapter.version
            self._embedder = adapter
            engine = contents.engine
            engine.set_embedder(adapter)
            if stale and engine.count(self._agent):  # re-embed all now: nothing else ticks
                engine.tick(max(contents.clock, engine.now))

    # ------------------------------------------------------------------ reading
    def _k(self, k: object) -> int:
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            raise InputInvalidError("Limit must be positive: k must be an int > 0",
                                    details={"field": "k"})
        return k

    def _request(self, limit: int) -> RetrievalRequest:
        """The associative request for ``limit`` records (built once per limit)."""
        request = self._requests.get(limit)
        if request is None:
            if len(self._requests) >= 64:
                self._requests.clear()
            request = self._requests[limit] = RetrievalRequest(
                agent_id=self._agent, purpose=ASSOCIATIVE_PURPOSE, strategy=ASSOCIATIVE_STRATEGY,
                limit=limit, pressure_state=PressureState.NORMAL)
        return request

    def retrieve_associative(self, query: str, k: int = 1) -> list[str]:
        """The ``k`` memories most cosine-similar to ``query``, most similar first.

        Equal cosines: oldest first. Runtime complexity: O(n) numpy plus O(k log k).

        Raises:
            InputInvalidError: No embedder, ``query`` not a str, ``k`` not a positive int,
                or more than :data:`MAX_K` memories asked and stored.
            EmbeddingFailedError: The embedder failed on the query.
        """
        with self._lock:
            contents = self._own()
            embedder = self._require_embedder("retrieve_associative")
            k = self._k(k)
            if not isinstance(query, str):
                raise InputInvalidError("query must be a str", details={"field": "query"})
            engine = contents.engine
            limit = min(k, engine.count(self._agent))
            if limit == 0:
                return []
            if limit > MAX_K:
                raise InputInvalidError(f"k above {MAX_K:,}: read all memories with scan or "
                                        "get_all_memories_as_text", details={"field": "k"})
            text = query if self._redactor is None else self._redactor.redact_text(query)
            bundle = engine.retrieve(self._request(limit), now=contents.clock,
                                     query_vectors=embedder.vector(text))
            return [record.content for record in bundle.records]

    def retrieve_recent(self, k: int = 1) -> list[str]:
        """The ``k`` newest memories, oldest of them first (as Concordia's bank).

        Runtime complexity: O(n) numpy plus O(k log k).

        Raises:
            InputInvalidError: ``k`` is not a positive int, or is above :data:`MAX_K`.
        """
        with self._lock:
            contents = self._own()
            k = self._k(k)
            if k > MAX_K:
                raise InputInvalidError(f"k above {MAX_K:,}: read all memories with scan or "
                                        "get_all_memories_as_text", details={"field": "k"})
            newest = contents.engine.recent(self._agent, k)
            return [record.content for record in reversed(newest)]

    def _texts(self) -> list[str]:
        with self._lock:
            contents = self._own()
            return [r.content for r in contents.engine.records(self._agent)]

    def scan(self, selector_fn: Callable[[str], bool]) -> list[str]:
        """The memories ``selector_fn`` selects, oldest first. O(n) calls of it.

        The selector runs outside the bank's lock, so it may call the bank.
        """
        return [text for text in self._texts() if selector_fn(text)]

    def get_all_memories_as_text(self) -> list[str]:
        """Every memory, oldest first. Runtime complexity: O(n)."""
        return self._texts()

    def get_data_frame(self) -> pd.DataFrame:
        """Every memory, oldest first, as a pandas DataFrame with a ``text`` column.

        The vectors stay in the engine (``embedding`` is not a column, as in Concordia's
        list memory). Needs pandas, which Concordia installs.
        """
        import pandas as pd

        return pd.DataFrame({"text": self._texts()}, columns=["text"])

    def __len__(self) -> int:
        """How many memories are stored (it only grows, unless a ring of ``capacity``)."""
        with self._lock:
            return self._own().engine.count(self._agent)

    # ------------------------------------------------------------------ state
    def get_state(self) -> dict[str, str | int | None]:
        """A JSON-safe state: the engine's snapshot bytes (base64) and the bank's clock.

        Runtime complexity: O(n), numpy-bound (see ``MemoryEngine.dumps``).
        """
        with self._lock:
            contents = self._own()
            blob = contents.engine.dumps()
            return {"format": STATE_FORMAT, "version": _STATE_VERSION,
                    "agent_id": self._agent, "capacity": self._capacity,
                    "clock": contents.clock,
                    "snapshot": base64.b64encode(blob).decode("ascii")}

    def set_state(self, state: Mapping[str, object]) -> None:
        """Restore a state of :meth:`get_state`, or of Concordia's own bank (re-embedded).

        All or nothing: on error the bank is unchanged.

        Raises:
            SnapshotInvalidError: ``state`` is neither, or is damaged (the entry is named).
            InputInvalidError: A Concordia state and no embedder set.
        """
        if not isinstance(state, Mapping):
            raise SnapshotInvalidError("state must be a mapping from get_state()",
                                       details={"field": "state"})
        with self._lock:
            self._own()
            if state.get("format") == STATE_FORMAT:
                contents = self._restore(state)
            elif "memory_bank" in state:
                contents = self._import(state["memory_bank"])
            else:
                raise SnapshotInvalidError(
                    "state is not a bank state: pass what get_state() returned (this bank's "
                    "or Concordia's)", details={"field": "format"})
            self._contents = contents
            self._thread = threading.get_ident()

    def _restore(self, state: Mapping[str, object]) -> _Contents:
        version, agent, clock = state.get("version"), state.get("agent_id"), state.get("clock")
        capacity, encoded = state.get("capacity"), state.get("snapshot")
        if version != _STATE_VERSION:
            raise _bad("version", f"is not {_STATE_VERSION}")
        if agent != self._agent or capacity != self._capacity:
            raise _bad("agent_id" if agent != self._agent else "capacity",
                       "differs from this bank's: build the bank with the same arguments")
        if isinstance(clock, bool) or not isinstance(clock, int) or clock < 0:
            raise _bad("clock", "is not a non-negative int")
        if not isinstance(encoded, str):
            raise _bad("snapshot", "is not a base64 str")
        try:
            blob = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise _bad("snapshot", "is not valid base64") from None
        engine = MemoryEngine.loads(blob, embedder=self._embedder,
                                    redaction_key=self._config.redaction_key)
        if engine.config.redaction_mode != self._config.redaction_mode or (
                engine.config.episodic_max != self._config.episodic_max):
            raise _bad("snapshot", "was made by a bank with other capacity or redact")
        seen: dict[bytes, int] = {}
        for record in engine.records(self._agent):
            if record.created_at >= clock:
                raise _bad("clock", "is not after every stored memory")
            seen[_digest(record.content)] = record.created_at
        return _Contents(engine, seen, clock)

    def _import(self, memory_bank: object) -> _Contents:
        """Concordia's state: ``memory_bank`` is a DataFrame's JSON (``text`` by row)."""
        try:
            table = json.loads(memory_bank) if isinstance(memory_bank, str) else None
            column = table.get("text") if isinstance(table, dict) else None
            rows = sorted((int(i), text) for i, text in column.items()) if isinstance(
                column, dict) else None
        except (ValueError, TypeError):
            rows = None
        if rows is None or not all(isinstance(text, str) for _, text in rows):
            raise _bad("memory_bank", "is not the JSON of Concordia's memory table")
        contents = _Contents(MemoryEngine(self._config, seed=self._seed,
                                          embedder=self._embedder), {}, 0)
        for _, text in rows:
            self._add(contents, text)
        return contents


def _bad(entry: str, problem: str) -> SnapshotInvalidError:
    return SnapshotInvalidError(f"bank state entry {entry!r} {problem}",
                                details={"field": entry})
