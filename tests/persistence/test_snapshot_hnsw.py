"""An engine snapshot whose HNSW graph was tampered with loads soundly or is refused.

``MemoryEngine.load`` of each tampered file runs in one child process (a crash in hnswlib
would kill it, not pytest): every case must print a clean refusal or a load after which
retrieval, a tick and the invariants work.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

import f09_memory
from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, bundle_hash
from f09_memory.errors import SnapshotInvalidError
from f09_memory.persistence import snapshot

CASES = 40
_GRAPH_ARRAYS = ("data_level0", "link_lists", "element_levels", "label_lookup_external",
                 "label_lookup_internal")
_GRAPH_SCALARS = ("cur_element_count", "max_elements", "enterpoint_node", "max_level",
                  "size_links_per_element", "max_M0", "offset_data")


def config() -> MemoryConfig:
    return MemoryConfig(episodic_max=600, semantic_preselect_threshold=100,
                        semantic_preselect_min_ratio=0,
                        exact_index_max=200, semantic_preselect_k=20, embedding_dim=16)


def request() -> RetrievalRequest:
    return RetrievalRequest(agent_id="a", purpose="reasoning", max_tokens=300,
                            strategy="semantic", query="boat on the river")


def build(path: Path) -> MemoryEngine:
    """One agent past ``exact_index_max``: an HNSW graph with deleted records."""
    engine = MemoryEngine(config(), seed=5)
    engine.ingest_many("a", [f"grain river boat {i % 17} sword {i % 5} day {i}"
                             for i in range(320)], now=0)
    engine.tick(1)
    engine.forget([f"a:{k:010d}" for k in range(0, 320, 9)])
    engine.save(path)
    return engine


def tamper(blob: bytes, case: int) -> bytes:
    rng = np.random.default_rng(500 + case)
    snap = snapshot.loads(blob)
    graph: dict[str, Any] = snap.manifest["agents"][0]["index"]["graph"]
    name = _GRAPH_ARRAYS[int(rng.integers(0, len(_GRAPH_ARRAYS)))]
    kind = case % 4
    if kind == 0:  # bit flips
        raw = graph[name].view(np.uint8)
        for _ in range(int(rng.integers(1, 6))):
            raw[int(rng.integers(0, raw.shape[0]))] ^= np.uint8(1 << int(rng.integers(0, 8)))
    elif kind == 1:  # truncation
        graph[name] = graph[name][: int(rng.integers(0, graph[name].shape[0]))].copy()
    elif kind == 2:  # a changed size or count
        field = _GRAPH_SCALARS[int(rng.integers(0, len(_GRAPH_SCALARS)))]
        graph[field] = int(rng.choice([graph[field] + 1, graph[field] - 1, 0, 2**31]))
    else:  # a forged neighbour id on level 0
        words = graph["data_level0"].view(np.uint32)
        row = int(rng.integers(0, graph["cur_element_count"]))
        words[row * (graph["size_data_per_element"] // 4) + 1] = int(rng.integers(0, 2**32))
    return snapshot.dumps(snap.manifest, snap.arrays)


def run_cases(source: Path, count: int) -> None:
    """Child process: load each tampered file and use the engine; print each outcome."""
    blob = source.read_bytes()
    target = source.with_name("tampered.f09")
    for case in range(count):
        print(f"case {case}", flush=True)
        target.write_bytes(tamper(blob, case))
        try:
            engine = MemoryEngine.load(target)
        except SnapshotInvalidError:
            print("refused", flush=True)
            continue
        engine.retrieve(request(), now=2)
        engine.ingest_many("a", [f"more {i}" for i in range(20)], now=2)
        engine.tick(3)
        engine.retrieve(request(), now=3)
        engine._check()
        print("loaded", flush=True)


def test_tampered_hnsw_graphs_in_engine_snapshots_never_crash(tmp_path: Path) -> None:
    source = tmp_path / "hnsw.f09"
    engine = build(source)
    loaded = MemoryEngine.load(source)  # the untouched file keeps its retrievals
    assert bundle_hash(engine.retrieve(request(), now=2)) == bundle_hash(
        loaded.retrieve(request(), now=2))
    root = str(Path(f09_memory.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    child = subprocess.run([sys.executable, str(Path(__file__)), str(source), str(CASES)],
                           capture_output=True, text=True, timeout=300, check=False, env=env)
    last = child.stdout.rsplit("case ", 1)[-1].split("\n", 1)[0]
    assert 0 == child.returncode, f"child died (code {child.returncode}) on case {last}: " \
                                  f"{child.stderr[-2000:]}"
    words = child.stdout.split()
    assert CASES == words.count("refused") + words.count("loaded")
    assert words.count("refused") >= CASES // 2


if __name__ == "__main__":
    run_cases(Path(sys.argv[1]), int(sys.argv[2]))


def test_a_loaded_engine_goes_on_exactly_like_one_never_saved(tmp_path: Path) -> None:
    """An agent past exact_index_max: after save/load, new records join the same graph."""
    straight = build(tmp_path / "straight.f09")
    loaded = MemoryEngine.load(tmp_path / "straight.f09")
    for engine in (straight, loaded):
        engine.ingest_many("a", [f"rope barrel harbour {i % 11} day {i}" for i in range(200)],
                           now=5)
        engine.tick(6)
    assert straight.state_hash() == loaded.state_hash()
    for query in ("boat on the river", "harbour rope", "sword day 3"):
        req = request().model_copy(update={"query": query})
        assert bundle_hash(straight.retrieve(req, now=7)) == bundle_hash(
            loaded.retrieve(req, now=7))
    straight.save(tmp_path / "a.f09")
    loaded.save(tmp_path / "b.f09")
    graphs = [snapshot.loads((tmp_path / name).read_bytes()).manifest["agents"][0]["index"]
              ["graph"] for name in ("a.f09", "b.f09")]
    assert graphs[0]["link_lists"].tobytes() == graphs[1]["link_lists"].tobytes()
    assert graphs[0]["element_levels"].tobytes() == graphs[1]["element_levels"].tobytes()
