"""The durable journal's effects: what a call changed, recorded as it happened.

In durable mode every agent's memory is a :class:`RecordingAgentMemory`: each mutation it
performs (records added with their redacted fields and assigned keys, removed, updated,
embedded; index builds; the maintained bounds) is appended to one effect list, in order,
with everything replay needs (vectors included). Vocabulary observations are appended by
the vocabulary itself; engine scalars, new tag tuples, the summarizer's and the async
embedding queue's states are compared at the end of a call and appended when they changed;
the async mode's query table appends its own changes.

:func:`apply_row` replays a journal row by applying its effects to the store primitives,
without running any logic: no LLM, no embedder, no event handler, no validation of the
original arguments. Each effect has a stable name in :data:`EFFECTS` (the registry) and a
row carries the effects version; an unknown name, another version or a malformed effect is
refused with ``MEMORY_SNAPSHOT_INVALID`` naming the row.

Slots are never journaled: a replay starts from a snapshot whose slots are compacted, so
effects name records by key.
"""

from __future__ import annotations

import json
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
from f09_memory.store.records import NewRecords, RecordExtra, Removed
from f09_memory.summarization.pipeline import Summarizer
from f09_memory.vector_index.exact import ExactIndex
from f09_memory.vector_index.hnsw import HnswIndex

__all__ = [
    "EFFECTS",
    "EFFECTS_VERSION",
    "EffectRecorder",
    "RecordingAgentMemory",
    "Replay",
    "json_default",
]

EFFECTS_VERSION = 1
"""Version of the effect encoding; a row of another version is refused."""

Effect = tuple[Any, ...]
_NEW_FIELDS = tuple(f.name for f in fields(NewRecords))


def _extra_state(extra: RecordExtra | None) -> dict[str, Any] | None:
    return None if extra is None else extra.canonical()


def _index_params(index: VectorIndex) -> dict[str, Any]:
    if isinstance(index, HnswIndex):
        state = index.get_state()
        params = {k: state[k] for k in ("kind", "dim", "m", "ef_construction", "ef", "seed",
                                        "quantum", "exact_filter_max")}
        params["capacity"] = index.capacity
        return params
    assert isinstance(index, ExactIndex)
    return {"kind": "exact", "dim": index.dim, "quantum": index.get_state()["quantum"]}


class RecordingAgentMemory(AgentMemory):
    """An :class:`AgentMemory` that appends each mutation it performs to ``effects``.

    Installed on every agent in durable mode (by class swap, so the in-memory engine pays
    nothing). A mutation made inside another (ring evictions of an add) is not recorded on
    its own: replaying the outer one repeats it.
    """

    effects: list[Effect]
    quiet: bool

    def _record(self, *effect: Any) -> None:
        if not self.quiet:
            self.effects.append(effect)

    def reserve_key(self) -> int:  # noqa: D102
        key = super().reserve_key()
        self._record("agent.next_key", self.agent_id, self.next_key)
        return key

    def reserve_keys(self, n: int) -> int:  # noqa: D102
        key = super().reserve_keys(n)
        self._record("agent.next_key", self.agent_id, self.next_key)
        return key

    def add_batch(self, new: NewRecords) -> tuple[list[int], dict[int, list[Removed]]]:  # noqa: D102
        if self.quiet:
            return super().add_batch(new)
        self.quiet = True
        try:
            out = super().add_batch(new)
        finally:
            self.quiet = False
        payload = {name: getattr(new, name) for name in _NEW_FIELDS}
        payload["source_event"] = sorted(new.source_event.items())
        payload["extras"] = [[i, e.canonical()] for i, e in sorted(new.extras.items())]
        self.effects.append(("record.add", self.agent_id, payload))
        return out

    def add_one(self, key: int, layer: int, importance: float, flagged: bool, now: int,  # noqa: D102
                tokens: int, deadline: int, tagset: int, redacted: bool,
                content: str) -> tuple[int, Removed | None]:
        if self.quiet:
            return super().add_one(key, layer, importance, flagged, now, tokens, deadline,
                                   tagset, redacted, content)
        self.quiet = True
        try:
            out = super().add_one(key, layer, importance, flagged, now, tokens, deadline,
                                  tagset, redacted, content)
        finally:
            self.quiet = False
        self.effects.append(("record.add_one", self.agent_id, [
            key, layer, importance, flagged, now, tokens, deadline, tagset, redacted, content]))
        return out

    def remove(self, key: int) -> Removed:  # noqa: D102
        self._record("record.remove", self.agent_id, key)
        return super().remove(key)

    def remove_oldest(self, count: int) -> list[Removed]:  # noqa: D102
        self._record("record.remove_oldest", self.agent_id, count)
        return super().remove_oldest(count)

    def update(self, key: int, *, importance: float | None = None,  # noqa: D102
               anchor: int | None = None, content: str | None = None,
               tokens: int | None = None, redacted: bool | None = None,
               tagset: int | None = None, extra: RecordExtra | None = None,
               status: int | None = None) -> int:
        changes = {"importance": importance, "anchor": anchor, "content": content,
                   "tokens": tokens, "redacted": redacted, "tagset": tagset,
                   "extra": _extra_state(extra), "status": status}
        self._record("record.update", self.agent_id, key,
                     {k: v for k, v in changes.items() if v is not None})
        return super().update(key, importance=importance, anchor=anchor, content=content,
                              tokens=tokens, redacted=redacted, tagset=tagset, extra=extra,
                              status=status)

    def mark_embedded(self, slot: int, embedded: bool) -> None:  # noqa: D102
        self._record("record.embedded", self.agent_id, int(self.key[slot]), bool(embedded))
        super().mark_embedded(slot, embedded)

    def mark_embedded_many(self, slots: NDArray[np.intp]) -> None:  # noqa: D102
        self._record("record.embedded_many", self.agent_id, self.key[slots].copy())
        super().mark_embedded_many(slots)

    def attach_vectors(self, slots: NDArray[np.intp],  # noqa: D102
                       vectors: NDArray[np.float32]) -> None:
        if self.quiet:
            return super().attach_vectors(slots, vectors)
        self.effects.append(("record.vectors", self.agent_id, self.key[slots].copy(),
                             np.array(vectors, dtype=np.float32)))
        self.quiet = True
        try:
            super().attach_vectors(slots, vectors)
        finally:
            self.quiet = False
        return None

    def clear_embedded(self) -> None:  # noqa: D102
        self._record("agent.clear_embedded", self.agent_id)
        super().clear_embedded()

    def drop_index(self) -> None:  # noqa: D102
        self._record("index.drop", self.agent_id)
        super().drop_index()

    def start_index_build(self, index: VectorIndex) -> None:  # noqa: D102
        self._record("index.start", self.agent_id, _index_params(index))
        super().start_index_build(index)

    def add_to_index_build(self, keys: NDArray[np.int64],  # noqa: D102
                           vectors: NDArray[np.float32]) -> None:
        self._record("index.add", self.agent_id, np.array(keys, dtype=np.int64),
                     np.array(vectors, dtype=np.float32))
        super().add_to_index_build(keys, vectors)

    def finish_index_build(self) -> None:  # noqa: D102
        self._record("index.finish", self.agent_id)
        super().finish_index_build()

    def set_bounds(self, min_deadline: int | None = None,  # noqa: D102
                   min_episodic_anchor: int | None = None) -> None:
        self._record("agent.bounds", self.agent_id, min_deadline, min_episodic_anchor)
        super().set_bounds(min_deadline, min_episodic_anchor)


class EffectRecorder:
    """Records an engine's effects between journal rows (durable mode).

    Args:
        state: The engine state (its agents are switched to :class:`RecordingAgentMemory`).
        summarizer: The summarizer (its state is compared at the end of each call).
        semantic: The semantic memory (async embedding queue and embedder version).
    """

    def __init__(self, state: EngineState, summarizer: Summarizer,
                 semantic: SemanticMemory) -> None:
        self.state = state
        self.summarizer = summarizer
        self.semantic = semantic
        self.effects: list[Effect] = []
        self._last: dict[str, Any] = {}
        self._summarizer: tuple[int, str] = (-1, "")
        self._jobs: tuple[int, str | None] = (-1, None)

    # ------------------------------------------------------------------ wiring
    def attach(self) -> None:
        """Start recording: every agent and vocabulary appends its mutations."""
        store = self.state.store
        for am in store:
            self._watch(am)
        store.on_create = self._created
        self.semantic.queries.journal = self.effects
        self._last = self._globals()

    def detach(self) -> None:
        """Stop recording (the agents become plain :class:`AgentMemory` again)."""
        store = self.state.store
        store.on_create = None
        self.semantic.queries.journal = None
        for am in store:
            am.__class__ = AgentMemory
        for vocab in self.state.vocabularies.values():
            vocab.journal = None
        self.effects = []

    def _watch(self, am: AgentMemory) -> None:
        am.__class__ = RecordingAgentMemory
        assert isinstance(am, RecordingAgentMemory)
        am.effects = self.effects
        am.quiet = False
        self.state.vocabulary(am.agent_id).journal = (self.effects, am.agent_id)

    def _created(self, am: AgentMemory) -> None:
        self.effects.append(("agent.create", am.agent_id))
        self._watch(am)

    # ------------------------------------------------------------------ rows
    def _globals(self) -> dict[str, Any]:
        state = self.state
        pending = self.semantic.pending
        summarizer = self.summarizer
        if self._summarizer[0] != summarizer.revision:  # serialized only after a change
            self._summarizer = (summarizer.revision,
                                json.dumps(summarizer.get_state(), sort_keys=True))
        if pending is not None and self._jobs[0] != pending.revision:
            self._jobs = (pending.revision, json.dumps(pending.get_state()))
        return {
            "engine": [state.clock, state.pressure.value, state.tick_cursor,
                       state.compaction.get_state(), state.backlog_total,
                       state.backlog_streak],
            "tags": len(state.store.tags),
            "summarizer": self._summarizer[1],
            "embedJobs": self._jobs[1],
            "embedder": self.semantic.version,
        }

    def take(self, call: str) -> dict[str, Any] | None:
        """The journal row of everything changed since the last row (``None``: nothing).

        ``call`` names the public call for diagnostics; replay does not use it.
        """
        now = self._globals()
        last = self._last
        head: list[Effect] = []
        if now["tags"] != last["tags"]:
            tags = self.state.store.tags
            head.append(("tags.add", last["tags"],
                         [list(tags.get(i)) for i in range(last["tags"], now["tags"])]))
        tail: list[Effect] = []
        if now["engine"] != last["engine"]:
            tail.append(("engine.scalars", now["engine"]))
        if now["summarizer"] != last["summarizer"]:
            tail.append(("summarizer.state", json.loads(now["summarizer"])))
        if now["embedJobs"] != last["embedJobs"]:
            tail.append(("embedding.jobs", json.loads(now["embedJobs"] or "[]")))
        if now["embedder"] != last["embedder"]:
            tail.append(("embedding.version", now["embedder"]))
        if not (head or tail or self.effects):
            return None
        row = {"v": EFFECTS_VERSION, "call": call,
               "fx": [list(e) for e in (*head, *self.effects, *tail)]}
        self.effects.clear()
        self._last = now
        return row

    def changed(self) -> bool:
        """Whether anything changed since the last row (what a failed call must undo)."""
        return bool(self.effects) or self._globals() != self._last

    def reset(self) -> None:
        """Forget what was recorded (the engine state was restored from the log)."""
        self.effects.clear()
        self._last = self._globals()


def json_default(value: object) -> object:
    """``json.dumps`` hook for the values effects hold besides JSON: arrays, numpy scalars."""
    if isinstance(value, np.ndarray | np.generic):
        return encode(value)
    raise TypeError(f"an effect holds a {type(value).__name__}")


# ---------------------------------------------------------------------- replay
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
}
"""The registry: stable effect name -> how replay applies it (version :data:`EFFECTS_VERSION`)."""
