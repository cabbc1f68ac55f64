"""Checks of a serialized hnswlib graph before hnswlib is given it.

hnswlib (0.8, ``Index.__setstate__``) copies the arrays of a serialized graph with
``memcpy`` and later follows its neighbour ids, levels and entry point without any bound
check: a graph read from a damaged or forged file can make it read or write out of bounds
and kill the process. :func:`checked_graph` verifies every field hnswlib trusts, with
vectorized numpy passes (a few milliseconds for 20k elements), and raises
:class:`~f09_memory.errors.InputInvalidError` naming the first violation.

The layout it checks (hnswlib's ``HierarchicalNSW``; ``tableint`` and the list header are
4 bytes, labels 8): ``data_level0`` holds, per element in internal-id order, a level-0 list
(a header whose low 16 bits count the neighbours and whose byte 2 is the deleted mark, then
``2M`` neighbour ids), the vector (``dim`` float32) and the label; ``link_lists`` holds, for
each element of level ``L > 0``, ``L`` upper-level lists (header, then ``M`` ids);
``element_levels`` has one level per allocated element; ``label_lookup_*`` map labels to
internal ids. Rebuilding the graph from the vectors instead would cost seconds per 10k
vectors and would not give the same graph (deletions and in-place updates during
construction change it), so the saved graph is checked and kept.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import InputInvalidError

__all__ = ["GRAPH_FIELDS", "checked_graph"]

GRAPH_FIELDS = (
    "ser_version", "space", "dim", "index_inited", "ep_added", "normalize", "num_threads",
    "seed", "offset_level0", "max_elements", "cur_element_count", "size_data_per_element",
    "label_offset", "offset_data", "max_level", "enterpoint_node", "max_M", "max_M0", "M",
    "mult", "ef_construction", "ef", "has_deletions", "size_links_per_element",
    "allow_replace_deleted", "label_lookup_external", "label_lookup_internal",
    "element_levels", "data_level0", "link_lists",
)
"""The keys of hnswlib 0.8's serialized index (``Index.__getstate__()[0]``)."""
_ARRAYS = {"label_lookup_external": np.uint64, "label_lookup_internal": np.uint32,
           "element_levels": np.int32, "data_level0": np.int8, "link_lists": np.int8}
_NO_NODE = 2**32 - 1  # hnswlib's entry point of an empty graph (tableint -1)
_MAX_LEVEL = 64  # levels are -ln(U)/ln(M): above ~20 is impossible for any M >= 2
_INT_MAX = 2**63 - 1
_DELETED = 1  # byte 2 of a level-0 header


def _bad(problem: str) -> InputInvalidError:
    return InputInvalidError(
        f"the HNSW graph is invalid: {problem}; load a state written by get_state()",
        details={"problem": problem})


def _int(graph: dict[str, Any], name: str, low: int = 0, high: int = _INT_MAX) -> int:
    value = graph[name]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _bad(f"{name} is not an integer in [{low}, {high}]")
    return value


def _is_ip(space: object) -> bool:
    return isinstance(space, str) and space == "ip"


def _flag(graph: dict[str, Any], name: str) -> bool:
    value = graph[name]
    if not isinstance(value, bool):
        raise _bad(f"{name} is not a boolean")
    return value


def _array(graph: dict[str, Any], name: str, length: int | None) -> NDArray[Any]:
    value = graph[name]
    if (not isinstance(value, np.ndarray) or value.dtype != np.dtype(_ARRAYS[name])
            or value.ndim != 1):
        raise _bad(f"{name} is not a 1-D {np.dtype(_ARRAYS[name]).name} array")
    if length is not None and value.shape[0] != length:
        raise _bad(f"{name} has {value.shape[0]} entries where {length} are expected")
    return np.ascontiguousarray(value)


def _check_layout(graph: dict[str, Any], dim: int, m: int, ef_construction: int,
                  seed: int) -> None:
    """The scalar fields: what this index was built with and hnswlib's derived sizes."""
    if _int(graph, "ser_version") != 1 or not _is_ip(graph["space"]) or _int(graph, "dim") != dim:
        raise _bad(f"it is not an inner-product graph of dim {dim} (serialization 1)")
    if not _flag(graph, "index_inited") or _flag(graph, "normalize") or _flag(
            graph, "allow_replace_deleted"):
        raise _bad("index_inited, normalize or allow_replace_deleted differ from this index's")
    _int(graph, "num_threads", -(2**31), 2**31 - 1)
    _int(graph, "ef")
    if _int(graph, "M", 2, 10_000) != m or _int(graph, "max_M") != m or _int(
            graph, "max_M0") != 2 * m:
        raise _bad(f"M, max_M and max_M0 are not {m}, {m} and {2 * m}")
    if _int(graph, "ef_construction") != max(ef_construction, m) or _int(graph, "seed") != seed:
        raise _bad("ef_construction or seed differ from this index's")
    mult = graph["mult"]
    if not isinstance(mult, float) or mult != 1.0 / math.log(1.0 * m):
        raise _bad("mult is not 1 / ln(M)")
    level0 = 4 * 2 * m + 4
    expected = {"offset_level0": 0, "offset_data": level0, "label_offset": level0 + 4 * dim,
                "size_data_per_element": level0 + 4 * dim + 8,
                "size_links_per_element": 4 * m + 4}
    for name, value in expected.items():
        if _int(graph, name) != value:
            raise _bad(f"{name} is not {value} (hnswlib's layout for M={m}, dim={dim})")


def _check_level0(data: NDArray[np.int8], count: int, dim: int, m: int) -> tuple[
        NDArray[np.uint64], NDArray[np.bool_]]:
    """Level-0 lists, vectors and labels of the ``count`` elements: (labels, deleted marks)."""
    words = (4 * 2 * m + 4 + 4 * dim + 8) // 4
    rows = data.view(np.uint32).reshape(count, words)
    header = rows[:, 0]
    sizes = (header & 0xFFFF).astype(np.int64)
    marks = (header >> 16) & 0xFF
    if (sizes > 2 * m).any():
        raise _bad(f"a level-0 list holds more than {2 * m} neighbours")
    if ((marks & ~np.uint32(_DELETED)) != 0).any() or ((header >> 24) != 0).any():
        raise _bad("a level-0 list header has unknown flag bits")
    links = rows[:, 1:1 + 2 * m]
    used = np.arange(2 * m)[None, :] < sizes[:, None]
    if (links[used] >= count).any():
        raise _bad("a level-0 neighbour id is not an element of the graph")
    vectors = rows[:, 1 + 2 * m:1 + 2 * m + dim].view(np.float32)
    norms = np.einsum("ij,ij->i", vectors, vectors)  # NaN/inf in a row makes its sum so
    if not np.isfinite(norms).all():
        raise _bad("a stored vector has NaN or infinite values")
    label_words = rows[:, 1 + 2 * m + dim:].astype(np.uint64)
    labels = label_words[:, 0] | (label_words[:, 1] << np.uint64(32))
    return labels, marks == _DELETED


def _check_upper(links: NDArray[np.int8], levels: NDArray[np.int32], m: int) -> None:
    """Upper-level lists: sizes, ids of elements, and neighbours that reach the level."""
    count = int(levels.shape[0])
    blocks = int(levels.sum(dtype=np.int64))
    if links.shape[0] != blocks * (4 * m + 4):
        raise _bad(f"link_lists has {links.shape[0]} bytes where the levels need "
                   f"{blocks * (4 * m + 4)}")
    if blocks == 0:
        return
    rows = links.view(np.uint32).reshape(blocks, m + 1)
    sizes = (rows[:, 0] & 0xFFFF).astype(np.int64)
    if (sizes > m).any() or ((rows[:, 0] >> 16) != 0).any():
        raise _bad(f"an upper-level list holds more than {m} neighbours or flag bits")
    starts = np.cumsum(levels, dtype=np.int64) - levels
    level_of = np.arange(blocks, dtype=np.int64) - np.repeat(starts, levels) + 1
    used = np.arange(m)[None, :] < sizes[:, None]
    ids = rows[:, 1:][used].astype(np.int64)
    if (ids >= count).any():
        raise _bad("an upper-level neighbour id is not an element of the graph")
    need = np.broadcast_to(level_of[:, None], used.shape)[used]
    if (levels[ids] < need).any():
        raise _bad("an upper-level neighbour does not reach that level")


def checked_graph(graph: dict[str, Any], *, dim: int, m: int, ef_construction: int,
                  seed: int, live: list[int], deleted: list[int]) -> dict[str, Any]:
    """Return ``graph`` ready for ``hnswlib.Index.__setstate__`` if it is a sound graph.

    Checks the layout against this index's ``dim``/``m``/``ef_construction``/``seed``, the
    array sizes against the element counts, every neighbour id (an element, at a level
    it reaches), the entry point and top level, the labels (a bijection with the internal
    ids, equal to the labels stored with the vectors) and the deleted marks (exactly the
    ``deleted`` keys; the others are ``live``). An allocation larger than twice the
    elements (and above 1024) is trimmed, so memory follows the data, not a stated size.
    Runtime complexity: O(elements * (M + dim)), numpy-bound.

    Args:
        graph: ``HnswIndex.get_state()["graph"]``.
        dim: The index dimension.
        m: The index's graph degree.
        ef_construction: The index's build-time list size.
        seed: The index's level-generator seed.
        live: The live keys.
        deleted: The keys marked deleted.

    Returns:
        A new dict (the arrays contiguous, ``max_elements`` possibly trimmed).

    Raises:
        InputInvalidError: A field is missing, of the wrong type, or inconsistent (the
            message names it).

    """
    if not isinstance(graph, dict) or set(GRAPH_FIELDS) - set(graph):
        raise _bad("fields of hnswlib's serialized index are missing")
    out = {name: graph[name] for name in GRAPH_FIELDS}
    _check_layout(out, dim, m, ef_construction, seed)
    count = _int(out, "cur_element_count", 0, 2**32 - 2)
    capacity = _int(out, "max_elements", max(1, count), 2**32 - 1)
    levels = _array(out, "element_levels", capacity)
    data = _array(out, "data_level0", count * (4 * 2 * m + 4 + 4 * dim + 8))
    external = _array(out, "label_lookup_external", count)
    internal = _array(out, "label_lookup_internal", count)
    links = _array(out, "link_lists", None)
    if (levels < 0).any() or (levels > _MAX_LEVEL).any() or levels[count:].any():
        raise _bad(f"element levels are not in [0, {_MAX_LEVEL}] (0 past the elements)")
    used = levels[:count]
    _check_upper(links, used, m)
    has_entry = _flag(out, "ep_added")
    entry = _int(out, "enterpoint_node", 0, _NO_NODE)
    top = _int(out, "max_level", -1, _MAX_LEVEL)
    if count == 0:
        if entry != _NO_NODE or top != -1:
            raise _bad("an empty graph has an entry point or a top level")
    elif not has_entry or entry >= count or top != int(used[entry]) or top < int(used.max()):
        raise _bad("the entry point is not an element on the top level")
    labels, marks = _check_level0(data, count, dim, m)
    if (external > np.uint64(_INT_MAX)).any():
        raise _bad("a label is not a non-negative int64 key")
    if not np.array_equal(np.sort(internal), np.arange(count, dtype=np.uint32)):
        raise _bad("label_lookup_internal is not a permutation of the element ids")
    if not np.array_equal(labels[internal], external):
        raise _bad("label_lookup disagrees with the labels stored with the vectors")
    if np.unique(external).shape[0] != count:
        raise _bad("a label names two elements")
    if _flag(out, "has_deletions") != bool(marks.any()):
        raise _bad("has_deletions disagrees with the deleted marks")
    marked = np.sort(labels[marks]).astype(np.int64)
    unmarked = np.sort(labels[~marks]).astype(np.int64)
    if marked.tolist() != sorted(deleted) or unmarked.tolist() != sorted(live):
        raise _bad("the live and deleted keys disagree with the graph's labels and marks")
    trimmed = max(1024, 2 * count)
    if capacity > trimmed:
        out["max_elements"], levels = trimmed, levels[:trimmed]
    out.update(element_levels=levels, data_level0=data, label_lookup_external=external,
               label_lookup_internal=internal, link_lists=links)
    return out
