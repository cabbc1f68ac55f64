"""State tables: engine state kept beside the record store, in rows of numpy columns.

The layer adapters keep state that is not made of records: the social ledger (one row per
agent and other agent), the procedural miner's pattern counts (one row per agent and
pattern). Such state decides what the engine answers, so like the store it is saved with
snapshots, journaled in durable mode and covered by ``state_hash``. A part that holds it
subclasses :class:`KeyedTable`, and the engine treats every table alike
(``EngineState.tables``):

- **Rows.** A row is addressed by a key of ``KEY_ARITY`` strings (e.g. ``(agent, other)``)
  and holds one value per column: ``FLOATS`` (float64) and ``INTS`` (int64). Rows live in
  slots of preallocated columns (capacity doubles; freed slots are reused), so a batch
  update is numpy work over ``table.rows(keys)``.
- **Digest.** Each row has a 16-byte digest over its key and its values (floats quantized);
  the table keeps their sum modulo 2**128. A key's first part names the agent that owns the
  row, so the state hash splits by agent (``core.digest``); a row whose first part is empty
  is engine-wide scheduling state (where a slice resumes), saved and journaled like the
  others but left out of the digest. A row marked with :meth:`KeyedTable.touch` loses
  its digest and is hashed again by the next :meth:`KeyedTable.digest`, so hashing costs
  O(rows changed), and equal rows give an equal digest however they were reached.
- **Changes.** While :attr:`KeyedTable.tracking` is on (durable mode), the table remembers
  the rows touched or deleted since the last :meth:`KeyedTable.take_changes`; the journal
  stores those rows' values (an effect, never a call) and replay applies them with
  :meth:`KeyedTable.apply_changes`.
- **Snapshots.** :meth:`KeyedTable.get_state` gives the live rows sorted by key (the same
  bytes for the same rows) as a JSON manifest plus one array per column.

Runtime complexity: ``rows`` O(k) dict lookups; ``touch`` O(k); ``digest`` O(n) numpy plus
one sha256 per row touched (the touched rows are the live ones without a digest, so nothing
accumulates between digests); ``get_state`` O(n log n).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

__all__ = ["KeyedTable", "TableChanges", "TableState"]

_MASK128 = (1 << 128) - 1
TableState = tuple[dict[str, Any], dict[str, NDArray[Any]]]
"""A table's snapshot: a JSON-able manifest and one array per column."""
TableChanges = tuple[dict[str, Any], dict[str, NDArray[Any]]]
"""The rows a table changed (values) and deleted (keys): a durable journal effect."""


class KeyedTable:
    """Rows of numeric columns addressed by string keys; see the module docstring.

    Subclasses set ``NAME`` (the table's name in snapshots, journals and hashes),
    ``KEY_ARITY`` and the column names, then mutate columns through :meth:`column` after
    :meth:`rows` (which also touches the rows) or :meth:`touch`.

    Args:
        initial_capacity: Slots allocated at first.
    """

    NAME: ClassVar[str] = ""
    KEY_ARITY: ClassVar[int] = 1
    FLOATS: ClassVar[tuple[str, ...]] = ()
    INTS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, initial_capacity: int = 64) -> None:
        self._initial = max(1, int(initial_capacity))
        self.tracking = False
        """Durable mode: remember touched and deleted rows for :meth:`take_changes`."""
        self._struct = struct.Struct("<" + "q" * (len(self.FLOATS) + len(self.INTS)))
        self.reset()

    # ------------------------------------------------------------------ rows
    def reset(self) -> None:
        """Back to an empty table that was never used (before a restore)."""
        self._slot_of: dict[tuple[str, ...], int] = {}
        self._keys: list[tuple[str, ...] | None] = []
        self._free: list[int] = []
        self._cols: dict[str, NDArray[Any]] = {}
        for name in self.FLOATS:
            self._cols[name] = np.zeros(0, dtype=np.float64)
        for name in self.INTS:
            self._cols[name] = np.zeros(0, dtype=np.int64)
        self._hashed = np.zeros(0, dtype=np.bool_)
        self._alive = np.zeros(0, dtype=np.bool_)
        self._scheduling = np.zeros(0, dtype=np.bool_)
        """Rows keyed ``("", ...)``: engine-wide scheduling state, not hashed."""
        self._n_scheduling = 0
        self._dhi = np.zeros(0, dtype=np.uint64)
        self._dlo = np.zeros(0, dtype=np.uint64)
        self._sum = 0
        self._used = False
        self._stale = False
        """Whether a live row lost its digest since the last :meth:`digest`."""
        self._changed: set[tuple[str, ...]] = set()
        self._deleted: set[tuple[str, ...]] = set()

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, key: object) -> bool:
        return key in self._slot_of

    def keys(self) -> Iterator[tuple[str, ...]]:
        """The live keys, in no particular order (sort them for output)."""
        return iter(self._slot_of)

    def slot(self, key: tuple[str, ...]) -> int | None:
        """The slot of ``key``, or ``None`` when it has no row."""
        return self._slot_of.get(key)

    def column(self, name: str) -> NDArray[Any]:
        """The whole column ``name``, indexed by slot (write through it after :meth:`rows`)."""
        return self._cols[name]

    def rows(self, keys: Sequence[tuple[str, ...]]) -> NDArray[np.intp]:
        """The slots of ``keys`` in order, creating zeroed rows for new keys; touches them.

        A key may repeat (the same slot is returned each time).
        """
        slot_of = self._slot_of
        out = np.empty(len(keys), dtype=np.intp)
        for i, key in enumerate(keys):
            slot = slot_of.get(key)
            if slot is None:
                slot = self._new_row(key)
            out[i] = slot
        self.touch(out)
        return out

    def _new_row(self, key: tuple[str, ...]) -> int:
        if len(key) != self.KEY_ARITY or not all(isinstance(k, str) for k in key):
            raise ValueError(f"{self.NAME} keys are {self.KEY_ARITY} strings")
        if self._free:
            slot = self._free.pop()
        else:
            slot = len(self._keys)
            if slot >= self._hashed.shape[0]:
                self._grow(max(self._initial, 2 * self._hashed.shape[0]))
            self._keys.append(None)
        self._keys[slot] = key
        self._slot_of[key] = slot
        for col in self._cols.values():
            col[slot] = 0
        self._hashed[slot] = False
        self._alive[slot] = True
        scheduling = not key[0]
        self._scheduling[slot] = scheduling
        self._n_scheduling += scheduling
        self._stale = self._used = True
        return slot

    def _grow(self, capacity: int) -> None:
        def grown(arr: NDArray[Any]) -> NDArray[Any]:
            out = np.zeros(capacity, dtype=arr.dtype)
            out[: arr.shape[0]] = arr
            return out

        self._cols = {name: grown(col) for name, col in self._cols.items()}
        self._hashed = grown(self._hashed)
        self._alive = grown(self._alive)
        self._scheduling = grown(self._scheduling)
        self._dhi = grown(self._dhi)
        self._dlo = grown(self._dlo)

    def touch(self, slots: Iterable[int] | NDArray[np.intp]) -> None:
        """Mark rows as changed: their digests are recomputed, their values journaled."""
        arr = np.asarray(slots, dtype=np.intp).reshape(-1)
        if arr.shape[0] == 0:
            return
        arr = np.unique(arr)
        hashed = arr[self._hashed[arr]]
        if hashed.shape[0]:
            old = sum((int(h) << 64) | int(lo) for h, lo in
                      zip(self._dhi[hashed].tolist(), self._dlo[hashed].tolist(), strict=True))
            self._sum = (self._sum - old) & _MASK128
            self._hashed[hashed] = False
        self._stale = True
        if self.tracking:
            keys = self._keys
            for slot in arr.tolist():
                key = keys[slot]
                assert key is not None
                self._changed.add(key)
                self._deleted.discard(key)

    def delete(self, keys: Iterable[tuple[str, ...]]) -> int:
        """Remove the rows of ``keys`` (absent keys are skipped); return how many went."""
        gone = 0
        for key in keys:
            slot = self._slot_of.pop(key, None)
            if slot is None:
                continue
            if self._hashed[slot]:
                digest = (int(self._dhi[slot]) << 64) | int(self._dlo[slot])
                self._sum = (self._sum - digest) & _MASK128
                self._hashed[slot] = False
            self._keys[slot] = None
            self._alive[slot] = False
            self._n_scheduling -= bool(self._scheduling[slot])
            self._scheduling[slot] = False
            self._free.append(slot)
            gone += 1
            if self.tracking:
                self._changed.discard(key)
                self._deleted.add(key)
        return gone

    # ------------------------------------------------------------------ digest
    def _row_digest(self, slot: int, quantum: int) -> int:
        key = self._keys[slot]
        assert key is not None
        values = [round(float(self._cols[n][slot]) * quantum) for n in self.FLOATS]
        values += [int(self._cols[n][slot]) for n in self.INTS]
        h = hashlib.sha256("\x1f".join(key).encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
        h.update(self._struct.pack(*values))
        return int.from_bytes(h.digest()[:16], "big")

    def agent_digest(self, quantum: int) -> tuple[int, int]:
        """``(rows, sum of their digests mod 2**128)`` over the agents' rows.

        Rows keyed ``("", ...)`` (scheduling state) are left out. Two tables holding
        disjoint agents' rows add up to the table holding them all.

        Args:
            quantum: Floats are rounded to integers of ``1 / quantum`` first.
        """
        if self._stale:
            n = len(self._keys)
            total = self._sum
            todo = self._alive[:n] & ~self._hashed[:n] & ~self._scheduling[:n]
            for slot in np.flatnonzero(todo).tolist():
                d = self._row_digest(slot, quantum)
                self._dhi[slot] = d >> 64
                self._dlo[slot] = d & ((1 << 64) - 1)
                self._hashed[slot] = True
                total += d
            self._sum = total & _MASK128
            self._stale = False
        return len(self._slot_of) - self._n_scheduling, self._sum

    def digest(self, quantum: int) -> str | None:
        """``"<rows>:<sum>"`` of :meth:`agent_digest`, or ``None`` while never used.

        Args:
            quantum: Floats are rounded to integers of ``1 / quantum`` first.
        """
        if not self._used:
            return None
        rows, total = self.agent_digest(quantum)
        return f"{rows}:{total:032x}"

    # ------------------------------------------------------------------ snapshots
    def _export(self, keys: list[tuple[str, ...]]) -> TableState:
        slots = np.array([self._slot_of[k] for k in keys], dtype=np.intp)
        arrays = {name: col[slots].copy() for name, col in self._cols.items()}
        return {"keys": [list(k) for k in keys]}, arrays

    def get_state(self) -> TableState:
        """The live rows sorted by key: ``({"keys": [...], "used": bool}, columns)``."""
        meta, arrays = self._export(sorted(self._slot_of))
        meta["used"] = self._used
        return meta, arrays

    def _import(self, meta: dict[str, Any], arrays: dict[str, NDArray[Any]]
                ) -> tuple[list[tuple[str, ...]], dict[str, NDArray[Any]]]:
        raw = meta.get("keys")
        if not isinstance(raw, list):
            raise ValueError(f"{self.NAME}: keys must be a list")
        keys: list[tuple[str, ...]] = []
        for k in raw:
            if not isinstance(k, list) or len(k) != self.KEY_ARITY or not all(
                    isinstance(part, str) for part in k):
                raise ValueError(f"{self.NAME}: a key is not {self.KEY_ARITY} strings")
            keys.append(tuple(k))
        if len(set(keys)) != len(keys):
            raise ValueError(f"{self.NAME}: a key repeats")
        if set(arrays) != set(self._cols):
            raise ValueError(f"{self.NAME}: columns {sorted(arrays)} != {sorted(self._cols)}")
        cols: dict[str, NDArray[Any]] = {}
        for name, col in self._cols.items():
            arr = np.asarray(arrays[name])
            if arr.shape != (len(keys),) or arr.dtype != col.dtype:
                raise ValueError(f"{self.NAME}: column {name} has the wrong shape or type")
            if arr.dtype.kind == "f" and not np.isfinite(arr).all():
                raise ValueError(f"{self.NAME}: column {name} holds a non-finite number")
            cols[name] = arr
        self.validate(cols)
        return keys, cols

    def set_state(self, meta: dict[str, Any], arrays: dict[str, NDArray[Any]]) -> None:
        """Restore from :meth:`get_state`; the table is unchanged when it raises.

        Raises:
            ValueError: Malformed (keys and columns disagree, a key repeats, a column has
                the wrong type or a non-finite number).
        """
        keys, cols = self._import(meta, arrays)
        used = meta.get("used", bool(keys))
        if not isinstance(used, bool):
            raise ValueError(f"{self.NAME}: used must be a bool")
        self.reset()
        self._write(keys, cols)
        self._used = used or bool(keys)

    def _write(self, keys: list[tuple[str, ...]], cols: dict[str, NDArray[Any]]) -> None:
        slots = self.rows(keys)
        for name, arr in cols.items():
            self._cols[name][slots] = arr

    # ------------------------------------------------------------------ durable journal
    def has_changes(self) -> bool:
        """Whether rows were touched or deleted since the last :meth:`take_changes`."""
        return bool(self._changed or self._deleted)

    def take_changes(self) -> TableChanges | None:
        """The rows touched and deleted since the last call (``None``: none); forgets them."""
        if not self._changed and not self._deleted:
            return None
        meta, arrays = self._export(sorted(self._changed))
        meta["deleted"] = [list(k) for k in sorted(self._deleted)]
        self._changed = set()
        self._deleted = set()
        return meta, arrays

    def apply_changes(self, meta: dict[str, Any], arrays: dict[str, NDArray[Any]]) -> None:
        """Replay :meth:`take_changes`: write the rows' values, delete the deleted keys.

        Raises:
            ValueError: Malformed changes.
        """
        keys, cols = self._import(meta, arrays)
        deleted = meta.get("deleted")
        if not isinstance(deleted, list) or not all(
                isinstance(k, list) and len(k) == self.KEY_ARITY for k in deleted):
            raise ValueError(f"{self.NAME}: deleted must be a list of keys")
        self.delete(tuple(str(p) for p in k) for k in deleted)
        self._write(keys, cols)

    def validate(self, columns: dict[str, NDArray[Any]]) -> None:
        """Check loaded values against the ranges a subclass allows, before any is written.

        Raises:
            ValueError: A value out of range (subclasses override; the base accepts all).
        """

    # ------------------------------------------------------------------ invariants
    def _check(self) -> None:
        """Assert slots, keys, free list and digests agree."""
        live = [s for s, k in enumerate(self._keys) if k is not None]
        assert len(live) == len(self._slot_of)
        assert np.flatnonzero(self._alive[: len(self._keys)]).tolist() == live
        assert all(self._slot_of[k] == s for s, k in enumerate(self._keys) if k is not None)
        assert sorted(self._free) == [s for s, k in enumerate(self._keys) if k is None]
        hashed = [s for s in live if self._hashed[s]]
        scheduling = [s for s in live if self._scheduling[s]]
        assert not set(hashed) & set(scheduling) and len(scheduling) == self._n_scheduling
        assert all((self._keys[s] or ("x",))[0] == "" for s in scheduling)
        total = sum((int(self._dhi[s]) << 64) | int(self._dlo[s]) for s in hashed)
        assert total & _MASK128 == self._sum
