"""HnswIndex: approximate cosine search on hnswlib, built deterministically.

Used for agents with more than ``MemoryConfig.exact_index_max`` vectors. Vectors are stored
L2-normalized in hnswlib's inner-product space, so ``similarity = 1 - distance`` is the
cosine.

Deterministic construction: one thread (``set_num_threads(1)`` and ``num_threads=1`` on every
call), a fixed ``random_seed`` for the level generator, and insertion in ascending key order
within each :meth:`HnswIndex.add` call. Removal marks keys deleted (hnswlib keeps their slots;
a removed key that is added again is un-deleted and its vector updated in place). Capacity
doubles (``resize_index``) when an add would pass it.

Search asks hnswlib for ``min(k, live candidates)`` neighbours (with a ``filter`` callable
when ``allowed`` is given), then orders them like :class:`~f09_memory.vector_index.exact.
ExactIndex`: quantized similarity descending, then key ascending. When ``allowed`` leaves at
most ``exact_filter_max`` live keys, those few are scored exactly instead (faster than a
filtered graph walk, and never misses); if hnswlib cannot return enough neighbours (a
filter or many deletions cut the graph), the search also falls back to an exact scan of the
candidates.

Reproducibility: HNSW results (graph, neighbours, similarities) are reproducible run to run
on the same hnswlib build and CPU (its SIMD distance kernels depend on the instruction set);
:class:`~f09_memory.vector_index.exact.ExactIndex` has no approximation and is reproducible
everywhere up to the last float32 bit of a dot product.

A saved and restored index (:meth:`HnswIndex.get_state` / :meth:`HnswIndex.set_state`)
resumes hnswlib's level generator where it stood, so elements added after a save/load get
the levels, and the graph the neighbours, of a run that was never saved.

Keys are hnswlib labels, which are unsigned: keys must be >= 0.
"""

from __future__ import annotations

from typing import Any

import hnswlib
import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import ConfigInvalidError, InputInvalidError, RecordNotFoundError
from f09_memory.vector_index.checks import as_keys, as_query, as_vectors, check_k
from f09_memory.vector_index.hnsw_graph import checked_graph
from f09_memory.vector_index.kernels import similarities
from f09_memory.vector_index.ordering import DEFAULT_QUANTUM, check_quantum, rank_top_k

__all__ = ["HnswIndex"]

_TOO_FEW = "contiguous 2D array"  # hnswlib's message when it found fewer than k neighbours
_MINSTD_M = 2**31 - 1
_MINSTD_A = 16807
_ENGINE_CALLS_PER_LEVEL = 2


def _resumed_seed(seed: int, drawn: int) -> int:
    """The seed that starts hnswlib's level generator where it stood after ``drawn`` draws.

    hnswlib draws one level per element it allocates, from a ``std::default_random_engine``
    (``minstd_rand0``: ``x' = 16807 x mod (2**31 - 1)``, seeded with ``seed``) through
    ``uniform_real_distribution<double>``, which calls the engine twice per draw. A restored
    index is seeded anew, so without this a save/load in the middle of a run would give the
    elements added afterwards other levels (another graph, other neighbours) than a run
    without it. Seeding the restored index with the engine's state after ``2 * drawn`` calls
    continues the sequence exactly. (hnswlib's second generator, for updates in place, never
    changes a result: its draws are compared with a probability of 1.)
    """
    start = seed % _MINSTD_M or 1
    return pow(_MINSTD_A, _ENGINE_CALLS_PER_LEVEL * drawn, _MINSTD_M) * start % _MINSTD_M


def _check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigInvalidError(
            f"HnswIndex {name} must be an int >= {low}, got {value!r}",
            details={"field": name, "value": repr(value)},
        )
    return value


class HnswIndex:
    """Approximate cosine nearest-neighbour search on an HNSW graph (implements ``VectorIndex``).

    Args:
        dim: Vector dimension (>= 1).
        m: Graph degree ``M`` (``MemoryConfig.hnsw_m``).
        ef_construction: Build-time candidate list size (``MemoryConfig.hnsw_ef_construction``).
        ef: Query-time candidate list size (``MemoryConfig.hnsw_ef``); settable later.
        seed: Seed of hnswlib's level generator.
        initial_capacity: Elements allocated up front; doubles when full.
        quantum: Similarity quantum used for ordering (``MemoryConfig.score_quantum``).
        exact_filter_max: An ``allowed`` filter leaving at most this many live keys is
            answered by an exact scan of those keys.

    Raises:
        ConfigInvalidError: An argument is out of range.

    """

    def __init__(
        self,
        dim: int,
        *,
        m: int = 16,
        ef_construction: int = 200,
        ef: int = 64,
        seed: int = 0,
        initial_capacity: int = 1024,
        quantum: int = DEFAULT_QUANTUM,
        exact_filter_max: int = 1024,
    ) -> None:
        self._dim = _check_int("dim", dim, 1)
        self._m = _check_int("m", m, 2)
        self._ef_construction = _check_int("ef_construction", ef_construction, 1)
        self._ef = _check_int("ef", ef, 1)
        self._seed = _check_int("seed", seed, 0)
        capacity = _check_int("initial_capacity", initial_capacity, 1)
        self._quantum = check_quantum(quantum)
        self._exact_filter_max = _check_int("exact_filter_max", exact_filter_max, 0)
        index = hnswlib.Index(space="ip", dim=self._dim)
        index.init_index(
            max_elements=capacity,
            M=self._m,
            ef_construction=self._ef_construction,
            random_seed=self._seed,
            allow_replace_deleted=False,
        )
        self._index: Any = index
        self._configure()
        self._live: set[int] = set()
        self._deleted: set[int] = set()

    def _configure(self) -> None:
        self._index.set_num_threads(1)
        self._index.set_ef(self._ef)

    # --- properties -------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._dim

    @property
    def m(self) -> int:
        """Graph degree ``M``."""
        return self._m

    @property
    def ef_construction(self) -> int:
        """Build-time candidate list size."""
        return self._ef_construction

    @property
    def seed(self) -> int:
        """Seed of the level generator."""
        return self._seed

    @property
    def quantum(self) -> int:
        """Similarity quantum used for ordering."""
        return self._quantum

    @property
    def ef(self) -> int:
        """Query-time candidate list size (higher: better recall, slower search)."""
        return self._ef

    @ef.setter
    def ef(self, value: int) -> None:
        self._ef = _check_int("ef", value, 1)
        self._index.set_ef(self._ef)

    @property
    def capacity(self) -> int:
        """Elements allocated in the graph (live plus deleted slots plus free room)."""
        return int(self._index.get_max_elements())

    @property
    def deleted_count(self) -> int:
        """Number of keys marked deleted (their slots stay allocated)."""
        return len(self._deleted)

    def __len__(self) -> int:
        """Return the number of live vectors."""
        return len(self._live)

    def __contains__(self, key: object) -> bool:
        """Tell whether ``key`` has a live vector."""
        if isinstance(key, bool) or not isinstance(key, int | np.integer):
            return False
        return int(key) in self._live

    def keys(self) -> NDArray[np.int64]:
        """Return the live keys in ascending order.

        Returns:
            A new int64 array.

        """
        return np.array(sorted(self._live), dtype=np.int64)

    # --- mutation ---------------------------------------------------------------------------
    def add(self, keys: NDArray[np.int64], vectors: NDArray[np.float32]) -> None:
        """Insert or replace vectors under ``keys`` (keys must be >= 0).

        The batch is inserted in ascending key order (a key repeated in the call keeps its
        last vector). A live key gets its vector updated in place; a removed key is
        un-deleted and updated. Runtime complexity: ``O(n * ef_construction * log N)``.

        Args:
            keys: int64 keys >= 0, one per row.
            vectors: ``(len(keys), dim)`` finite float array (stored normalized).

        Raises:
            InputInvalidError: Bad keys, wrong shape, or non-finite values (nothing changes).

        """
        k = as_keys(keys, non_negative=True)
        v = as_vectors(vectors, int(k.shape[0]), self._dim)
        if k.shape[0] == 0:
            return
        uniq, first_in_reversed = np.unique(k[::-1], return_index=True)
        positions = (k.shape[0] - 1) - first_in_reversed
        labels = uniq.tolist()
        unseen = sum(1 for key in labels if key not in self._live and key not in self._deleted)
        needed = int(self._index.element_count) + unseen
        capacity = self.capacity
        if needed > capacity:
            while capacity < needed:
                capacity *= 2
            self._index.resize_index(capacity)
        try:
            self._index.add_items(
                np.ascontiguousarray(v[positions]), uniq.astype(np.uint64), num_threads=1
            )
        except RuntimeError as exc:
            raise InputInvalidError(
                f"hnswlib rejected the vectors: {exc}", details={"count": len(labels)}
            ) from exc
        self._live.update(labels)
        self._deleted.difference_update(labels)

    def remove(self, keys: NDArray[np.int64]) -> None:
        """Mark the vectors of ``keys`` deleted; unknown keys are ignored.

        Deleted keys are never returned by :meth:`search`. Runtime complexity: ``O(n)``.

        Args:
            keys: int64 keys.

        Raises:
            InputInvalidError: ``keys`` is not a 1-D integer array (nothing changes).

        """
        for key in np.unique(as_keys(keys)).tolist():
            if key in self._live:
                self._index.mark_deleted(key)
                self._live.remove(key)
                self._deleted.add(key)

    # --- queries ----------------------------------------------------------------------------
    def _exact(
        self, candidates: list[int], q: NDArray[np.float32], k: int
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        if not candidates:
            return rank_top_k(np.zeros(0, np.int64), np.zeros(0, np.float32), k, self._quantum)
        vectors = np.asarray(self._index.get_items(candidates), dtype=np.float32)
        keys = np.asarray(candidates, dtype=np.int64)
        return rank_top_k(keys, similarities(vectors, q), k, self._quantum)

    def search(
        self,
        query: NDArray[np.float32],
        k: int,
        allowed: NDArray[np.int64] | None = None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Return about the ``k`` live keys most cosine-similar to ``query``.

        Runtime complexity: ``O(ef * log N)`` graph search (exact ``O(a * dim)`` when
        ``allowed`` leaves ``a <= exact_filter_max`` keys).

        Args:
            query: ``(dim,)`` or ``(1, dim)`` finite vector (normalized here).
            k: Most results (>= 0).
            allowed: If given, only these keys are candidates (unknown keys are ignored).

        Returns:
            ``(keys, sims)``: int64 keys and float32 cosine similarities, ``min(k,
            candidates)`` long, ordered by quantized similarity desc, then key asc.

        Raises:
            InputInvalidError: Wrong query shape, non-finite query, bad ``k`` or ``allowed``,
                or hnswlib rejected the query.

        """
        q = as_query(query, self._dim)
        top = check_k(k)
        live = self._live
        candidates: list[int] | None = None
        filter_fn = None
        if allowed is None:
            count = len(live)
        else:
            candidates = [key for key in np.unique(as_keys(allowed)).tolist() if key in live]
            count = len(candidates)
            if count <= self._exact_filter_max:
                return self._exact(candidates, q, top)
            filter_fn = frozenset(candidates).__contains__
        want = min(top, count)
        if want == 0:
            return self._exact([], q, 0)
        try:
            labels, distances = self._index.knn_query(
                q[None, :], k=want, num_threads=1, filter=filter_fn
            )
        except RuntimeError as exc:
            if _TOO_FEW not in str(exc):
                raise InputInvalidError(
                    f"hnswlib rejected the query: {exc}", details={"k": want}
                ) from exc
            return self._exact(candidates if candidates is not None else sorted(live), q, want)
        keys = np.asarray(labels[0], dtype=np.int64)
        sims = (1.0 - np.asarray(distances[0], dtype=np.float32)).astype(np.float32)
        return rank_top_k(keys, sims, want, self._quantum)

    def vectors_for(self, keys: NDArray[np.int64]) -> NDArray[np.float32]:
        """Return the stored (unit-length) vectors of ``keys``, in the order given.

        Args:
            keys: int64 keys, all live.

        Returns:
            A new ``(len(keys), dim)`` float32 array.

        Raises:
            InputInvalidError: ``keys`` is not a 1-D integer array.
            RecordNotFoundError: A key has no live vector (the message names it).

        """
        wanted = as_keys(keys).tolist()
        for key in wanted:
            if key not in self._live:
                raise RecordNotFoundError(
                    f"key {key} has no vector in this index; add it first",
                    details={"key": key},
                )
        if not wanted:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.asarray(self._index.get_items(wanted), dtype=np.float32)

    # --- state ------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """Return the index as plain values and arrays (copies), graph included.

        The graph is hnswlib's own serialized form (a dict of ints, strings and numpy
        arrays), so :meth:`set_state` restores an index that answers identically (it checks
        the graph before hnswlib, which trusts it, sees it).

        Returns:
            ``{"kind": "hnsw", "dim", "m", "ef_construction", "ef", "seed", "quantum",
            "exact_filter_max", "live": int64[], "deleted": int64[], "graph": dict}``.

        """
        (graph,) = self._index.__getstate__()
        graph["seed"] = self._seed  # a restored index runs on a resumed seed (set_state)
        return {
            "kind": "hnsw",
            "dim": self._dim,
            "m": self._m,
            "ef_construction": self._ef_construction,
            "ef": self._ef,
            "seed": self._seed,
            "quantum": self._quantum,
            "exact_filter_max": self._exact_filter_max,
            "live": self.keys(),
            "deleted": np.array(sorted(self._deleted), dtype=np.int64),
            "graph": {
                name: value.copy() if isinstance(value, np.ndarray) else value
                for name, value in graph.items()
            },
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Replace the contents with a state from :meth:`get_state`.

        The graph is checked field by field before hnswlib sees it
        (:func:`~f09_memory.vector_index.hnsw_graph.checked_graph`: sizes, neighbour ids,
        levels, entry point, labels, deleted marks, finite vectors), so a damaged or forged
        state is refused instead of crashing the process. Runtime complexity:
        O(elements * (M + dim)).

        Args:
            state: The state mapping.

        Raises:
            InputInvalidError: The state is malformed, of another kind or of another ``dim``,
                or its graph is inconsistent (nothing changes).

        """
        try:
            kind, dim, graph = state["kind"], state["dim"], state["graph"]
            settings = {name: state[name] for name in (
                "m", "ef_construction", "ef", "seed", "quantum", "exact_filter_max")}
            live = as_keys(state["live"], non_negative=True).tolist()
            deleted = as_keys(state["deleted"], non_negative=True).tolist()
        except (KeyError, TypeError, ValueError) as exc:
            raise InputInvalidError(
                "not an HnswIndex state: expected the mapping returned by get_state()",
                details={"type": type(state).__name__},
            ) from exc
        if not (isinstance(kind, str) and kind == "hnsw" and type(dim) is int
                and dim == self._dim and isinstance(graph, dict)):
            raise InputInvalidError(
                f"state is for a {kind!r:.20} index of dim {dim!r:.20}; this is an hnsw index "
                f"of dim {self._dim}",
                details={"kind": repr(kind)[:20], "dim": repr(dim)[:20]},
            )
        for name, low in (("m", 2), ("ef_construction", 1), ("ef", 1), ("seed", 0),
                          ("exact_filter_max", 0)):
            value = settings[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InputInvalidError(f"state {name} is not an int >= {low}",
                                        details={"field": name})
        try:
            quantum = check_quantum(settings["quantum"])
        except ConfigInvalidError as exc:
            raise InputInvalidError("state quantum is invalid", details={"field": "quantum"}
                                    ) from exc
        if len(set(live)) != len(live) or len(set(deleted)) != len(deleted) or (
                set(live) & set(deleted)):
            raise InputInvalidError("state has a repeated key or a key both live and deleted",
                                    details={"live": len(live), "deleted": len(deleted)})
        checked = checked_graph(graph, dim=self._dim, m=settings["m"],
                                ef_construction=settings["ef_construction"],
                                seed=settings["seed"], live=live, deleted=deleted)
        index = hnswlib.Index.__new__(hnswlib.Index)
        try:
            index.__setstate__(({**checked, "seed": _resumed_seed(
                settings["seed"], checked["cur_element_count"])},))
        except (RuntimeError, TypeError, ValueError, MemoryError) as exc:
            raise InputInvalidError(
                f"hnswlib could not restore the graph ({type(exc).__name__})", details={}
            ) from exc
        self._index = index
        self._m = settings["m"]
        self._ef_construction = settings["ef_construction"]
        self._ef = settings["ef"]
        self._seed = settings["seed"]
        self._quantum = quantum
        self._exact_filter_max = settings["exact_filter_max"]
        self._live = set(live)
        self._deleted = set(deleted)
        self._configure()

    def _check(self) -> None:
        """Assert the internal invariants (tests call this after every mutation)."""
        assert not (self._live & self._deleted)
        labels = self._index.get_ids_list()
        assert len(labels) == len(self._live) + len(self._deleted)
        assert set(labels) == self._live | self._deleted
        assert int(self._index.element_count) <= self.capacity
