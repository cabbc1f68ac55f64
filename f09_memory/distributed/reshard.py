"""Re-sharding: the snapshot of the agents one shard owns, cut from any set of snapshots.

:func:`merge_snapshots` reads snapshots (``MemoryEngine.dumps`` bytes: a single-process
engine's, or every shard's of a sharded engine) and writes the snapshot of the agents that
``keep`` selects, as one engine holding exactly them would have it:

- per agent (moved whole): its record columns, texts, ring, vocabulary, vectors and vector
  index, sparse metadata, its rows of every layer table (the first key part names the
  agent) and its summarization state (task counter, next check, its tasks in each queue);
- shared: config and seed (they must agree), clock and pressure (the latest clock); the tag
  table is the union of the inputs' (record tag ids renumbered);
- reset: where maintenance resumes (tick cursor, compaction cursor, backlog streak, the
  miner's next agent: rows keyed ``""``) starts a fresh pass; the shard bookkeeping table
  (``distributed.ops``) is dropped.

The result restores with ``MemoryEngine.loads`` and is checked there like any snapshot; the
state hashes of the re-sharded engines add up to the original's (``core.digest``).
Runtime complexity: O(total records) numpy plus O(agents) Python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import SnapshotInvalidError
from f09_memory.persistence import snapshot
from f09_memory.persistence.state import COLUMNS, STATE_KIND
from f09_memory.store.agent import AgentMemory

__all__ = ["OPS_TABLE", "merge_snapshots"]

OPS_TABLE = "distributed.ops"
"""The shard bookkeeping table (the last applied write); not carried over by a re-shard."""
_QUEUES = ("pending", "ready", "held", "late")


def _ends_split(blob: NDArray[np.uint8], ends: NDArray[np.int64]) -> list[bytes]:
    raw = blob.tobytes()
    out: list[bytes] = []
    start = 0
    for end in ends.tolist():
        out.append(raw[start:end])
        start = end
    return out


def _join(parts: list[bytes]) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    ends = (np.cumsum([len(b) for b in parts], dtype=np.int64) if parts
            else np.zeros(0, dtype=np.int64))
    return np.frombuffer(b"".join(parts), dtype=np.uint8).copy(), ends


class _Agent:
    """One agent's part of a snapshot."""

    __slots__ = ("cols", "entry", "ring", "texts", "vectors", "words")

    def __init__(self, entry: dict[str, Any], cols: dict[str, NDArray[Any]],
                 texts: list[bytes], ring: NDArray[np.int64], words: list[bytes],
                 vectors: NDArray[np.float32]) -> None:
        self.entry = entry
        self.cols = cols
        self.texts = texts
        self.ring = ring
        self.words = words
        self.vectors = vectors


def _agents(manifest: dict[str, Any], arrays: dict[str, NDArray[Any]],
            tag_map: NDArray[np.int64], keep: Callable[[str], bool] | None) -> list[_Agent]:
    texts = _ends_split(arrays["text"], arrays["textEnds"])
    words = _ends_split(arrays["words"], arrays["wordEnds"])
    out: list[_Agent] = []
    start = ring_at = word_at = vec_at = 0
    for a in manifest["agents"]:
        n, n_ring = int(a["count"]), int(a["ring"])
        n_words = sum(int(x) for x in a["vocabulary"])
        cols = {name: arrays[name][start:start + n] for name in COLUMNS}
        n_vec = int(cols["embedded"].sum())
        if keep is None or keep(str(a["agentId"])):
            cols["tagset"] = tag_map[cols["tagset"].astype(np.int64)].astype(
                cols["tagset"].dtype)
            out.append(_Agent(a, cols, texts[start:start + n],
                              arrays["ring"][ring_at:ring_at + n_ring],
                              words[word_at:word_at + n_words],
                              arrays["vectors"][vec_at:vec_at + n_vec]))
        start, ring_at, word_at, vec_at = (start + n, ring_at + n_ring, word_at + n_words,
                                           vec_at + n_vec)
    return out


def _tables(parts: Sequence[tuple[dict[str, Any], dict[str, NDArray[Any]]]],
            keep: Callable[[str], bool] | None
            ) -> tuple[dict[str, Any], dict[str, NDArray[Any]]]:
    metas: dict[str, Any] = {}
    arrays: dict[str, NDArray[Any]] = {}
    names = sorted({name for manifest, _ in parts for name in manifest.get("tables", {})})
    for name in names:
        if name == OPS_TABLE:
            continue
        prefix = f"table.{name}."
        rows: list[tuple[list[str], dict[str, Any]]] = []
        columns: list[str] = []
        used = False
        for manifest, arrs in parts:
            meta = manifest.get("tables", {}).get(name)
            if meta is None:
                continue
            used = used or bool(meta.get("used", True))
            cols = {k[len(prefix):]: v for k, v in arrs.items() if k.startswith(prefix)}
            columns = sorted(cols)
            for i, key in enumerate(meta["keys"]):
                if key[0] and (keep is None or keep(key[0])):
                    rows.append((key, {c: cols[c][i] for c in columns}))
        rows.sort(key=lambda r: r[0])
        metas[name] = {"keys": [k for k, _ in rows], "used": used}
        for c in columns:
            template = next(v for m, a in parts for k, v in a.items() if k == prefix + c)
            arrays[prefix + c] = np.array([vals[c] for _, vals in rows], dtype=template.dtype)
    return metas, arrays


def _summarizer(states: list[dict[str, Any]], keep: Callable[[str], bool] | None
                ) -> dict[str, Any]:
    def mine(agent: object) -> bool:
        return keep is None or keep(str(agent))

    out: dict[str, Any] = {"version": states[0]["version"], "counters": {}, "nextCheck": {}}
    for key in ("counters", "nextCheck"):
        merged = {a: v for s in states for a, v in s.get(key, {}).items() if mine(a)}
        out[key] = dict(sorted(merged.items()))
    for queue in _QUEUES:
        out[queue] = [entry for s in states for entry in s.get(queue, [])
                      if mine(entry.get("task", entry)["agentId"])]
    return out


def merge_snapshots(blobs: Sequence[bytes], keep: Callable[[str], bool] | None = None,
                    *, max_bytes: int = snapshot.DEFAULT_MAX_BYTES) -> bytes:
    """The snapshot of the agents ``keep`` selects from ``blobs`` (see the module docstring).

    Args:
        blobs: Snapshot bytes of engines sharing one config and seed, holding disjoint
            agents (a single engine's, or each shard's).
        keep: Which agents the result holds (``None``: all of them).
        max_bytes: Each input's size limit (``persistence.snapshot``).

    Returns:
        The snapshot bytes (``MemoryEngine.loads`` restores them).

    Raises:
        SnapshotInvalidError: An input is not a snapshot, they do not share a config and
            seed, hold an agent twice, or use the async embedding mode's state.
    """
    if not blobs:
        raise SnapshotInvalidError("no snapshots to merge", details={"field": "blobs"})
    parts = [snapshot.loads(bytes(b), f"<shard {i}>", max_bytes=max_bytes)
             for i, b in enumerate(blobs)]
    try:
        return _merge([(p.manifest, p.arrays) for p in parts], keep)
    except SnapshotInvalidError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise SnapshotInvalidError(
            f"the snapshots cannot be re-sharded: a part is malformed ({type(exc).__name__})",
            details={"field": "blobs"}) from exc


def _merge(parts: list[tuple[dict[str, Any], dict[str, NDArray[Any]]]],
           keep: Callable[[str], bool] | None) -> bytes:
    first = parts[0][0]
    for manifest, _ in parts:
        if manifest.get("kind") != STATE_KIND:
            raise SnapshotInvalidError("a part is not an f09-memory engine snapshot",
                                       details={"field": "blobs"})
        if manifest["config"] != first["config"] or manifest["seed"] != first["seed"]:
            raise SnapshotInvalidError("the snapshots do not share one config and seed: they "
                                       "are not the shards of one engine",
                                       details={"field": "blobs"})
        if manifest.get("embedJobs") or manifest.get("queryVectors") is not None:
            raise SnapshotInvalidError("a snapshot holds async embedding state, which "
                                       "re-sharding does not move; tick until the jobs are "
                                       "applied, then save", details={"field": "blobs"})
    tag_sets: list[list[str]] = []
    tag_ids: dict[tuple[str, ...], int] = {}
    agents: list[_Agent] = []
    for manifest, arrays in parts:
        local = manifest["tags"]
        remap = np.zeros(max(1, len(local)), dtype=np.int64)
        for i, tags in enumerate(local):
            key = tuple(tags)
            got = tag_ids.get(key)
            if got is None:
                got = tag_ids[key] = len(tag_sets)
                tag_sets.append(list(tags))
            remap[i] = got
        agents.extend(_agents(manifest, arrays, remap, keep))
    agents.sort(key=lambda a: str(a.entry["agentId"]))
    ids = [str(a.entry["agentId"]) for a in agents]
    if len(set(ids)) != len(ids):
        raise SnapshotInvalidError("two snapshots hold the same agent: they are not the "
                                   "shards of one engine", details={"field": "blobs"})
    arrays_out: dict[str, NDArray[Any]] = {}
    for name in COLUMNS:
        cols = [a.cols[name] for a in agents]
        arrays_out[name] = (np.concatenate(cols) if cols
                            else np.zeros(0, dtype=AgentMemory.column_dtype(name)))
    arrays_out["text"], arrays_out["textEnds"] = _join([t for a in agents for t in a.texts])
    arrays_out["words"], arrays_out["wordEnds"] = _join([w for a in agents for w in a.words])
    rings = [a.ring for a in agents]
    arrays_out["ring"] = np.concatenate(rings) if rings else np.zeros(0, dtype=np.int64)
    vectors = [a.vectors for a in agents if a.vectors.shape[0]]
    dims = {int(v.shape[1]) for v in vectors}
    dim = dims.pop() if len(dims) == 1 else 0
    arrays_out["vectors"] = (np.concatenate(vectors) if vectors and dim
                             else np.zeros((0, dim), dtype=np.float32))
    clock = max(int(m["clock"]) for m, _ in parts)
    manifest_out: dict[str, Any] = {
        "kind": STATE_KIND,
        "seed": first["seed"],
        "config": first["config"],
        "clock": clock,
        "pressure": first["pressure"],
        "tickCursor": 0,
        "compactionCursor": {"agentId": None, "layerPos": 0},
        "backlog": [0, 0],
        "summarizer": _summarizer([m["summarizer"] for m, _ in parts], keep),
        "embedderVersion": first["embedderVersion"],
        "embedJobs": [],
        "queryVectors": None,
        "tags": tag_sets,
        "agents": [a.entry for a in agents],
    }
    tables, table_arrays = _tables(parts, keep)
    if tables:
        manifest_out["tables"] = tables
        arrays_out.update(table_arrays)
    return snapshot.dumps(manifest_out, arrays_out)
