"""Tampered snapshots that still pass the checksum are refused, naming what is wrong.

Each case decodes a good snapshot, breaks one invariant in the manifest or the arrays and
re-encodes it with ``snapshot.dumps`` (so magic, version and checksum are valid): ``load``
must raise ``MEMORY_SNAPSHOT_INVALID`` naming the problem, and never half-load.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.determinism import run_village
from f09_memory.determinism.scenario import LIFECYCLE_CONFIG
from f09_memory.errors import ErrorCode, MemoryEngineError, SnapshotInvalidError
from f09_memory.ingestion import Claim
from f09_memory.persistence import snapshot
from f09_memory.schema.enums import MemoryLayer
from f09_memory.testing import ScriptedLLM

Change = Callable[[dict[str, Any], dict[str, np.ndarray]], None]
EPISODIC = MemoryLayer.EPISODIC.code


@pytest.fixture(scope="module")
def saved() -> bytes:
    """Three agents (an HNSW index, two exact ones), claims, tags, source events, tasks."""
    cfg = MemoryConfig(**LIFECYCLE_CONFIG, embedding_dim=32, semantic_preselect_threshold=10,
                       semantic_preselect_min_ratio=0, exact_index_max=24, semantic_preselect_k=5)
    engine = MemoryEngine(cfg, seed=3)
    run_village(engine, agents=3, ticks=20, seed=3, tick_ms=10_000)
    engine.ingest_claim("npc-000", "Budget is 5 gold.", Claim("project:mill", "budget_is", "5"),
                        now=engine.now)
    engine.ingest("npc-001", "Saw the wolf by the mill.", tags=["wolf"], source_event="evt-7",
                  now=engine.now)
    engine.tick(engine.now + 10_000)
    engine.tick(engine.now + 10_000)
    return engine._snapshot_bytes()


def tampered(blob: bytes, change: Change) -> bytes:
    snap = snapshot.loads(blob)
    arrays = {name: arr.copy() for name, arr in snap.arrays.items()}
    change(snap.manifest, arrays)
    return snapshot.dumps(snap.manifest, arrays)


def load(tmp_path: Path, blob: bytes) -> MemoryEngine:
    path = tmp_path / "t.f09"
    path.write_bytes(blob)
    return MemoryEngine.load(path)


def agent(m: dict[str, Any], i: int = 0) -> dict[str, Any]:
    agents: list[dict[str, Any]] = m["agents"]
    return agents[i]


def first_of(m: dict[str, Any], i: int) -> int:
    return sum(a["count"] for a in m["agents"][:i])


def _swap_agents(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    m["agents"][0]["agentId"], m["agents"][1]["agentId"] = "npc-001", "npc-000"


def _duplicate_key(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    a["key"][1] = a["key"][0]


def _ring_with_a_semantic_key(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    stop = agent(m)["count"]
    other = a["key"][:stop][a["layer"][:stop] != EPISODIC]
    a["ring"][0] = other[0]


def _ring_repeats(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    a["ring"][1] = a["ring"][0]


def _unembed_one(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    a["embedded"][int(np.flatnonzero(a["embedded"])[0])] = False


def _vector(value: float) -> Change:
    def change(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
        a["vectors"][0] *= value
    return change


def _bad_bool(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    a["flagged"].view(np.uint8)[0] = 2


def _column(name: str, value: Any) -> Change:
    def change(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
        a[name][0] = value
    return change


def _array(name: str, value: Callable[[np.ndarray], np.ndarray]) -> Change:
    def change(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
        a[name] = value(a[name])
    return change


def _field(path: tuple[Any, ...], value: Any) -> Change:
    def change(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
        target: Any = m
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value(target[path[-1]]) if callable(value) else value
    return change


def _drop(name: str) -> Change:
    def change(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
        del m[name]
    return change


def _nested_attribute(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    """A nested list in the attributes of agent 0's claim record (the extras that have any)."""
    (attributes,) = [extra["attributes"] for _, extra in agent(m)["extras"]
                     if "attributes" in extra]
    attributes["x"] = [[1]]


def _index_key_not_live(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    index = agent(m, 1)["index"]
    index["keys"][0] = 10**6


def _unsorted_words(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    ends = a["wordEnds"]
    blob = a["words"].tobytes()
    first, second = blob[: ends[0]], blob[ends[0]: ends[1]]
    a["words"] = np.frombuffer(second + first + blob[ends[1]:], dtype=np.uint8).copy()
    ends[0] = len(second)


def _summarizer_counter_for_a_stranger(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    m["summarizer"]["counters"]["npc-999"] = 1


def _job_for_a_stranger(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    m["embedJobs"] = [{"due": 5, "keys": [["npc-999", 0]], "texts": ["x"]}]


CASES: list[tuple[str, Change, str]] = [
    ("duplicate key", _duplicate_key, "repeated or not in increasing order"),
    ("key past nextKey", _field(("agents", 0, "nextKey"), 1), "below its agent's nextKey"),
    ("unsorted agents", _swap_agents, "not in sorted order"),
    ("repeated agent", _field(("agents", 1, "agentId"), "npc-000"), "not in sorted order"),
    ("empty agent id", _field(("agents", 0, "agentId"), ""), "agentId is not a valid"),
    ("agent id not a string", _field(("agents", 0, "agentId"), 7), "agentId is not a valid"),
    ("short column", _array("layer", lambda x: x[:-1]), "differ in length"),
    ("column dtype", _array("key", lambda x: x.astype(np.int32)), "array key"),
    ("counts", _field(("agents", 0, "count"), lambda n: n + 1), "add up"),
    ("layer code", _column("layer", 9), "column layer"),
    ("status code", _column("status", 5), "column status"),
    ("tokens", _column("tokens", -1), "column tokens"),
    ("importance NaN", _column("importance", np.nan), "column importance"),
    ("importance above 1", _column("importance", 1.5), "column importance"),
    ("created negative", _column("created", -5), "column created"),
    ("anchor past logical time", _column("anchor", 2**62), "column anchor"),
    ("deadline negative", _column("deadline", -1), "column deadline"),
    ("tagset out of range", _column("tagset", 10**6), "column tagset"),
    ("bool byte 2", _bad_bool, "column flagged"),
    ("ring holds a semantic key", _ring_with_a_semantic_key, "episodic ring"),
    ("ring repeats a key", _ring_repeats, "episodic ring"),
    ("ring count", _field(("agents", 0, "ring"), lambda n: n - 1), "episodic ring"),
    ("vocabulary count", _field(("agents", 0, "vocabulary"), lambda v: [v[0], v[1] + 1]),
     "wordEnds"),
    ("vocabulary order", _unsorted_words, "vocabulary is not sorted"),
    ("text ends", _array("textEnds", lambda x: x[::-1].copy()), "textEnds"),
    ("text not UTF-8", _array("text", lambda x: np.full_like(x, 0xFF)), "not valid UTF-8"),
    ("embedded without vector", _unembed_one, "one per embedded record"),
    ("vector NaN", _vector(np.nan), "not finite and unit"),
    ("vector not unit", _vector(2.0), "not finite and unit"),
    ("extras of a dead key", _field(("agents", 0, "extras", -1, 0), 10**6), "extras names"),
    ("extras unsorted", _field(("agents", 0, "extras"), lambda e: e[::-1]), "extras keys"),
    ("nested attribute", _nested_attribute, "not scalars"),
    ("source event of a dead key", _field(("agents", 1, "sourceEvents", -1, 0), 10**6),
     "sourceEvents names"),
    ("bounds above records", _field(("agents", 0, "bounds"), [2**62, 2**62]), "bounds"),
    ("tag not a string", _field(("tags", 1), [1]), "tags[1] is not a tuple of strings"),
    ("tag table repeats", _field(("tags", 2), lambda t: ["market"]), "repeats a tuple"),
    ("tag table start", _field(("tags", 0), ["x"]), "empty tuple"),
    ("clock", _field(("clock",), -1), "clock"),
    ("clock a float", _field(("clock",), 1.5), "clock"),
    ("pressure", _field(("pressure",), "panic"), "pressure"),
    ("tick cursor", _field(("tickCursor",), 99), "tickCursor"),
    ("backlog", _field(("backlog",), ["x", 0]), "backlog"),
    ("compaction cursor agent", _field(("compactionCursor", "agentId"), "npc-999"),
     "compactionCursor"),
    ("compaction cursor layer", _field(("compactionCursor", "layerPos"), 6), "layerPos"),
    ("seed", _field(("seed",), 3.0), "seed"),
    ("missing field", _drop("agents"), "lacks fields"),
    ("hnsw built with another M", _field(("agents", 0, "index", "m"), 4), "this config"),
    ("exact index of a dead key", _index_key_not_live, "not live records"),
    ("index of another kind", _field(("agents", 1, "index", "kind"), "annoy"),
     "not an exact or hnsw"),
    ("summarizer counter", _summarizer_counter_for_a_stranger, "summarizer.counters"),
    ("summarizer malformed", _field(("summarizer", "version"), 99), "the summarizer"),
    ("embedding job", _job_for_a_stranger, "embedJobs[0]"),
    ("dim", _field(("agents", 0, "dim"), 16), "vectors' dim"),
]


@pytest.mark.parametrize(("change", "needle"), [(c, n) for _, c, n in CASES],
                         ids=[name for name, _, _ in CASES])
def test_a_broken_invariant_is_refused_naming_it(tmp_path: Path, saved: bytes, change: Change,
                                                 needle: str) -> None:
    blob = tampered(saved, change)
    with pytest.raises(MemoryEngineError) as info:
        load(tmp_path, blob)
    assert ErrorCode.MEMORY_SNAPSHOT_INVALID == info.value.code
    assert needle in info.value.message
    assert "nothing was loaded" in info.value.message


def test_the_untampered_snapshot_loads_and_holds_every_invariant(tmp_path: Path,
                                                                 saved: bytes) -> None:
    engine = load(tmp_path, tampered(saved, lambda m, a: None))
    engine._check()
    again = load(tmp_path, engine._snapshot_bytes())  # hnswlib's label map order may differ
    assert engine.state_hash() == again.state_hash()
    assert snapshot.loads(saved).arrays.keys() == snapshot.loads(
        engine._snapshot_bytes()).arrays.keys()


def test_a_refused_load_starts_no_embedding_thread(tmp_path: Path, saved: bytes) -> None:
    def pending_job_then_bad_summarizer(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
        m["embedJobs"] = [{"due": 5, "keys": [["npc-000", 0]], "texts": ["x"]}]
        m["summarizer"]["version"] = 99

    before = {t.name for t in threading.enumerate()}
    with pytest.raises(SnapshotInvalidError):
        load(tmp_path, tampered(saved, pending_job_then_bad_summarizer))
    assert before == {t.name for t in threading.enumerate()}


def test_seeded_random_tampering_is_refused_or_loads_soundly(tmp_path: Path,
                                                             saved: bytes) -> None:
    """Any single changed array element: a clean refusal or a state whose invariants hold."""
    rng = np.random.default_rng(2024)
    snap = snapshot.loads(saved)
    names = sorted(snap.arrays)
    outcomes = {"refused": 0, "loaded": 0}
    for _ in range(60):
        name = names[int(rng.integers(0, len(names)))]
        arrays = {k: v.copy() for k, v in snap.arrays.items()}
        raw = arrays[name].reshape(-1).view(np.uint8)
        if raw.shape[0] == 0:
            continue
        raw[int(rng.integers(0, raw.shape[0]))] ^= np.uint8(1 << int(rng.integers(0, 8)))
        try:
            engine = load(tmp_path, snapshot.dumps(snap.manifest, arrays))
        except SnapshotInvalidError:
            outcomes["refused"] += 1
            continue
        engine._check()
        engine.tick(engine.now + 10_000)
        engine._check()
        outcomes["loaded"] += 1
    assert outcomes["refused"] >= 20


# ---------------------------------------------------------------- no false refusals

AGENTS = ["ana", "bo", "zoë 🐺"]
WORDS = ["river", "boat", "smith", "wolf", "mill", "grain", "nails", "\"quoted\"", "[x]"]
operation = st.one_of(
    st.tuples(st.just("ingest"), st.integers(0, 2), st.lists(st.sampled_from(WORDS),
              min_size=1, max_size=5), st.sampled_from([layer.value for layer in MemoryLayer]),
              st.none() | st.floats(0, 1), st.lists(st.sampled_from(WORDS[:4]), max_size=2),
              st.none() | st.integers(1, 50_000), st.booleans(), st.none() | st.text(max_size=5),
              st.none() | st.dictionaries(st.sampled_from(["k", "claimKey"]),
                                          st.text(max_size=3) | st.integers(), max_size=2)),
    st.tuples(st.just("many"), st.integers(0, 2), st.integers(1, 40)),
    st.tuples(st.just("claim"), st.integers(0, 2), st.sampled_from(["5", "9"])),
    st.tuples(st.just("forget"), st.integers(0, 2), st.integers(0, 3)),
    st.tuples(st.just("update"), st.integers(0, 2), st.sampled_from(WORDS)),
    st.tuples(st.just("tick"), st.integers(1, 40_000)),
    st.tuples(st.just("pressure"), st.sampled_from(["normal", "soft", "throttle"])),
    st.tuples(st.just("summarize")),
)


def _apply(engine: MemoryEngine, op: tuple[Any, ...]) -> None:
    kind, now = op[0], engine.now
    if kind == "ingest":
        _, a, words, layer, importance, tags, ttl, flagged, source, attrs = op
        engine.ingest(AGENTS[a], " ".join(words), layer=layer, importance=importance, tags=tags,
                      ttl=ttl, flagged=flagged, source_event=source or None,
                      metadata={"attributes": attrs} if attrs else None, now=now)
    elif kind == "many":
        engine.ingest_many(AGENTS[op[1]], [f"{WORDS[i % 9]} day {i}" for i in range(op[2])],
                           now=now)
    elif kind == "claim":
        engine.ingest_claim(AGENTS[op[1]], f"Budget is {op[2]}.",
                            Claim("project:mill", "budget_is", op[2]), now=now)
    elif kind == "forget":
        ids = [r.id for r in engine.recent(AGENTS[op[1]], 4)][: op[2]] \
            if AGENTS[op[1]] in engine.agents() else []
        if ids:
            engine.forget(ids)
    elif kind == "update":
        recent = engine.recent(AGENTS[op[1]], 1) if AGENTS[op[1]] in engine.agents() else []
        if recent:
            engine.update(recent[0].id, content=op[2], importance=0.4)
    elif kind == "tick":
        engine.tick(now + op[1], budget_ms=1.0)
    elif kind == "pressure":
        engine.set_pressure(op[1])
    else:
        engine.summarize_pending(ScriptedLLM(["Ana met Bo at the mill."]), now=now)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(operation, min_size=1, max_size=25))
@example(ops=[("many", 0, 9), ("tick", 1),  # updated (un-embedded), then expired: the index
              ("ingest", 0, ["river"], "episodic", None, [], 1, False, None, None),
              ("update", 0, "river"), ("tick", 1)])  # must not keep the dead key
@example(ops=[("ingest", 1, ["river"], "episodic", None, [], None, False, None,
               {"claimKey": ""})] * 2)  # a raw claimKey attribute may repeat
def test_any_engine_state_saves_and_loads_without_refusal(tmp_path: Path,
                                                         ops: list[tuple[Any, ...]]) -> None:
    cfg = MemoryConfig(**LIFECYCLE_CONFIG, embedding_dim=16, semantic_preselect_threshold=8,
                       semantic_preselect_min_ratio=0,
                       exact_index_max=30, semantic_preselect_k=4, episodic_max=40)
    engine = MemoryEngine(cfg, seed=1)
    for op in ops:
        try:
            _apply(engine, op)
        except MemoryEngineError as exc:  # a refused call (e.g. pressure) changes nothing
            assert exc.code is not ErrorCode.MEMORY_SNAPSHOT_INVALID
    loaded = load(tmp_path, engine._snapshot_bytes())
    assert engine.state_hash() == loaded.state_hash()
    loaded._check()


def test_a_record_updated_then_removed_leaves_the_vector_index() -> None:
    cfg = MemoryConfig(embedding_dim=16, semantic_preselect_threshold=8,
                       semantic_preselect_min_ratio=0, exact_index_max=30)
    engine = MemoryEngine(cfg, seed=1)
    engine.ingest_many("a", [f"river day {i}" for i in range(12)], now=0)
    engine.tick(1)
    record = engine.recent("a", 1)[0]
    engine.update(record.id, content="a new text, not embedded yet")
    engine.forget([record.id])
    am = engine._state.store.get("a")
    assert am is not None and am.index is not None
    assert set(am.index.keys().tolist()) <= set(am.slot_of)  # type: ignore[attr-defined]
    engine._check()
