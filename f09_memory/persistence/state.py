"""An engine's complete state as plain values, and its exact restoration.

:func:`engine_state` captures everything that determines future behaviour: config, seed,
clock, pressure, maintenance and compaction cursors, summarizer tasks, and per agent its id
counter, novelty vocabulary, live records with their columns (flag, TTL deadline, decayed
importance, embedding flag), vectors, episodic ring order and vector index. :func:`restore`
rebuilds it into a fresh engine, so ``state_hash()`` and the next retrievals are identical.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from f09_memory.errors import MemoryEngineError, SnapshotInvalidError
from f09_memory.schema.enums import MemoryLayer, PressureState
from f09_memory.schema.records import MemoryRecord
from f09_memory.vector_index.exact import ExactIndex
from f09_memory.vector_index.hnsw import HnswIndex

if TYPE_CHECKING:
    from f09_memory.engine import MemoryEngine
    from f09_memory.protocols import VectorIndex
    from f09_memory.store.agent import AgentMemory

__all__ = ["STATE_KIND", "engine_state", "restore"]

STATE_KIND = "f09-memory-engine"
_EPISODIC = MemoryLayer.EPISODIC.code


def _agent_state(engine: MemoryEngine, am: AgentMemory) -> dict[str, Any]:
    keys = sorted(am.slot_of)
    slots = np.array([am.slot_of[k] for k in keys], dtype=np.intp)
    records = []
    for s in slots.tolist():
        rec = am.records[s]
        assert rec is not None
        records.append(rec.model_dump(mode="json", by_alias=True))
    embedded = am.embedded[slots] if slots.shape[0] else np.zeros(0, dtype=np.bool_)
    vectors = (am.vectors[slots[embedded]] if am.vectors is not None
               else np.zeros((0, 0), dtype=np.float32))
    index = am.index.get_state() if am.index is not None else None  # type: ignore[attr-defined]
    return {
        "agentId": am.agent_id,
        "nextKey": am.next_key,
        "vocabulary": engine._extras(am.agent_id).vocabulary.get_state(),
        "keys": np.array(keys, dtype=np.int64),
        "records": records,
        "flagged": am.flagged[slots].copy(),
        "deadline": am.deadline[slots].copy(),
        "decayed": am.decayed[slots].copy(),
        "embedded": embedded.copy(),
        "vectors": vectors,
        "ring": am.ring.get_state(),
        "index": index,
    }


def engine_state(engine: MemoryEngine) -> dict[str, Any]:
    """The engine's complete state (numpy arrays inside; see ``persistence.snapshot``)."""
    return {
        "kind": STATE_KIND,
        "seed": engine.seed,
        "config": engine.config.to_json_dict(),
        "clock": engine.now,
        "pressure": engine.pressure.value,
        "maintCursor": engine._maint.cursor,
        "compactionCursor": engine._maint.compaction.get_state(),
        "summarizer": engine._summarizer.get_state(),
        "embedderVersion": engine._semantic.version,
        "agents": [_agent_state(engine, am) for am in engine._store],
    }


def _index_from(state: dict[str, Any], engine: MemoryEngine) -> VectorIndex:
    cfg = engine.config
    index: ExactIndex | HnswIndex
    if state.get("kind") == "hnsw":
        index = HnswIndex(int(state["dim"]), m=int(state["m"]),
                          ef_construction=int(state["ef_construction"]), ef=int(state["ef"]),
                          seed=int(state["seed"]), quantum=int(state["quantum"]))
    else:
        index = ExactIndex(int(state["dim"]), quantum=cfg.score_quantum)
    index.set_state(state)
    return index


def _restore_agent(engine: MemoryEngine, a: dict[str, Any], same_vectors: bool) -> None:
    am = engine._store.get_or_create(str(a["agentId"]))
    engine._extras(am.agent_id).vocabulary.set_state(a["vocabulary"])
    keys = [int(k) for k in a["keys"]]
    position = {k: i for i, k in enumerate(keys)}
    records = [MemoryRecord.parse(r) for r in a["records"]]
    ring_keys = [int(k) for k in a["ring"]]
    ring_set = set(ring_keys)
    others = [k for k in keys if k not in ring_set]
    vectors = a["vectors"]
    vec_row = np.cumsum(a["embedded"]) - 1
    for key in ring_keys + others:  # episodic in ring order rebuilds the same ring
        i = position[key]
        slot = am.add(records[i], key, bool(a["flagged"][i]), int(a["deadline"][i]))
        am.decayed[slot] = float(a["decayed"][i])
        if same_vectors and bool(a["embedded"][i]):
            engine._semantic.attach(am, slot, key, vectors[int(vec_row[i])])
    am.next_key = int(a["nextKey"])
    if same_vectors and a["index"] is not None:
        am.index = _index_from(a["index"], engine)
        am.enable_rank_lists()


def restore(engine: MemoryEngine, state: dict[str, Any]) -> None:
    """Load ``state`` (from :func:`engine_state`) into a fresh ``engine``.

    Vectors and indexes are kept when the engine's embedder has the saved version; otherwise
    the records are stored un-embedded and re-embedded by later ticks.

    Raises:
        SnapshotInvalidError: The state is not an engine state or is inconsistent.
    """
    if state.get("kind") != STATE_KIND:
        raise SnapshotInvalidError("the snapshot does not hold an f09-memory engine state",
                                   details={"kind": str(state.get("kind"))[:40]})
    try:
        same_vectors = (state["embedderVersion"] is not None
                        and state["embedderVersion"] == engine._semantic.version)
        for a in state["agents"]:
            _restore_agent(engine, a, same_vectors)
        engine._clock = int(state["clock"])
        engine._pressure = PressureState(state["pressure"])
        engine._maint.cursor = int(state["maintCursor"])
        engine._maint.compaction.set_state(state["compactionCursor"])
        engine._summarizer.set_state(state["summarizer"])
    except MemoryEngineError as exc:
        raise SnapshotInvalidError(f"the snapshot's state is inconsistent: {exc.message}",
                                   details={"cause": exc.code.value}) from exc
    except (KeyError, TypeError, ValueError, IndexError, AssertionError) as exc:
        raise SnapshotInvalidError(
            f"the snapshot's state is inconsistent ({type(exc).__name__}: {exc})"[:300],
            details={"cause": type(exc).__name__}) from exc
