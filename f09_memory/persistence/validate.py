"""Checks of a snapshot's engine state before (and right after) it is restored.

A snapshot's checksum only catches accidents; a file can be edited and re-checksummed. So
:func:`validate_state` checks every invariant the engine relies on, on the decoded
manifest and arrays, before anything is restored: the manifest's shape and scalars
(clock, pressure, cursors, backlog), the tag table, the agents (ids valid, unique and
sorted, counts that add up), the columns (dtypes, lengths, keys unique per agent and below
``nextKey``, codes and values in range), the episodic rings, the vocabularies, the vectors
(one finite unit row per embedded record), the sparse metadata (keys of live records,
metadata of known shape), the vector indexes (parameters of this config, keys of live
records) and the pending embedding jobs. :func:`check_references` checks what the
summarizer's state points at, and :func:`check_restored` runs the restored state's
``_check()`` as a last guard. Each raises :class:`~f09_memory.errors.SnapshotInvalidError`
whose message names the part and the rule broken (never a value: it may be private).
Vectorized over records; per-agent work is O(agents) numpy calls plus the sparse entries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory._validate import MAX_LOGICAL_TIME
from f09_memory.config.config import MemoryConfig
from f09_memory.errors import InputInvalidError, SnapshotInvalidError
from f09_memory.ingestion.validation import validate_agent_id
from f09_memory.schema.enums import LAYERS_BY_CODE, MemoryLayer, PressureState
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import CLAIM_STATUSES, record_id
from f09_memory.vector_index.exact import UNIT_TOLERANCE

__all__ = [
    "GUARD_MAX_RECORDS",
    "STATE_FIELDS",
    "check_references",
    "check_restored",
    "check_words",
    "invalid",
    "validate_state",
]

STATE_FIELDS = ("seed", "config", "clock", "pressure", "tickCursor", "compactionCursor",
                "backlog", "summarizer", "embedderVersion", "embedJobs", "tags", "agents")
"""The manifest fields an engine state must have."""
_AGENT_FIELDS = ("agentId", "nextKey", "count", "ring", "vocabulary", "dim", "bounds",
                 "index", "sourceEvents", "extras")
_COLUMNS = ("key", "layer", "importance", "flagged", "created", "anchor", "tokens",
            "deadline", "status", "redacted", "tagset", "embedded")
_BOOLS = ("flagged", "redacted", "embedded")
_INT64_MAX = 2**63 - 1
_EPISODIC = MemoryLayer.EPISODIC.code
_PRESSURES = frozenset(p.value for p in PressureState)
_SCALARS = (str, bool, int, float)
GUARD_MAX_RECORDS = 50_000
"""Up to this many live records, :func:`check_restored` also runs the store's ``_check()``."""
_EXTRA_FIELDS = frozenset({"sourceRefIds", "spatial", "social", "procedural", "attributes"})


def invalid(problem: str) -> SnapshotInvalidError:
    """The error for a snapshot whose state breaks a rule (``problem`` names it)."""
    return SnapshotInvalidError(
        f"the snapshot's state is invalid: {problem}; nothing was loaded (restore a good "
        "snapshot)", details={"problem": problem})


def _int(value: object, what: str, low: int = 0, high: int = _INT64_MAX) -> int:
    if type(value) is not int or not low <= value <= high:
        raise invalid(f"{what} is not an integer in [{low}, {high}]")
    return value


def _list(value: object, what: str, length: int | None = None) -> list[Any]:
    if not isinstance(value, list) or (length is not None and len(value) != length):
        raise invalid(f"{what} is not a list" + ("" if length is None else f" of {length}"))
    return value


def _fields(value: object, what: str, names: Sequence[str]) -> dict[str, Any]:
    if not isinstance(value, dict) or any(name not in value for name in names):
        raise invalid(f"{what} lacks fields of an engine state")
    return value


def _check_top(manifest: dict[str, Any], agent_ids: list[str], seed: int) -> None:
    if type(manifest["seed"]) is not int or manifest["seed"] != seed:
        raise invalid("seed is not the engine's integer seed")
    _int(manifest["clock"], "clock", 0, MAX_LOGICAL_TIME - 1)
    if not isinstance(manifest["pressure"], str) or manifest["pressure"] not in _PRESSURES:
        raise invalid("pressure is not a pressure state")
    _int(manifest["tickCursor"], "tickCursor", 0, max(0, len(agent_ids) - 1))
    for i, value in enumerate(_list(manifest["backlog"], "backlog", 2)):
        _int(value, f"backlog[{i}]")
    cursor = _fields(manifest["compactionCursor"], "compactionCursor", ("agentId", "layerPos"))
    _int(cursor["layerPos"], "compactionCursor.layerPos", 0, len(LAYERS_BY_CODE) - 1)
    agent = cursor["agentId"]
    if agent is not None and (not isinstance(agent, str) or agent not in set(agent_ids)):
        raise invalid("compactionCursor names an agent the snapshot does not hold")
    version = manifest["embedderVersion"]
    if version is not None and not isinstance(version, str):
        raise invalid("embedderVersion is not a string or null")


def _check_tags(tags: object) -> int:
    table = _list(tags, "tags")
    if not table or not isinstance(table[0], list) or table[0]:
        raise invalid("the tag table does not start with the empty tuple")
    seen: set[tuple[str, ...]] = set()
    for i, entry in enumerate(table):
        if not isinstance(entry, list) or not all(isinstance(t, str) for t in entry):
            raise invalid(f"tags[{i}] is not a tuple of strings")
        seen.add(tuple(entry))
    if len(seen) != len(table):
        raise invalid("the tag table repeats a tuple")
    return len(table)


def _check_agents(agents: list[Any]) -> list[str]:
    ids: list[str] = []
    for i, a in enumerate(agents):
        entry = _fields(a, f"agents[{i}]", _AGENT_FIELDS)
        try:
            ids.append(validate_agent_id(entry["agentId"]))
        except InputInvalidError:
            raise invalid(f"agents[{i}].agentId is not a valid agent id") from None
    if any(a >= b for a, b in pairwise(ids)):
        raise invalid("agent ids are repeated or not in sorted order")
    return ids


def _column(arrays: Mapping[str, Any], name: str, dtype: np.dtype[Any], ndim: int = 1
            ) -> NDArray[Any]:
    arr = arrays.get(name)
    if not isinstance(arr, np.ndarray) or arr.dtype != dtype or arr.ndim != ndim:
        raise invalid(f"array {name} is missing or not {ndim}-D {dtype.name}")
    return arr


def _check_columns(arrays: Mapping[str, Any], agents: list[dict[str, Any]], n_tags: int,
                   config: MemoryConfig) -> dict[str, NDArray[Any]]:
    cols = {name: _column(arrays, name, AgentMemory.column_dtype(name)) for name in _COLUMNS}
    n = int(cols["key"].shape[0])
    if any(col.shape[0] != n for col in cols.values()):
        raise invalid("the record columns differ in length")
    counts = np.array([_int(a["count"], f"agents[{i}].count") for i, a in enumerate(agents)],
                      dtype=np.int64)
    if int(counts.sum()) != n:
        raise invalid("the agents' record counts do not add up to the columns' length")
    next_keys = np.array([_int(a["nextKey"], f"agents[{i}].nextKey")
                          for i, a in enumerate(agents)], dtype=np.int64)
    keys = cols["key"]
    first = np.zeros(n, dtype=bool)
    first[(np.cumsum(counts) - counts)[counts > 0]] = True
    if n and ((keys < 0).any() or (keys >= np.repeat(next_keys, counts)).any()):
        raise invalid("a record key is negative or not below its agent's nextKey")
    if n > 1 and (np.diff(keys)[~first[1:]] <= 0).any():
        raise invalid("record keys of an agent are repeated or not in increasing order")
    for name in _BOOLS:
        if (cols[name].view(np.uint8) > 1).any():
            raise invalid(f"column {name} holds a value other than true/false")
    importance = cols["importance"]
    checks = (
        ("layer", (cols["layer"] < 0) | (cols["layer"] >= len(LAYERS_BY_CODE))),
        ("status", (cols["status"] < 0) | (cols["status"] >= len(CLAIM_STATUSES))),
        ("tokens", cols["tokens"] < 0),
        ("importance", ~((importance >= 0.0) & (importance <= 1.0))),
        ("created", (cols["created"] < 0) | (cols["created"] >= MAX_LOGICAL_TIME)),
        ("anchor", (cols["anchor"] < 0) | (cols["anchor"] >= MAX_LOGICAL_TIME)),
        ("deadline", cols["deadline"] < 0),
        ("tagset", (cols["tagset"] < 0) | (cols["tagset"] >= n_tags)),
    )
    for name, bad in checks:
        if bad.any():
            raise invalid(f"column {name} holds a value out of range")
    episodic = cols["layer"] == _EPISODIC
    owner = np.repeat(np.arange(len(agents)), counts)
    per_agent = np.bincount(owner[episodic], minlength=len(agents))
    rings = np.array([_int(a["ring"], f"agents[{i}].ring") for i, a in enumerate(agents)],
                     dtype=np.int64)
    ring = _column(arrays, "ring", np.dtype(np.int64))
    if not np.array_equal(rings, per_agent) or not np.array_equal(ring, keys[episodic]):
        raise invalid("an episodic ring is not its agent's episodic keys in order")
    if (per_agent > config.episodic_max).any():
        raise invalid("an agent holds more episodic records than episodic_max")
    return cols


def _check_blob(arrays: Mapping[str, Any], blob: str, ends: str, count: int) -> None:
    text = _column(arrays, blob, np.dtype(np.uint8))
    offsets = _column(arrays, ends, np.dtype(np.int64))
    if offsets.shape[0] != count or (count and (
            int(offsets[0]) < 0 or (np.diff(offsets) < 0).any()
            or int(offsets[-1]) != text.shape[0])) or (not count and text.shape[0]):
        raise invalid(f"array {ends} does not split {blob} into {count} texts")


def _check_words(arrays: Mapping[str, Any], agents: list[dict[str, Any]],
                 config: MemoryConfig) -> None:
    sizes = [[_int(n, f"agents[{i}].vocabulary") for n in _list(a["vocabulary"],
              f"agents[{i}].vocabulary", 2)] for i, a in enumerate(agents)]
    _check_blob(arrays, "words", "wordEnds", sum(p + c for p, c in sizes))
    half = config.importance.novelty_vocab_max // 2
    if any(c >= half for _, c in sizes):
        raise invalid("a vocabulary's current generation is full (it should have rotated)")


def check_words(words: list[str], agents: list[dict[str, Any]]) -> None:
    """Check that each vocabulary generation is sorted and has no repeats (as saved).

    Args:
        words: The decoded ``words`` blob.
        agents: ``manifest["agents"]`` (already passed :func:`validate_state`).

    Raises:
        SnapshotInvalidError: A generation is unsorted or repeats a word.
    """
    at = 0
    for i, a in enumerate(agents):
        for size in a["vocabulary"]:
            generation = words[at:at + size]
            if any(x >= y for x, y in pairwise(generation)):
                raise invalid(f"agents[{i}].vocabulary is not sorted or repeats a word")
            at += size


def _check_vectors(arrays: Mapping[str, Any], agents: list[dict[str, Any]],
                   embedded_counts: NDArray[np.int64]) -> None:
    vectors = _column(arrays, "vectors", np.dtype(np.float32), 2)
    if vectors.shape[0] != int(embedded_counts.sum()):
        raise invalid("the vectors' rows are not one per embedded record")
    for i, a in enumerate(agents):
        dim = a["dim"]
        if dim is not None:
            _int(dim, f"agents[{i}].dim", 1, 8192)
        if embedded_counts[i] and dim != vectors.shape[1]:
            raise invalid(f"agents[{i}] has embedded records but not the vectors' dim")
    norms = np.einsum("ij,ij->i", vectors, vectors)  # NaN or inf in a row makes its sum so
    if not ((np.abs(norms - 1.0) <= UNIT_TOLERANCE) | (norms == 0.0)).all():
        raise invalid("a vector is not finite and unit length")


def _check_bounds(a: dict[str, Any], i: int, cols: dict[str, NDArray[Any]]) -> None:
    bounds = [_int(b, f"agents[{i}].bounds", -(2**63)) for b in _list(
        a["bounds"], f"agents[{i}].bounds", 2)]
    episodic = cols["layer"] == _EPISODIC
    if (cols["key"].shape[0] and bounds[0] > int(cols["deadline"].min())) or (
            episodic.any() and bounds[1] > int(cols["anchor"][episodic].min())):
        raise invalid(f"agents[{i}].bounds are above its records' deadlines or anchors")


def _sparse_keys(entries: object, what: str, keys: NDArray[np.int64]) -> list[list[Any]]:
    pairs = _list(entries, what)
    found = []
    for pair in pairs:
        if not isinstance(pair, list) or len(pair) != 2:
            raise invalid(f"{what} holds an entry that is not a [key, value] pair")
        found.append(_int(pair[0], f"a key of {what}"))
    if any(x >= y for x, y in pairwise(found)):
        raise invalid(f"{what} keys are repeated or not in increasing order")
    at = np.searchsorted(keys, found)
    if found and ((at >= keys.shape[0]).any() or (keys[np.minimum(at, keys.shape[0] - 1)]
                                                  != found).any()):
        raise invalid(f"{what} names a key that is not a live record")
    return pairs


def _check_sparse(a: dict[str, Any], i: int, cols: dict[str, NDArray[Any]]) -> None:
    keys = cols["key"]
    for _, text in _sparse_keys(a["sourceEvents"], f"agents[{i}].sourceEvents", keys):
        if not isinstance(text, str):
            raise invalid(f"agents[{i}].sourceEvents holds a non-string event")
    for _, data in _sparse_keys(a["extras"], f"agents[{i}].extras", keys):
        if not isinstance(data, dict) or not data or not set(data) <= _EXTRA_FIELDS:
            raise invalid(f"agents[{i}].extras holds an entry that is not record metadata")
        refs = data.get("sourceRefIds", [])
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise invalid(f"agents[{i}].extras holds source refs that are not strings")
        attrs = data.get("attributes", {})
        if not isinstance(attrs, dict) or not all(
                isinstance(k, str) and isinstance(v, _SCALARS) for k, v in attrs.items()):
            raise invalid(f"agents[{i}].extras holds attributes that are not scalars")


def _check_index(a: dict[str, Any], i: int, keys: NDArray[np.int64], config: MemoryConfig,
                 seed: int) -> None:
    index = a["index"]
    if index is None:
        return
    what = f"agents[{i}].index"
    kind = index.get("kind") if isinstance(index, dict) else None
    kind = kind if isinstance(kind, str) else None
    if kind == "hnsw":
        expected = {"dim": a["dim"], "m": config.hnsw_m, "ef": config.hnsw_ef,
                    "ef_construction": config.hnsw_ef_construction, "seed": seed,
                    "quantum": config.score_quantum}
        members = index.get("live")
    elif kind == "exact":
        expected = {"dim": a["dim"], "quantum": config.score_quantum}
        members = index.get("keys")
    else:
        raise invalid(f"{what} is not an exact or hnsw index state")
    assert isinstance(index, dict)
    if any(type(index.get(k)) is not int or index.get(k) != v for k, v in expected.items()):
        raise invalid(f"{what} was not built with this config, seed and dim")
    if not isinstance(members, np.ndarray) or members.ndim != 1 or not np.isin(
            members, keys).all():
        raise invalid(f"{what} holds keys that are not live records")


def _check_jobs(jobs: object, next_key: dict[str, int]) -> None:
    for j, job in enumerate(_list(jobs, "embedJobs")):
        entry = _fields(job, f"embedJobs[{j}]", ("due", "keys", "texts"))
        _int(entry["due"], f"embedJobs[{j}].due")
        keys = _list(entry["keys"], f"embedJobs[{j}].keys")
        queries = entry.get("queries", False)
        if queries not in (False, True) or (queries and keys):
            raise invalid(f"embedJobs[{j}] is a query job that names records")
        texts = _list(entry["texts"], f"embedJobs[{j}].texts", None if queries else len(keys))
        for pair in keys:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                    and pair[0] in next_key and type(pair[1]) is int
                    and 0 <= pair[1] < next_key[pair[0]]):
                raise invalid(f"embedJobs[{j}] names a record the snapshot never held")
        if not all(isinstance(t, str) for t in texts):
            raise invalid(f"embedJobs[{j}] holds a text that is not a string")


def validate_state(manifest: dict[str, Any], arrays: Mapping[str, Any], *,
                   config: MemoryConfig, seed: int) -> None:
    """Check a decoded engine state (``persistence.state.get_state`` output) before loading.

    Args:
        manifest: The snapshot's manifest (arrays decoded).
        arrays: The snapshot's named arrays.
        config: The config the state will be loaded under (the snapshot's own).
        seed: The engine seed.

    Raises:
        SnapshotInvalidError: A field is missing, malformed or breaks an invariant (the
            message names which).
    """
    _fields(manifest, "the manifest", STATE_FIELDS)
    agents = _list(manifest["agents"], "agents")
    ids = _check_agents(agents)
    _check_top(manifest, ids, seed)
    n_tags = _check_tags(manifest["tags"])
    cols = _check_columns(arrays, agents, n_tags, config)
    _check_blob(arrays, "text", "textEnds", int(cols["key"].shape[0]))
    _check_words(arrays, agents, config)
    starts = np.cumsum([a["count"] for a in agents], dtype=np.int64)
    embedded = np.array([int(cols["embedded"][stop - a["count"]:stop].sum())
                         for a, stop in zip(agents, starts.tolist(), strict=True)],
                        dtype=np.int64)
    _check_vectors(arrays, agents, embedded)
    for i, (a, stop) in enumerate(zip(agents, starts.tolist(), strict=True)):
        mine = {name: col[stop - a["count"]:stop] for name, col in cols.items()}
        _check_bounds(a, i, mine)
        _check_sparse(a, i, mine)
        _check_index(a, i, mine["key"], config, seed)
    _check_jobs(manifest["embedJobs"], {aid: a["nextKey"] for aid, a in zip(
        ids, agents, strict=True)})


def check_references(summarizer_state: Mapping[str, Any], next_key: Mapping[str, int]) -> None:
    """Check that a (well-formed) summarizer state only names agents and keys that exist.

    Args:
        summarizer_state: ``manifest["summarizer"]``, already accepted by
            ``Summarizer.set_state``.
        next_key: Each agent's ``nextKey``.

    Raises:
        SnapshotInvalidError: A task, counter or source names an unknown agent, or a key
            the agent never issued, or a source id that is not its key's record id.
    """
    for name in ("counters", "nextCheck"):
        if not set(summarizer_state[name]) <= set(next_key):
            raise invalid(f"summarizer.{name} names an agent the snapshot does not hold")
    for name in ("pending", "ready", "held"):
        for item in summarizer_state[name]:
            agent = item["task"]["agentId"]
            if agent not in next_key:
                raise invalid(f"a summarizer.{name} task names an unknown agent")
            if name == "held":
                keys = list(item["sourceKeys"])
            else:
                keys = [source[0] for source in item["sources"]]
                if any(source[1] != record_id(agent, source[0]) for source in item["sources"]):
                    raise invalid(f"a summarizer.{name} source id is not its key's record id")
            if not all(type(k) is int and 0 <= k < next_key[agent] for k in keys):
                raise invalid(f"a summarizer.{name} task names a key its agent never issued")


def check_restored(state: Any, summarizer: Any) -> None:
    """Run the restored state's ``_check()`` assertions as a last guard.

    The summarizer's, the tag table's and every vector index's checks always run; the
    store's (a Python loop over every record, ~0.45 s at 200k records) runs up to
    :data:`GUARD_MAX_RECORDS` live records: above, :func:`validate_state` has checked the
    same invariants, vectorized, on the data restored.

    Args:
        state: The restored ``EngineState``.
        summarizer: The restored ``Summarizer``.

    Raises:
        SnapshotInvalidError: An invariant assertion failed (its message names it).
    """
    try:
        summarizer._check()
        state.store.tags._check()
        for am in state.store:
            assert am.agent_id in state.vocabularies, "an agent has no vocabulary"
            if am.index is not None:
                am.index._check()
        if state.store.total_live() <= GUARD_MAX_RECORDS:
            state._check()
    except AssertionError as exc:
        raise invalid(f"a restored invariant does not hold ({str(exc)[:120] or 'assert'})"
                      ) from exc
