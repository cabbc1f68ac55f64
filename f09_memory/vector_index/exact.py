"""ExactIndex: brute-force cosine search over one contiguous float32 matrix.

The baseline index, used for agents with up to ``MemoryConfig.exact_index_max`` vectors. It
keeps unit-length rows in a matrix whose capacity doubles (``add`` is O(1) amortized per
vector), a parallel int64 key array and a key -> row dict; ``remove`` swap-deletes (the last
row moves into the hole), so live rows always stay contiguous.

Determinism: the results are exact, so they depend only on the live (key, vector) pairs, never
on insertion history. Ordering is by quantized similarity descending, then key ascending
(:func:`~f09_memory.vector_index.ordering.rank_top_k`). Similarities are float32 dot products,
one per row, computed by :func:`~f09_memory.vector_index.kernels.similarities` on the calling
thread (never BLAS worker threads): on one build and CPU they are bit-identical run to run, and
the same whether ``allowed`` gathers rows or scans them all; across CPUs and BLAS builds they
can differ in the last float32 bit (~1e-7), which a quantum coarser than that (e.g. ``10**6``)
absorbs, while the default ``10**9`` only breaks exact ties by key.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import ConfigInvalidError, InputInvalidError, RecordNotFoundError
from f09_memory.vector_index.checks import as_keys, as_query, as_vectors, check_k
from f09_memory.vector_index.kernels import similarities
from f09_memory.vector_index.ordering import DEFAULT_QUANTUM, check_quantum, rank_top_k

__all__ = ["UNIT_TOLERANCE", "ExactIndex"]

UNIT_TOLERANCE = 1e-3
"""How far a restored row's squared length may be from 1 (float32 rounding is ~1e-7)."""

_GATHER_FRACTION = 4  # an ``allowed`` list below 1/4 of the live rows is gathered row by row


def _check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigInvalidError(
            f"ExactIndex {name} must be an int >= {low}, got {value!r}",
            details={"field": name, "value": repr(value)},
        )
    return value


class ExactIndex:
    """Exact cosine nearest-neighbour search (implements ``VectorIndex``).

    Example:
        >>> import numpy as np
        >>> index = ExactIndex(2)
        >>> index.add(np.array([7, 3]), np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32))
        >>> index.search(np.array([1.0, 0.1], dtype=np.float32), 1)[0].tolist()
        [7]

    Args:
        dim: Vector dimension (>= 1).
        initial_capacity: Rows allocated up front (>= 1); doubles when full.
        quantum: Similarity quantum used for ordering (``MemoryConfig.score_quantum``).

    Raises:
        ConfigInvalidError: An argument is out of range.

    """

    def __init__(
        self, dim: int, *, initial_capacity: int = 64, quantum: int = DEFAULT_QUANTUM
    ) -> None:
        self._dim = _check_int("dim", dim, 1)
        capacity = _check_int("initial_capacity", initial_capacity, 1)
        self._quantum = check_quantum(quantum)
        self._vectors = np.zeros((capacity, self._dim), dtype=np.float32)
        self._keys = np.zeros(capacity, dtype=np.int64)
        self._size = 0
        self._rows: dict[int, int] = {}

    # --- properties -------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._dim

    @property
    def quantum(self) -> int:
        """Similarity quantum used for ordering."""
        return self._quantum

    @property
    def capacity(self) -> int:
        """Rows currently allocated."""
        return int(self._keys.shape[0])

    def __len__(self) -> int:
        """Return the number of live vectors."""
        return self._size

    def __contains__(self, key: object) -> bool:
        """Tell whether ``key`` has a live vector."""
        if isinstance(key, bool) or not isinstance(key, int | np.integer):
            return False
        return int(key) in self._rows

    def keys(self) -> NDArray[np.int64]:
        """Return the live keys in ascending order.

        Returns:
            A new int64 array.

        """
        return np.sort(self._keys[: self._size])

    # --- mutation ---------------------------------------------------------------------------
    def _grow(self, needed: int) -> None:
        capacity = self.capacity
        if needed <= capacity:
            return
        while capacity < needed:
            capacity *= 2
        vectors = np.zeros((capacity, self._dim), dtype=np.float32)
        vectors[: self._size] = self._vectors[: self._size]
        keys = np.zeros(capacity, dtype=np.int64)
        keys[: self._size] = self._keys[: self._size]
        self._vectors, self._keys = vectors, keys

    def add(self, keys: NDArray[np.int64], vectors: NDArray[np.float32]) -> None:
        """Insert or replace vectors under ``keys``.

        Vectors are stored L2-normalized (an all-zero vector stays zero and scores 0 against
        every query). A key already present gets its vector replaced; a key repeated within
        the call keeps its last vector. New keys are appended in ascending key order.

        Runtime complexity: ``O(n * dim)`` amortized (capacity doubles).

        Args:
            keys: int64 keys, one per row.
            vectors: ``(len(keys), dim)`` finite float array.

        Raises:
            InputInvalidError: Bad keys, wrong shape, or non-finite values (nothing changes).

        """
        k = as_keys(keys)
        v = as_vectors(vectors, int(k.shape[0]), self._dim)
        if k.shape[0] == 0:
            return
        # last occurrence of each key wins; np.unique sorts the keys ascending
        uniq, first_in_reversed = np.unique(k[::-1], return_index=True)
        positions = (k.shape[0] - 1) - first_in_reversed
        rows = self._rows
        existing_pos: list[int] = []
        existing_rows: list[int] = []
        new_pos: list[int] = []
        new_keys: list[int] = []
        for key, pos in zip(uniq.tolist(), positions.tolist(), strict=True):
            row = rows.get(key)
            if row is None:
                new_pos.append(pos)
                new_keys.append(key)
            else:
                existing_pos.append(pos)
                existing_rows.append(row)
        if existing_rows:
            self._vectors[existing_rows] = v[existing_pos]
        if new_keys:
            start = self._size
            stop = start + len(new_keys)
            self._grow(stop)
            self._vectors[start:stop] = v[new_pos]
            self._keys[start:stop] = new_keys
            rows.update(zip(new_keys, range(start, stop), strict=True))
            self._size = stop

    def remove(self, keys: NDArray[np.int64]) -> None:
        """Remove the vectors of ``keys``; unknown keys are ignored.

        Swap-delete: the last live row moves into each hole. Runtime complexity:
        ``O(len(keys) * dim)``.

        Args:
            keys: int64 keys.

        Raises:
            InputInvalidError: ``keys`` is not a 1-D integer array (nothing changes).

        """
        rows = self._rows
        for key in as_keys(keys).tolist():
            row = rows.pop(key, None)
            if row is None:
                continue
            last = self._size - 1
            if row != last:
                moved = int(self._keys[last])
                self._vectors[row] = self._vectors[last]
                self._keys[row] = moved
                rows[moved] = row
            self._vectors[last] = 0.0
            self._size = last

    # --- queries ----------------------------------------------------------------------------
    def search(
        self,
        query: NDArray[np.float32],
        k: int,
        allowed: NDArray[np.int64] | None = None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Return the ``k`` live keys most cosine-similar to ``query``.

        Runtime complexity: ``O(n * dim)`` for the scan (``O(len(allowed) * dim)`` when
        ``allowed`` is small) plus ``O(n)`` selection.

        Args:
            query: ``(dim,)`` or ``(1, dim)`` finite vector (normalized here).
            k: Most results (>= 0).
            allowed: If given, only these keys are candidates (unknown keys are ignored).

        Returns:
            ``(keys, sims)``: int64 keys and float32 cosine similarities, ``min(k,
            candidates)`` long, ordered by quantized similarity desc, then key asc.

        Raises:
            InputInvalidError: Wrong query shape, non-finite query, bad ``k`` or ``allowed``.

        """
        q = as_query(query, self._dim)
        top = check_k(k)
        size = self._size
        if allowed is None:
            cand_keys = self._keys[:size]
            sims = similarities(self._vectors[:size], q)
        else:
            allow = as_keys(allowed)
            if allow.shape[0] * _GATHER_FRACTION < size:
                rows = self._rows
                distinct = dict.fromkeys(allow.tolist())
                picked = [r for r in map(rows.get, distinct) if r is not None]
                sel = np.asarray(picked, dtype=np.intp)
                cand_keys = self._keys[sel]
                sims = similarities(self._vectors, q, sel)
            else:
                sel = np.flatnonzero(np.isin(self._keys[:size], allow))
                cand_keys = self._keys[sel]
                sims = similarities(self._vectors[:size], q)[sel]
        return rank_top_k(cand_keys, sims, top, self._quantum)

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
        k = as_keys(keys)
        rows: list[int] = []
        for key in k.tolist():
            row = self._rows.get(key)
            if row is None:
                raise RecordNotFoundError(
                    f"key {key} has no vector in this index; add it first",
                    details={"key": key},
                )
            rows.append(row)
        return self._vectors[rows].copy()

    # --- state ------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """Return the index contents as plain values and arrays (copies).

        Returns:
            ``{"kind": "exact", "dim", "quantum", "keys": int64[n], "vectors": float32[n,
            dim]}`` with rows in storage order, so :meth:`set_state` restores an index that
            behaves identically.

        """
        return {
            "kind": "exact",
            "dim": self._dim,
            "quantum": self._quantum,
            "keys": self._keys[: self._size].copy(),
            "vectors": self._vectors[: self._size].copy(),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Replace the contents with a state from :meth:`get_state`.

        Args:
            state: The state mapping.

        Raises:
            InputInvalidError: The state is malformed, of another kind, of another ``dim``,
                has duplicate keys, or rows that are not unit length (or zero) within
                ``UNIT_TOLERANCE`` (nothing changes).

        """
        try:
            kind, dim, quantum = state["kind"], state["dim"], state["quantum"]
            raw_keys, raw_vectors = state["keys"], state["vectors"]
        except (KeyError, TypeError) as exc:
            raise InputInvalidError(
                "not an ExactIndex state: expected the mapping returned by get_state()",
                details={"type": type(state).__name__},
            ) from exc
        if not (isinstance(kind, str) and kind == "exact" and type(dim) is int
                and dim == self._dim):
            raise InputInvalidError(
                f"state is for a {kind!r:.20} index of dim {dim!r:.20}; this is an exact index "
                f"of dim {self._dim}",
                details={"kind": repr(kind)[:20], "dim": repr(dim)[:20]},
            )
        keys = as_keys(raw_keys)
        n = int(keys.shape[0])
        as_vectors(raw_vectors, n, self._dim)  # shape and finiteness
        if np.unique(keys).shape[0] != n:
            raise InputInvalidError("state has duplicate keys", details={"keys": n})
        rows = np.asarray(raw_vectors, dtype=np.float32)
        norms = np.einsum("ij,ij->i", rows, rows)
        if not ((np.abs(norms - 1.0) <= UNIT_TOLERANCE) | (norms == 0.0)).all():
            raise InputInvalidError(
                "state vectors are not unit length (get_state() stores normalized rows)",
                details={"rows": n})
        try:
            checked_quantum = check_quantum(quantum)
        except ConfigInvalidError as exc:
            raise InputInvalidError(exc.message, details=exc.details) from exc
        # keep the stored rows bit-for-bit (they were normalized when first added)
        exact_rows = rows
        capacity = max(1, self.capacity)
        while capacity < n:
            capacity *= 2
        self._vectors = np.zeros((capacity, self._dim), dtype=np.float32)
        self._vectors[:n] = exact_rows
        self._keys = np.zeros(capacity, dtype=np.int64)
        self._keys[:n] = keys
        self._size = n
        self._rows = {key: row for row, key in enumerate(keys.tolist())}
        self._quantum = checked_quantum

    def _check(self) -> None:
        """Assert the internal invariants (tests call this after every mutation)."""
        assert 0 <= self._size <= self.capacity
        assert self._vectors.shape == (self.capacity, self._dim)
        assert len(self._rows) == self._size
        live = self._keys[: self._size].tolist()
        assert len(set(live)) == self._size
        for row, key in enumerate(live):
            assert self._rows[key] == row
