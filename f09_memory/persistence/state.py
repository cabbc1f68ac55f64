"""An engine's complete state as columns plus a small manifest, and its exact restoration.

:func:`get_state` captures everything that determines future behaviour: config, seed,
clock, pressure, cursors, summarizer tasks, the tag table, and per agent its id counter,
novelty vocabulary, episodic ring order, vector index and live records. Records are
written as columns concatenated over all agents (agents in id order, records in key order),
text as one UTF-8 blob with offsets, vectors as one float32 matrix of the embedded rows.
:func:`set_state` rebuilds the columns directly (no per-record work beyond the text split),
so ``state_hash()`` and the next retrievals are identical.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.core.state import EngineState
from f09_memory.errors import MemoryEngineError, SnapshotInvalidError
from f09_memory.persistence.validate import (
    check_references,
    check_restored,
    check_words,
    invalid,
    validate_state,
)
from f09_memory.protocols import VectorIndex
from f09_memory.retrieval.query_vectors import QueryVectors
from f09_memory.retrieval.semantic import SemanticMemory
from f09_memory.schema.enums import LAYERS_BY_CODE, MemoryLayer, PressureState
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import RecordExtra
from f09_memory.summarization.pipeline import Summarizer
from f09_memory.vector_index.exact import ExactIndex
from f09_memory.vector_index.hnsw import HnswIndex

__all__ = ["COLUMNS", "STATE_KIND", "get_state", "set_state"]

STATE_KIND = "f09-memory-engine"
"""The ``kind`` of an engine state dict (checked before a state is restored)."""
COLUMNS = ("key", "layer", "importance", "flagged", "created", "anchor", "tokens",
           "deadline", "status", "redacted", "tagset", "embedded")
"""The per-record columns a snapshot stores (concatenated over agents)."""
_SEP = "\x00"
_N_LAYERS = len(LAYERS_BY_CODE)
Arrays = dict[str, np.ndarray[Any, Any]]


def _join(texts: list[str]) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """One UTF-8 blob and the end offset of each text."""
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    ends = np.cumsum([len(b) for b in encoded], dtype=np.int64) if encoded else np.zeros(
        0, dtype=np.int64)
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), ends


def _split(blob: NDArray[np.uint8], ends: NDArray[np.int64]) -> list[str]:
    raw = blob.tobytes()
    out: list[str] = []
    start = 0
    for end in ends.tolist():
        out.append(raw[start:end].decode("utf-8", "surrogatepass"))
        start = end
    return out


def get_state(state: EngineState, summarizer: Summarizer, embedder_version: str | None,
              embed_jobs: list[dict[str, Any]] | None = None,
              queries: QueryVectors | None = None) -> tuple[dict[str, Any], Arrays]:
    """The engine's complete state: ``(manifest, arrays)`` for ``persistence.snapshot``.

    ``embed_jobs`` are the pending async embedding jobs (``AsyncEmbedding.get_state``) and
    ``queries`` the async mode's query table.
    """
    columns: dict[str, list[NDArray[Any]]] = {name: [] for name in COLUMNS}
    texts: list[str] = []
    words: list[str] = []
    vectors: list[NDArray[np.float32]] = []
    ring_keys: list[int] = []
    agents: list[dict[str, Any]] = []
    for am in state.store:
        keys = sorted(am.slot_of)
        slots = np.array([am.slot_of[k] for k in keys], dtype=np.intp)
        for name in COLUMNS:
            columns[name].append(getattr(am, name)[slots])
        texts.extend(am.content[s] or "" for s in slots.tolist())
        embedded = am.embedded[slots]
        # a column with no vector in it yet (reserved for async jobs) is not state
        column = am.vectors if embedded.any() else None
        if column is not None:
            vectors.append(column[slots[embedded]])
        ring = am.ring.get_state()
        ring_keys.extend(ring)
        vocab = state.vocabulary(am.agent_id).get_state()
        words.extend(vocab[0])
        words.extend(vocab[1])
        agents.append({
            "agentId": am.agent_id,
            "nextKey": am.next_key,
            "count": len(keys),
            "ring": len(ring),
            "vocabulary": [len(vocab[0]), len(vocab[1])],
            "dim": None if column is None else int(column.shape[1]),
            # the maintained lower bounds decide which agents a tick visits: kept as they
            # are (not recomputed) so a loaded engine ticks exactly like the saved one
            "bounds": [am.min_deadline, am.min_episodic_anchor],
            "index": am.index.get_state() if am.index is not None else None,  # type: ignore[attr-defined]
            "indexBuild": (None if am.index_build is None  # a build in progress, resumed
                           else [am.index_build.get_state(), am.index_cursor]),  # type: ignore[attr-defined]
            "sourceEvents": [[k, am.source_event[k]] for k in sorted(am.source_event)],
            "extras": [[k, am.extras[k].canonical()] for k in sorted(am.extras)],
        })
    arrays: Arrays = {}
    for name in COLUMNS:
        parts = columns[name]
        dtype = AgentMemory.column_dtype(name)
        arrays[name] = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    arrays["text"], arrays["textEnds"] = _join(texts)
    arrays["words"], arrays["wordEnds"] = _join(words)
    arrays["ring"] = np.array(ring_keys, dtype=np.int64)
    dims = {int(v.shape[1]) for v in vectors}  # agents with embedded rows share one dim
    dim = dims.pop() if len(dims) == 1 else 0
    arrays["vectors"] = (np.concatenate(vectors) if vectors and dim
                         else np.zeros((0, dim), dtype=np.float32))
    manifest = {
        "kind": STATE_KIND,
        "seed": state.seed,
        "config": state.config.to_json_dict(),
        "clock": state.clock,
        "pressure": state.pressure.value,
        "tickCursor": state.tick_cursor,
        "compactionCursor": state.compaction.get_state(),
        "backlog": [state.backlog_total, state.backlog_streak],
        "summarizer": summarizer.get_state(),
        "embedderVersion": embedder_version,
        "embedJobs": embed_jobs or [],
        "queryVectors": None,
        "tags": state.store.tags.get_state(),
        "agents": agents,
    }
    if queries is not None and queries.digest() is not None:
        manifest["queryVectors"], arrays["queryVectors"] = queries.get_state()
    tables: dict[str, Any] = {}
    for name, table in sorted(state.tables.items()):
        meta, columns_of = table.get_state()
        if meta["used"]:  # a table never used is not written: older snapshots stay equal
            tables[name] = meta
            arrays.update({f"table.{name}.{col}": arr for col, arr in columns_of.items()})
    if tables:
        manifest["tables"] = tables
    return manifest, arrays


def _restore_tables(state: EngineState, manifest: dict[str, Any], arrays: Arrays) -> None:
    saved = manifest.get("tables", {})
    if not isinstance(saved, dict) or not set(saved) <= set(state.tables):
        raise ValueError("the snapshot holds a table this engine does not have")
    for name, meta in sorted(saved.items()):
        prefix = f"table.{name}."
        columns_of = {key[len(prefix):]: arr for key, arr in arrays.items()
                      if key.startswith(prefix)}
        if not isinstance(meta, dict):
            raise ValueError(f"table {name} is malformed")
        state.tables[name].set_state(meta, columns_of)


def _index_from(data: dict[str, Any], quantum: int) -> VectorIndex:
    index: ExactIndex | HnswIndex
    if data.get("kind") == "hnsw":
        index = HnswIndex(int(data["dim"]), m=int(data["m"]),
                          ef_construction=int(data["ef_construction"]), ef=int(data["ef"]),
                          seed=int(data["seed"]), quantum=int(data["quantum"]))
    else:
        index = ExactIndex(int(data["dim"]), quantum=quantum)
    index.set_state(data)
    return index


def _restore_agent(state: EngineState, a: dict[str, Any], cols: dict[str, NDArray[Any]],
                   texts: list[str], ring: list[int], words: list[str],
                   vectors: NDArray[np.float32] | None) -> None:
    am = state.store.get_or_create(str(a["agentId"]))
    n = int(a["count"])
    am.ensure_capacity(n)
    for name in COLUMNS:
        getattr(am, name)[:n] = cols[name]
    am.alive[:n] = True
    am.inactive_seen = bool(cols["status"].any())
    am.rev[:n] = np.arange(n, dtype=np.int64)
    am.next_rev = n
    am.hi = n
    keys = cols["key"].tolist()
    if keys != sorted(set(keys)) or (keys and keys[-1] >= int(a["nextKey"])):
        raise ValueError(f"agent {am.agent_id!r} has duplicate or out-of-range keys")
    am.next_key = int(a["nextKey"])
    am.content[:n] = texts
    am.slot_of.update(zip(keys, range(n), strict=True))
    am.layer_counts[:] = np.bincount(cols["layer"].astype(np.intp), minlength=_N_LAYERS)
    deadlines = cols["deadline"]
    episodic = cols["layer"] == MemoryLayer.EPISODIC.code
    am.min_deadline, am.min_episodic_anchor = (int(x) for x in a["bounds"])
    if (n and am.min_deadline > int(deadlines.min())) or (
            episodic.any() and am.min_episodic_anchor > int(cols["anchor"][episodic].min())):
        raise ValueError(f"agent {am.agent_id!r} has bounds above its records")
    if (cols["tagset"] >= len(state.store.tags)).any():
        raise ValueError("a record names an unknown tag tuple")
    for key, text in a["sourceEvents"]:
        am.source_event[int(key)] = str(text)
    for key, data in a["extras"]:
        extra = RecordExtra.from_canonical(data)
        am.extras[int(key)] = extra
        slot = am.slot_of[int(key)]
        claim = extra.attributes.get("claimKey")
        if isinstance(claim, str) and int(am.status[slot]) == 0:
            am.claims[claim] = int(key)
    am.ring.set_state(ring)
    previous, current = (int(x) for x in a["vocabulary"])
    state.vocabulary(am.agent_id).set_state([words[:previous],
                                             words[previous:previous + current]])
    embedded = am.embedded[:n].copy()
    am.embedded[:n] = False
    if vectors is not None and a["dim"] is not None and embedded.any():
        column = am.ensure_vectors(int(a["dim"]))
        column[np.flatnonzero(embedded)] = vectors
        am.embedded[:n] = embedded
        if a["index"] is not None:
            am.index = _index_from(a["index"], state.config.score_quantum)
        if a.get("indexBuild") is not None:
            build, cursor = a["indexBuild"]
            am.start_index_build(_index_from(build, state.config.score_quantum))
            am.index_cursor = int(cursor)
    am.dirty = True


def set_state(state: EngineState, summarizer: Summarizer, semantic: SemanticMemory,
              manifest: dict[str, Any], arrays: Arrays) -> None:
    """Load a state from :func:`get_state` into a fresh engine's ``state``.

    Vectors and indexes are kept when the engine's embedder has the saved version; otherwise
    the records are stored un-embedded and re-embedded by later ticks. Everything is checked
    first (``persistence.validate``), the restored state's invariants last, and only then
    are pending embedding jobs resubmitted, so a refused state starts no thread.

    Raises:
        SnapshotInvalidError: The state is not an engine state or breaks an invariant (the
            message names the part and the rule).
    """
    kind = manifest.get("kind")
    if not isinstance(kind, str) or kind != STATE_KIND:
        raise SnapshotInvalidError("the snapshot does not hold an f09-memory engine state",
                                   details={"kind": str(kind)[:40]})
    step = "the manifest"
    try:
        validate_state(manifest, arrays, config=state.config, seed=state.seed)
        same_vectors = (manifest["embedderVersion"] is not None
                        and manifest["embedderVersion"] == semantic.version)
        step = "the tag table"
        state.store.tags.set_state(manifest["tags"])
        step = "the record texts"
        texts = _split(arrays["text"], arrays["textEnds"])
        step = "the vocabularies"
        words = _split(arrays["words"], arrays["wordEnds"])
        check_words(words, manifest["agents"])
        ring = arrays["ring"].tolist()
        vectors = arrays["vectors"]
        start = ring_at = word_at = vec_at = 0
        for i, a in enumerate(manifest["agents"]):
            step = f"agents[{i}]"
            n = int(a["count"])
            stop = start + n
            cols = {name: arrays[name][start:stop] for name in COLUMNS}
            n_vec = int(cols["embedded"].sum())
            n_ring = int(a["ring"])
            n_words = sum(int(x) for x in a["vocabulary"])
            _restore_agent(state, a, cols, texts[start:stop], ring[ring_at:ring_at + n_ring],
                           words[word_at:word_at + n_words],
                           vectors[vec_at:vec_at + n_vec] if same_vectors else None)
            start, ring_at, word_at, vec_at = stop, ring_at + n_ring, word_at + n_words, (
                vec_at + n_vec)
        if start != arrays["key"].shape[0]:
            raise ValueError("the columns hold more records than the agents name")
        step = "the cursors"
        state.clock = int(manifest["clock"])
        state.pressure = PressureState(manifest["pressure"])
        state.tick_cursor = int(manifest["tickCursor"])
        state.compaction.set_state(manifest["compactionCursor"])
        state.backlog_total, state.backlog_streak = (int(x) for x in manifest["backlog"])
        step = "the layer tables"
        _restore_tables(state, manifest, arrays)
        step = "the summarizer"
        summarizer.set_state(manifest["summarizer"])
        check_references(manifest["summarizer"],
                         {a["agentId"]: a["nextKey"] for a in manifest["agents"]})
        check_restored(state, summarizer)
        step = "the embedding jobs"
        semantic.retry_all(state.store)
        if semantic.pending is not None:  # last: it starts the embedding thread
            if same_vectors and manifest.get("queryVectors") is not None:
                step = "the query vectors"
                semantic.queries.set_state(manifest["queryVectors"], arrays["queryVectors"])
            step = "the embedding jobs"
            semantic.pending.set_state(manifest["embedJobs"] if same_vectors else [])
    except SnapshotInvalidError:
        raise
    except MemoryEngineError as exc:
        raise invalid(f"{step} was refused by its own checks ({exc.code.value})") from exc
    except UnicodeDecodeError as exc:
        raise invalid(f"{step} are not valid UTF-8") from exc
    except MemoryError:
        raise invalid(f"{step} needs more memory than is available") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError,
            RecursionError, AssertionError) as exc:
        raise invalid(f"{step} is malformed ({type(exc).__name__})") from exc
