"""The durable journal's effects: their registry, their encoding and their replay.

A journal row (``{"v": EFFECTS_VERSION, "call": ..., "fx": [...]}``) lists the effects of
one completed call, in the order they happened, as ``persistence.recording`` recorded them.
:class:`Replay` applies a row to the store primitives without running any logic: no LLM, no
embedder, no event handler, no validation of the original arguments. Each effect has a
stable name in :data:`EFFECTS` (the registry); an unknown name, another version or a
malformed effect is refused, and the engine names the row in a ``MEMORY_SNAPSHOT_INVALID``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.core.state import EngineState
from f09_memory.persistence.snapshot import decode, encode
from f09_memory.protocols import VectorIndex
from f09_memory.retrieval.semantic import SemanticMemory
from f09_memory.schema.enums import PressureState
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import NewRecords, RecordExtra
from f09_memory.summarization.pipeline import Summarizer
from f09_memory.vector_index.exact import ExactIndex
from f09_memory.vector_index.hnsw import HnswIndex

__all__ = ["EFFECTS", "EFFECTS_VERSION", "Effect", "Replay", "json_default"]

EFFECTS_VERSION = 1
"""Version of the effect encoding; a row of another version is refused."""

Effect = tuple[Any, ...]
"""One effect as recorded: its name, then its arguments."""
_NEW_FIELDS = tuple(f.name for f in fields(NewRecords))


def json_default(value: object) -> object:
    """``json.dumps`` hook for the values effects hold besides JSON: arrays, numpy scalars."""
    if isinstance(value, np.ndarray | np.generic):
        return encode(value)
    raise TypeError(f"an effect holds a {type(value).__name__}")


class Replay:
    """Applies journal rows to a freshly restored engine state, then settles it.

    Args:
        state: The state restored from the snapshot.
        summarizer: Its summarizer.
        semantic: Its semantic memory.
    """

    def __init__(self, state: EngineState, summarizer: Summarizer,
                 semantic: SemanticMemory) -> None:
        self.state = state
        self.summarizer = summarizer
        self.semantic = semantic
        self.summarizer_state: dict[str, Any] | None = None
        self.embed_jobs: list[Any] | None = None
        self.embedder: tuple[str | None] | None = None
        self.at = ""
        """The effect being applied (named in errors)."""

    def agent(self, agent_id: object) -> AgentMemory:
        """The agent an effect names (it must exist)."""
        am = self.state.store.get(str(agent_id))
        if am is None:
            raise ValueError("an effect names an agent that does not exist")
        return am

    def apply_row(self, row: object) -> None:
        """Apply one journal row.

        Raises:
            ValueError: Wrong version, unknown effect or malformed row (the caller names
                the row in a ``SnapshotInvalidError``).
        """
        if not isinstance(row, dict) or row.get("v") != EFFECTS_VERSION:
            version = row.get("v") if isinstance(row, dict) else None
            raise ValueError(f"effects version {version!r:.20} is not {EFFECTS_VERSION}")
        effects = decode(row.get("fx"))
        if not isinstance(effects, list):
            raise ValueError("a row holds no effect list")
        for effect in effects:
            if not isinstance(effect, list) or not effect or not isinstance(effect[0], str):
                raise ValueError("malformed effect")
            self.at = effect[0]
            handler = EFFECTS.get(effect[0])
            if handler is None:
                raise ValueError(f"unknown effect {effect[0]!r:.40}")
            handler(self, *effect[1:])

    def finish(self) -> None:
        """Install the last journaled summarizer and queue states (after every row)."""
        if self.summarizer_state is not None:
            self.summarizer.set_state(self.summarizer_state)
        pending = self.semantic.pending
        if self.embed_jobs is not None and pending is not None:
            pending.set_state(self.embed_jobs)
        if self.embedder is not None and self.embedder[0] != self.semantic.version:
            self.semantic.invalidate(self.state.store)  # vectors of another embedder
        self.semantic.retry_all(self.state.store)


def _slots(am: AgentMemory, keys: Any) -> NDArray[np.intp]:
    return np.array([am.slot_of[int(k)] for k in np.asarray(keys).tolist()], dtype=np.intp)


def _vectors(value: Any, n: int) -> NDArray[np.float32]:
    arr = np.asarray(value)
    if arr.dtype != np.float32 or arr.ndim != 2 or arr.shape[0] != n or not np.isfinite(
            arr).all():
        raise ValueError("malformed vectors")
    return arr


def _create(r: Replay, agent_id: object) -> None:
    if not isinstance(agent_id, str) or r.state.store.get(agent_id) is not None:
        raise ValueError("agent.create of an existing or malformed agent")
    r.state.store.get_or_create(agent_id)
    r.state.vocabulary(agent_id)


def _next_key(r: Replay, agent_id: object, value: object) -> None:
    am = r.agent(agent_id)
    if not isinstance(value, int) or value < am.next_key:
        raise ValueError("agent.next_key moves backwards")
    am.next_key = value


def _add(r: Replay, agent_id: object, payload: Mapping[str, Any]) -> None:
    am = r.agent(agent_id)
    new = NewRecords()
    for name in _NEW_FIELDS[:12]:
        setattr(new, name, list(payload[name]))
    new.source_event = {int(i): str(t) for i, t in payload["source_event"]}
    new.extras = {int(i): RecordExtra.from_canonical(e) for i, e in payload["extras"]}
    n = len(new.keys)
    if any(len(getattr(new, name)) != n for name in _NEW_FIELDS[:12]) or any(
            k in am.slot_of or k >= am.next_key for k in new.keys):
        raise ValueError("record.add with ragged columns or unreserved keys")
    am.add_batch(new)


def _add_one(r: Replay, agent_id: object, args: list[Any]) -> None:
    am = r.agent(agent_id)
    key = int(args[0])
    if key in am.slot_of or key >= am.next_key or len(args) != 10:
        raise ValueError("record.add_one of an unreserved key")
    am.add_one(key, int(args[1]), float(args[2]), bool(args[3]), int(args[4]), int(args[5]),
               int(args[6]), int(args[7]), bool(args[8]), str(args[9]))


def _remove(r: Replay, agent_id: object, key: object) -> None:
    r.agent(agent_id).remove(int(key))  # type: ignore[call-overload]


def _remove_oldest(r: Replay, agent_id: object, count: object) -> None:
    am = r.agent(agent_id)
    if not isinstance(count, int) or not 0 < count <= am.ring.live:
        raise ValueError("record.remove_oldest past the ring")
    am.remove_oldest(count)


def _update(r: Replay, agent_id: object, key: object, changes: Mapping[str, Any]) -> None:
    am = r.agent(agent_id)
    kwargs = dict(changes)
    if "extra" in kwargs:
        kwargs["extra"] = RecordExtra.from_canonical(kwargs["extra"])
    am.update(int(key), **kwargs)  # type: ignore[call-overload]


def _embedded(r: Replay, agent_id: object, key: object, flag: object) -> None:
    am = r.agent(agent_id)
    am.mark_embedded(am.slot_of[int(key)], bool(flag))  # type: ignore[call-overload]


def _embedded_many(r: Replay, agent_id: object, keys: object) -> None:
    am = r.agent(agent_id)
    am.mark_embedded_many(_slots(am, keys))


def _attach(r: Replay, agent_id: object, keys: object, vectors: object) -> None:
    am = r.agent(agent_id)
    slots = _slots(am, keys)
    am.attach_vectors(slots, _vectors(vectors, int(slots.shape[0])))


def _clear_embedded(r: Replay, agent_id: object) -> None:
    r.agent(agent_id).clear_embedded()


def _drop_index(r: Replay, agent_id: object) -> None:
    r.agent(agent_id).drop_index()


def _start_index(r: Replay, agent_id: object, params: Mapping[str, Any]) -> None:
    am = r.agent(agent_id)
    index: VectorIndex
    if params["kind"] == "hnsw":
        index = HnswIndex(int(params["dim"]), m=int(params["m"]),
                          ef_construction=int(params["ef_construction"]),
                          ef=int(params["ef"]), seed=int(params["seed"]),
                          quantum=int(params["quantum"]),
                          exact_filter_max=int(params["exact_filter_max"]),
                          initial_capacity=int(params["capacity"]))
    elif params["kind"] == "exact":
        index = ExactIndex(int(params["dim"]), quantum=int(params["quantum"]))
    else:
        raise ValueError("index.start of an unknown kind")
    am.start_index_build(index)


def _index_add(r: Replay, agent_id: object, keys: object, vectors: object) -> None:
    am = r.agent(agent_id)
    key_arr = np.asarray(keys, dtype=np.int64)
    if am.index_build is None or key_arr.ndim != 1 or not key_arr.shape[0]:
        raise ValueError("index.add without a build in progress")
    am.add_to_index_build(key_arr, _vectors(vectors, int(key_arr.shape[0])))


def _finish_index(r: Replay, agent_id: object) -> None:
    am = r.agent(agent_id)
    if am.index_build is None:
        raise ValueError("index.finish without a build in progress")
    am.finish_index_build()


def _bounds(r: Replay, agent_id: object, deadline: object, anchor: object) -> None:
    r.agent(agent_id).set_bounds(None if deadline is None else int(deadline),  # type: ignore[call-overload]
                                 None if anchor is None else int(anchor))  # type: ignore[call-overload]


def _vocab_observe(r: Replay, agent_id: object, words: list[Any]) -> None:
    r.state.vocabulary(str(agent_id)).observe({str(w) for w in words})


def _vocab_union(r: Replay, agent_id: object, words: list[Any]) -> None:
    if not r.state.vocabulary(str(agent_id)).observe_union({str(w) for w in words}):
        raise ValueError("vocab.union does not fit the vocabulary's generation")


def _tags(r: Replay, first: object, sets: list[Any]) -> None:
    tags = r.state.store.tags
    before = len(tags)
    if first != before:
        raise ValueError("tags.add out of order")
    for entry in sets:
        tags.intern(tuple(str(t) for t in entry))
    if len(tags) != before + len(sets):
        raise ValueError("tags.add repeats a tag tuple")


def _scalars(r: Replay, values: list[Any]) -> None:
    clock, pressure, cursor, compaction, total, streak = values
    state = r.state
    state.clock = int(clock)
    state.pressure = PressureState(pressure)
    state.tick_cursor = int(cursor)
    state.compaction.set_state(compaction)
    state.backlog_total, state.backlog_streak = int(total), int(streak)


def _query_vectors(r: Replay, texts: list[Any], vectors: object) -> None:
    if not isinstance(texts, list):
        raise ValueError("malformed query vectors")
    r.semantic.queries.add([str(t) for t in texts], _vectors(vectors, len(texts)))


def _query_clear(r: Replay) -> None:
    r.semantic.queries.clear()


def _summarizer(r: Replay, value: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        raise ValueError("malformed summarizer state")
    r.summarizer_state = value


def _jobs(r: Replay, value: list[Any]) -> None:
    if not isinstance(value, list):
        raise ValueError("malformed embedding jobs")
    r.embed_jobs = value


def _table_changes(r: Replay, name: object, meta: object, arrays: object) -> None:
    table = r.state.tables.get(name) if isinstance(name, str) else None
    if table is None or not isinstance(meta, dict) or not isinstance(arrays, dict):
        raise ValueError("table.changes names no table of this engine, or is malformed")
    table.apply_changes(meta, arrays)


def _embedder(r: Replay, value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise ValueError("malformed embedder version")
    r.embedder = (value,)


EFFECTS: dict[str, Callable[..., None]] = {
    "agent.create": _create,
    "agent.next_key": _next_key,
    "agent.bounds": _bounds,
    "agent.clear_embedded": _clear_embedded,
    "record.add": _add,
    "record.add_one": _add_one,
    "record.remove": _remove,
    "record.remove_oldest": _remove_oldest,
    "record.update": _update,
    "record.embedded": _embedded,
    "record.embedded_many": _embedded_many,
    "record.vectors": _attach,
    "index.drop": _drop_index,
    "index.start": _start_index,
    "index.add": _index_add,
    "index.finish": _finish_index,
    "vocab.observe": _vocab_observe,
    "vocab.union": _vocab_union,
    "tags.add": _tags,
    "engine.scalars": _scalars,
    "query.vectors": _query_vectors,
    "query.clear": _query_clear,
    "summarizer.state": _summarizer,
    "embedding.jobs": _jobs,
    "embedding.version": _embedder,
    "table.changes": _table_changes,
}
"""The registry: stable effect name -> how replay applies it (version :data:`EFFECTS_VERSION`)."""
