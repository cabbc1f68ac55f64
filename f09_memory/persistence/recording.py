"""Recording a durable engine's effects: what a call changed, as it happened.

In durable mode every agent's memory is a :class:`RecordingAgentMemory`: each mutation it
performs (records added with their redacted fields and assigned keys, removed, updated,
embedded; index builds; the maintained bounds) is appended to one effect list, in order,
with everything replay needs (vectors included). Vocabulary observations are appended by
the vocabulary itself and the async mode's query table appends its own changes; engine
scalars, new tag tuples, the summarizer's and the embedding queue's states are compared at
the end of a call (:class:`EffectRecorder`) and appended when they changed. Effect names
and their replay are in ``persistence.effects``.

Slots are never recorded: a replay starts from a snapshot whose slots are compacted, so
effects name records by key.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.core.state import EngineState
from f09_memory.persistence.effects import EFFECTS_VERSION, Effect
from f09_memory.protocols import VectorIndex
from f09_memory.retrieval.semantic import SemanticMemory
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import NewRecords, RecordExtra, Removed
from f09_memory.summarization.pipeline import Summarizer
from f09_memory.vector_index.exact import ExactIndex
from f09_memory.vector_index.hnsw import HnswIndex

__all__ = ["EffectRecorder", "RecordingAgentMemory"]

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

    def add_batch(self, new: NewRecords, fingerprints: Sequence[int] | None = None  # noqa: D102
                  ) -> tuple[Sequence[int], dict[int, list[Removed]]]:
        if self.quiet:
            return super().add_batch(new, fingerprints)
        self.quiet = True
        try:
            out = super().add_batch(new, fingerprints)
        finally:
            self.quiet = False
        payload: dict[str, Any] = {name: list(getattr(new, name)) for name in _NEW_FIELDS[:12]}
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

    def remove_many(self, keys: Sequence[int]) -> list[Removed]:  # noqa: D102
        return [self.remove(key) for key in keys]  # recorded (and replayed) one by one

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

    def reinforce(self, slots: Sequence[int], importance: Sequence[float],  # noqa: D102
                  now: int) -> None:
        if not self.quiet:
            for key, value, anchor in zip(self.key[slots].tolist(), importance,
                                          np.maximum(self.anchor[slots], now).tolist(),
                                          strict=True):
                self._record("record.update", self.agent_id, key,
                             {"importance": value, "anchor": anchor})
        super().reinforce(slots, importance, now)

    def mark_embedded(self, slot: int, embedded: bool) -> None:  # noqa: D102
        if not self.quiet:
            self.effects.append(("record.embedded", self.agent_id, int(self.key[slot]),
                                 bool(embedded)))
        super().mark_embedded(slot, embedded)

    def mark_embedded_many(self, slots: NDArray[np.intp]) -> None:  # noqa: D102
        if not self.quiet:
            self.effects.append(("record.embedded_many", self.agent_id, self.key[slots].copy()))
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

    def attach_rows(self, slots: Sequence[int], vectors: NDArray[np.float32],  # noqa: D102
                    rows: Sequence[int]) -> None:
        if self.quiet:
            return super().attach_rows(slots, vectors, rows)
        self.attach_vectors(np.asarray(slots, dtype=np.intp), vectors[rows])  # recorded
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
        for table in self.state.tables.values():
            table.tracking = True
        self._last = self._globals()

    def detach(self) -> None:
        """Stop recording (the agents become plain :class:`AgentMemory` again)."""
        store = self.state.store
        store.on_create = None
        self.semantic.queries.journal = None
        for table in self.state.tables.values():
            table.tracking = False
            table.take_changes()
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
        for name, table in sorted(self.state.tables.items()):
            changes = table.take_changes()
            if changes is not None:
                tail.append(("table.changes", name, *changes))
        if not (head or tail or self.effects):
            return None
        row = {"v": EFFECTS_VERSION, "call": call,
               "fx": [list(e) for e in (*head, *self.effects, *tail)]}
        self.effects.clear()
        self._last = now
        return row

    def changed(self) -> bool:
        """Whether anything changed since the last row (what a failed call must undo)."""
        return (bool(self.effects) or self._globals() != self._last
                or any(table.has_changes() for table in self.state.tables.values()))

    def reset(self) -> None:
        """Forget what was recorded (the engine state was restored from the log)."""
        self.effects.clear()
        for table in self.state.tables.values():
            table.take_changes()
        self._last = self._globals()
