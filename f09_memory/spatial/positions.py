"""Position columns of one agent's records, derived from their spatial metadata, and its grid.

**Derived, not stored.** A record's position is its ``metadata.spatial`` (``SpatialMeta``:
x, y, z, region), which the store already keeps in its sparse ``extras``: that copy is in
snapshots, in the record digests of ``state_hash`` and in the durable journal, and it is
redacted at ingest. The columns here (``x``, ``y``, ``z`` float64, ``has`` bool, ``region``
int32, -1 for none) are a cache derived from it, one row per store slot, so:

- snapshots, record digests and durable effects do not change (no new ``AgentMemory``
  column, no new mutator to journal, no snapshot format version): existing snapshots load,
  existing hashes stay, and replay needs nothing;
- they can never disagree with the records: :meth:`AgentPositions.sync` compares the
  store's per-slot revision (``AgentMemory.rev``, changed by every add, update, removal and
  slot reuse) with the revision each row was derived from and re-derives the rows that
  moved; an unchanged agent (its ``next_rev`` is the one last seen) costs O(1);
- a restore builds new ``AgentMemory`` objects, so rows derived from an old one are never
  reused (the owner is compared by identity).

The price is a Python step per changed record at the next query (a few hundred ns) instead
of at ingest; a crowd that moves every frame pays it where it queries.

**Regions** are interned to small ints per engine (:class:`RegionTable`, first-seen order).
The ids are a process-local cache key: nothing hashes, saves or returns them.

**Grid.** A uniform grid of ``cell_size`` (``SpatialSettings``): each positioned live slot
gets a cell key ``(cx << 42) | (cy << 21) | cz`` (cell coordinates clipped to 21 bits, so
far-away points share the edge cells and are still found); the keys are sorted once per
change of the agent's positions (``np.argsort``, stable), and a query box becomes one
``searchsorted`` range per (cx, cy) column of cells. A box of more cells than the agent has
positioned records is answered by a scan of them instead (same result).

Runtime complexity: ``sync`` O(1) unchanged, else O(hi) numpy plus O(changed) Python;
grid build O(n log n); ``candidates`` O(cells + found).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from f09_memory.store.agent import AgentMemory

__all__ = ["CLAMP", "AgentPositions", "RegionTable", "distances", "proximity_of"]

_BITS = 21
_HALF = 1 << (_BITS - 1)
_LOW = -_HALF
_HIGH = _HALF - 1
CLAMP = 1e150
"""Coordinates are clamped to +-CLAMP for distances (far beyond any world; no overflow)."""


class RegionTable:
    """Region names interned to ints (``-1``: none), in first-seen order, per engine."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}

    def id_of(self, name: str | None) -> int:
        """The id of ``name`` (created on first sight), ``-1`` for ``None``."""
        if name is None:
            return -1
        found = self._ids.get(name)
        if found is None:
            found = self._ids[name] = len(self._ids)
        return found

    def find(self, name: str) -> int | None:
        """The id of ``name`` when it was ever seen, else ``None`` (no record has it)."""
        return self._ids.get(name)

    def __len__(self) -> int:
        return len(self._ids)


def distances(x: NDArray[np.float64], y: NDArray[np.float64], z: NDArray[np.float64],
              at: tuple[float, float, float]) -> NDArray[np.float64]:
    """Euclidean distances from ``at`` (``inf`` where the squares overflow float64)."""
    with np.errstate(over="ignore", invalid="ignore"):
        d2 = (x - at[0]) ** 2
        d2 += (y - at[1]) ** 2
        d2 += (z - at[2]) ** 2
        out: NDArray[np.float64] = np.sqrt(d2)
    return out


def proximity_of(d: NDArray[np.float64], scale: float) -> NDArray[np.float64]:
    """The proximity term ``1 / (1 + (d / scale)**2)``: 1 at the spot, 0.5 at ``scale``."""
    with np.errstate(over="ignore"):
        r = d / scale
        r *= r
    r += 1.0
    out: NDArray[np.float64] = np.reciprocal(r)
    return out


def _cells(v: NDArray[np.float64], cell: float) -> NDArray[np.int64]:
    with np.errstate(over="ignore", invalid="ignore"):
        c = np.floor(v / cell)
    np.clip(c, _LOW, _HIGH, out=c)
    out: NDArray[np.int64] = c.astype(np.int64) + _HALF
    return out


def _cell(v: float, cell: float) -> int:
    c = math.floor(v / cell) if math.isfinite(v / cell) else (_LOW if v < 0 else _HIGH)
    return min(max(c, _LOW), _HIGH) + _HALF


class _Compact:
    """The positioned live records of an agent, packed (rebuilt when one changes)."""

    __slots__ = ("deadline", "flat", "grid_keys", "grid_rows", "key", "layer", "min_deadline",
                 "slots", "xyz")

    def __init__(self, slots: NDArray[np.intp], xyz: list[NDArray[np.float64]],
                 key: NDArray[np.int64], deadline: NDArray[np.int64],
                 layer: NDArray[np.int8]) -> None:
        self.slots = slots
        self.xyz = xyz
        """x, y, z of the rows, clamped to +-CLAMP."""
        self.key = key
        self.deadline = deadline
        self.layer = layer
        self.flat = not xyz[2].any()
        """Whether every z is 0 (a 2-D world: distances skip z when the query's z is 0)."""
        self.min_deadline = int(deadline.min()) if deadline.shape[0] else 2**63 - 1
        self.grid_keys: NDArray[np.int64] | None = None
        """Cell keys of the rows in ascending order (agents of ``grid_min`` rows or more)."""
        self.grid_rows: NDArray[np.intp] | None = None
        """The rows in cell-key order."""


class AgentPositions:
    """The derived position columns and grid of one agent (see the module docstring).

    Args:
        am: The agent's store (compared by identity: a restored store gets new rows).
        regions: The engine's region ids.
        cell_size: The grid's cell edge.
        grid_min: Agents with fewer positioned records are scanned (no grid).
    """

    __slots__ = ("_packed", "am", "cell_size", "grid_min", "has", "next_rev", "positioned",
                 "region", "regions", "rev", "x", "y", "z")

    def __init__(self, am: AgentMemory, regions: RegionTable, cell_size: float,
                 grid_min: int = 1024) -> None:
        self.am = am
        self.regions = regions
        self.cell_size = cell_size
        self.grid_min = grid_min
        self.next_rev = -1
        n = am.capacity
        self.rev = np.full(n, -1, dtype=np.int64)
        self.x = np.zeros(n, dtype=np.float64)
        self.y = np.zeros(n, dtype=np.float64)
        self.z = np.zeros(n, dtype=np.float64)
        self.has = np.zeros(n, dtype=np.bool_)
        self.region = np.full(n, -1, dtype=np.int32)
        self.positioned = 0
        self._packed: _Compact | None = None

    def _grow(self, n: int) -> None:
        def grown(arr: NDArray[np.generic], fill: int | float) -> NDArray[np.generic]:
            out = np.full(n, fill, dtype=arr.dtype)
            out[: arr.shape[0]] = arr
            return out

        self.rev = grown(self.rev, -1)  # type: ignore[assignment]
        self.x = grown(self.x, 0.0)  # type: ignore[assignment]
        self.y = grown(self.y, 0.0)  # type: ignore[assignment]
        self.z = grown(self.z, 0.0)  # type: ignore[assignment]
        self.has = grown(self.has, False)  # type: ignore[assignment]
        self.region = grown(self.region, -1)  # type: ignore[assignment]

    def sync(self) -> None:
        """Re-derive the rows whose record changed since the last sync. O(1) if none did."""
        am = self.am
        if self.next_rev == am.next_rev:
            return
        if am.capacity > self.rev.shape[0]:
            self._grow(am.capacity)
        hi = am.hi
        changed = np.flatnonzero(self.rev[:hi] != am.rev[:hi]).tolist()
        moved = False
        extras, alive, keys = am.extras, am.alive, am.key
        for slot in changed:
            meta = None
            if alive.item(slot):
                extra = extras.get(keys.item(slot))
                if extra is not None:
                    meta = extra.spatial
            had = self.has.item(slot)
            if meta is None:
                if had:
                    self.has[slot] = False
                    self.region[slot] = -1
                    self.positioned -= 1
                    moved = True
            else:
                self.x[slot] = meta.x
                self.y[slot] = meta.y
                self.z[slot] = meta.z
                self.region[slot] = self.regions.id_of(meta.region)
                if not had:
                    self.has[slot] = True
                    self.positioned += 1
                moved = True
            self.rev[slot] = am.rev.item(slot)
        if moved:
            self._packed = None
        self.next_rev = am.next_rev

    # ------------------------------------------------------------------ queries
    def _compact(self) -> _Compact:
        if self._packed is None:
            am = self.am
            slots = np.flatnonzero(self.has[: am.hi])
            xyz = [np.clip(col[slots], -CLAMP, CLAMP) for col in (self.x, self.y, self.z)]
            packed = _Compact(slots, xyz, am.key[slots], am.deadline[slots], am.layer[slots])
            if slots.shape[0] >= self.grid_min:
                cell = self.cell_size
                keys = (_cells(xyz[0], cell) << (2 * _BITS)) | (
                    _cells(xyz[1], cell) << _BITS) | _cells(xyz[2], cell)
                order = np.argsort(keys, kind="stable")
                packed.grid_keys = keys[order]
                packed.grid_rows = order
            self._packed = packed
        return self._packed

    def _rows(self, packed: _Compact, at: tuple[float, float, float],
              radius: float) -> NDArray[np.intp] | None:
        """Rows of ``packed`` in the grid cells the box ``at +- radius`` covers (ascending).

        ``None``: scan every row (no grid, or a box of more cell columns than rows).
        """
        keys, rows = packed.grid_keys, packed.grid_rows
        if keys is None or rows is None:
            return None
        cell = self.cell_size
        lo = [_cell(c - radius, cell) for c in at]
        hi = [_cell(c + radius, cell) for c in at]
        nx, ny = hi[0] - lo[0] + 1, hi[1] - lo[1] + 1
        if nx * ny > rows.shape[0]:
            return None
        cx = np.arange(lo[0], hi[0] + 1, dtype=np.int64)
        cy = np.arange(lo[1], hi[1] + 1, dtype=np.int64)
        columns = ((cx[:, None] << (2 * _BITS)) | (cy[None, :] << _BITS)).reshape(-1)
        starts = np.searchsorted(keys, columns | lo[2], side="left")
        ends = np.searchsorted(keys, columns | hi[2], side="right")
        lengths = ends - starts
        total = int(lengths.sum())
        if total == 0:
            return np.zeros(0, dtype=np.intp)
        offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        found: NDArray[np.intp] = rows[offsets + np.arange(total)]
        found.sort()
        return found

    def candidates(self, at: tuple[float, float, float], radius: float) -> NDArray[np.intp]:
        """Positioned slots in the grid cells the box ``at +- radius`` covers (ascending).

        A superset of the slots within ``radius`` (every positioned slot without a grid).
        """
        packed = self._compact()
        rows = self._rows(packed, at, radius)
        return packed.slots if rows is None else packed.slots[rows]

    def within(self, at: tuple[float, float, float], radius: float, now: int,
               layer: int | None) -> tuple[NDArray[np.intp], NDArray[np.float64],
                                           NDArray[np.int64]]:
        """Live slots within ``radius`` of ``at``: ``(slots, squared distances, keys)``.

        Live: TTL after ``now``, of ``layer`` if given; within: squared distance at most
        ``radius**2``. Coordinates are clamped to ``+-CLAMP`` first, so no square overflows.
        """
        packed = self._compact()
        rows = self._rows(packed, at, radius)
        x, y, z = packed.xyz
        if rows is not None:
            x, y, z = x[rows], y[rows], z[rows]
        ax, ay, az = (min(max(c, -CLAMP), CLAMP) for c in at)
        d2 = x - ax
        d2 *= d2
        dy = y - ay
        dy *= dy
        d2 += dy
        if az != 0.0 or not packed.flat:  # a 2-D world (every z 0) skips the z term
            dz = z - az
            dz *= dz
            d2 += dz
        mask = d2 <= radius * radius
        if packed.min_deadline <= now:  # some TTL may have passed
            mask &= (packed.deadline if rows is None else packed.deadline[rows]) > now
        if layer is not None:
            mask &= (packed.layer if rows is None else packed.layer[rows]) == layer
        hit = mask.nonzero()[0]
        if rows is not None:
            return packed.slots[rows[hit]], d2[hit], packed.key[rows[hit]]
        return packed.slots[hit], d2[hit], packed.key[hit]

    def _check(self) -> None:
        """Assert the rows match the records (after a :meth:`sync`)."""
        am = self.am
        hi = am.hi
        for slot in range(hi):
            meta = None
            if am.alive[slot]:
                extra = am.extras.get(int(am.key[slot]))
                meta = None if extra is None else extra.spatial
            assert bool(self.has[slot]) == (meta is not None), "position row drifted"
            if meta is not None:
                assert (self.x[slot], self.y[slot], self.z[slot]) == (meta.x, meta.y, meta.z)
        assert int(self.has[:hi].sum()) == self.positioned
