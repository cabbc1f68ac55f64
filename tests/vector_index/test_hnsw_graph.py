"""Damaged or forged HNSW graphs are refused before hnswlib sees them, never a crash.

hnswlib follows a restored graph's ids without bound checks, so a bad graph could kill the
process: the seeded tampering below runs in a child process (one per test, all cases in
it), which reports each case; a crash shows as the child dying on a named case.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import f09_memory
from f09_memory.errors import ErrorCode, InputInvalidError
from f09_memory.vector_index import HnswIndex
from f09_memory.vector_index.hnsw_graph import GRAPH_FIELDS, checked_graph

DIM = 8
CASES = 240
_SCALARS = ("cur_element_count", "max_elements", "enterpoint_node", "max_level", "M", "max_M",
            "max_M0", "size_links_per_element", "size_data_per_element", "label_offset",
            "offset_data", "offset_level0", "ef_construction", "seed", "dim", "ef")
_ARRAYS = ("data_level0", "link_lists", "element_levels", "label_lookup_external",
           "label_lookup_internal")


def _index() -> tuple[HnswIndex, np.ndarray, np.random.Generator]:
    """A small graph with several levels, deletions and an in-place update."""
    rng = np.random.default_rng(7)
    points = rng.standard_normal((400, DIM)).astype(np.float32)
    keys = np.arange(400, dtype=np.int64) * 3
    index = HnswIndex(DIM, m=4, ef_construction=32, ef=16, seed=11, initial_capacity=64)
    index.add(keys[:250], points[:250])
    index.remove(keys[:250:7])
    index.add(keys[250:], points[250:])
    index.add(keys[10:12], points[:2])
    return index, keys, rng


def _flip(arr: np.ndarray, rng: np.random.Generator, bits: int) -> np.ndarray:
    raw = bytearray(arr.tobytes())
    if raw:
        for _ in range(bits):
            pos = int(rng.integers(0, len(raw)))
            raw[pos] ^= 1 << int(rng.integers(0, 8))
    return np.frombuffer(bytes(raw), dtype=arr.dtype).copy()


def tamper(state: dict[str, Any], case: int) -> dict[str, Any]:
    """A seeded damaged copy of ``state`` (bit flips, truncation, changed sizes or counts)."""
    rng = np.random.default_rng(1000 + case)
    graph = dict(state["graph"])
    out = dict(state, graph=graph)
    kind = case % 8
    name = _ARRAYS[int(rng.integers(0, len(_ARRAYS)))]
    if kind in (0, 1):  # bit flips, mostly in the lists
        target = "data_level0" if kind == 0 else name
        graph[target] = _flip(graph[target], rng, int(rng.integers(1, 9)))
    elif kind == 2:  # truncation
        arr = graph[name]
        graph[name] = arr[: int(rng.integers(0, max(1, arr.shape[0])))].copy()
    elif kind == 3:  # growth
        extra = rng.integers(-128, 127, int(rng.integers(1, 4096)))
        graph[name] = np.concatenate([graph[name], extra.astype(graph[name].dtype)])
    elif kind == 4:  # a scalar count or size changed
        field = _SCALARS[int(rng.integers(0, len(_SCALARS)))]
        value = graph[field]
        graph[field] = int(rng.choice([value + 1, value - 1, 0, 2**32 - 1, 2**31, 10**6,
                                       value * 2]))
    elif kind == 5:  # a neighbour id or a level forged in place
        if rng.random() < 0.5:
            data = graph["data_level0"].copy().view(np.uint32)
            row = int(rng.integers(0, graph["cur_element_count"]))
            words = graph["size_data_per_element"] // 4
            data[row * words + int(rng.integers(0, 9))] = int(rng.integers(0, 2**32))
            graph["data_level0"] = data.view(np.int8)
        else:
            levels = graph["element_levels"].copy()
            levels[int(rng.integers(0, levels.shape[0]))] = int(rng.integers(-3, 40))
            graph["element_levels"] = levels
    elif kind == 6:  # a field of the wrong type, or missing
        field = GRAPH_FIELDS[int(rng.integers(0, len(GRAPH_FIELDS)))]
        if rng.random() < 0.3:
            del graph[field]
        else:
            graph[field] = [None, "x", 1.5, -1, np.zeros(3, np.float64)][int(rng.integers(0, 5))]
    else:  # the live / deleted key lists disagree with the graph
        live = out["live"].copy()
        if live.shape[0]:
            live[int(rng.integers(0, live.shape[0]))] += int(rng.integers(1, 5))
        out["live"] = live if rng.random() < 0.7 else live[:-1]
    return out


def exercise(index: HnswIndex, rng: np.random.Generator) -> None:
    """Search, filter, add, remove and read back: what a loaded index will be asked."""
    keys = index.keys()
    for query in rng.standard_normal((4, DIM)).astype(np.float32):
        index.search(query, 10)
        index.search(query, 5, allowed=keys[::2])
    index.add(np.arange(10**6, 10**6 + 50, dtype=np.int64),
              rng.standard_normal((50, DIM)).astype(np.float32))
    index.remove(keys[:5])
    index.vectors_for(index.keys()[:20])
    index._check()


def run_cases(start: int, stop: int) -> None:
    """Child process: load each tampered state, print its outcome (a crash ends the run)."""
    base, _, rng = _index()
    state = base.get_state()
    for case in range(start, stop):
        print(f"case {case}", flush=True)
        index = HnswIndex(DIM)
        try:
            index.set_state(tamper(state, case))
        except InputInvalidError:
            print("refused", flush=True)
            continue
        exercise(index, rng)
        print("loaded", flush=True)


def child_env() -> dict[str, str]:
    """The environment of a child process that imports this same ``f09_memory``."""
    root = str(Path(f09_memory.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not path else root + os.pathsep + path}


def test_tampered_graphs_are_refused_or_load_soundly_in_a_child_process() -> None:
    child = subprocess.run(
        [sys.executable, str(Path(__file__)), "0", str(CASES)], capture_output=True,
        text=True, timeout=240, check=False, env=child_env())
    lines = child.stdout.split()
    last = child.stdout.rsplit("case ", 1)[-1].split("\n", 1)[0]
    assert 0 == child.returncode, f"child died (code {child.returncode}) on case {last}: " \
                                  f"{child.stderr[-2000:]}"
    assert CASES == child.stdout.count("case ")
    refused = lines.count("refused")
    assert CASES == refused + lines.count("loaded")
    assert refused >= CASES * 3 // 4  # most damage is caught; flips in vectors may load


def test_the_untampered_graph_passes_and_keeps_its_capacity() -> None:
    index, _, rng = _index()
    state = index.get_state()
    restored = HnswIndex(DIM)
    restored.set_state(state)
    assert index.capacity == restored.capacity
    exercise(restored, rng)


@pytest.mark.parametrize(("change", "needle"), [
    (lambda g: g.update(enterpoint_node=g["cur_element_count"]), "entry point"),
    (lambda g: g.update(max_level=g["max_level"] + 1), "entry point"),
    (lambda g: g.update(element_levels=g["element_levels"][:-1]), "element_levels"),
    (lambda g: g.update(link_lists=g["link_lists"][:-4]), "link_lists"),
    (lambda g: g.update(M=5), "M, max_M"),
    (lambda g: g.update(has_deletions=False), "has_deletions"),
    (lambda g: g.update(label_lookup_internal=np.zeros_like(g["label_lookup_internal"])),
     "permutation"),
])
def test_each_inconsistency_is_named(change: Any, needle: str) -> None:
    index, _, _ = _index()
    state = index.get_state()
    change(state["graph"])
    with pytest.raises(InputInvalidError) as info:
        HnswIndex(DIM).set_state(state)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert needle in info.value.message


def test_a_neighbour_on_a_level_it_does_not_reach_is_refused() -> None:
    index, _, _ = _index()
    state = index.get_state()
    graph = state["graph"]
    levels = graph["element_levels"]
    low = int(np.flatnonzero(levels[: graph["cur_element_count"]] == 0)[0])
    links = graph["link_lists"].copy().view(np.uint32)
    links[0], links[1] = 1, low  # the first upper list: one neighbour, of level 0
    graph["link_lists"] = links.view(np.int8)
    with pytest.raises(InputInvalidError, match="does not reach"):
        HnswIndex(DIM).set_state(state)


def test_an_oversized_allocation_is_trimmed_to_the_data() -> None:
    index, _, rng = _index()
    state = index.get_state()
    graph = state["graph"]
    graph["max_elements"] = 50_000
    graph["element_levels"] = np.concatenate(
        [graph["element_levels"], np.zeros(50_000 - graph["element_levels"].shape[0],
                                           np.int32)])
    checked = checked_graph(graph, dim=DIM, m=4, ef_construction=32, seed=11,
                            live=state["live"].tolist(), deleted=state["deleted"].tolist())
    assert 1024 == checked["max_elements"] == checked["element_levels"].shape[0]
    restored = HnswIndex(DIM)
    restored.set_state(state)
    exercise(restored, rng)


if __name__ == "__main__":
    run_cases(int(sys.argv[1]), int(sys.argv[2]))
