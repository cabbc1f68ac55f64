"""Where each agent was last seen: the positions ``nearby`` perception measures from.

An engine event with an actor and a position moves the actor there
(``PerceptionSettings.track_positions``); a host can also place agents directly
(``MemoryEngine.place``). The table is engine state (``core.tables``): saved, hashed and
journaled, so perception after a reload is the perception of the run that saved it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from f09_memory.core.tables import KeyedTable

__all__ = ["Placements"]


class Placements(KeyedTable):
    """Last known position ``(x, y, z)`` and time ``at`` of each placed agent.

    Runtime complexity: :meth:`place` O(k); :meth:`within` O(placed agents) numpy plus
    O(m log m) for the m agents found.
    """

    NAME: ClassVar[str] = "perception.placements"
    KEY_ARITY: ClassVar[int] = 1
    FLOATS: ClassVar[tuple[str, ...]] = ("x", "y", "z")
    INTS: ClassVar[tuple[str, ...]] = ("at",)

    def __init__(self) -> None:
        super().__init__(initial_capacity=256)
        self._live: tuple[NDArray[np.intp], list[str]] | None = None

    def reset(self) -> None:  # noqa: D102
        super().reset()
        self._live = None

    def place(self, agent_ids: Sequence[str], xyz: NDArray[np.float64], now: int) -> None:
        """Move ``agent_ids[i]`` to ``xyz[i]`` at ``now`` (a later row wins on a repeat)."""
        known = len(self)
        slots = self.rows([(a,) for a in agent_ids])
        if len(self) != known:
            self._live = None
        for i, name in enumerate(self.FLOATS):
            self.column(name)[slots] = xyz[:, i]
        self.column("at")[slots] = now

    def position(self, agent_id: str) -> tuple[float, float, float] | None:
        """The agent's last known position, or ``None`` when it was never placed."""
        slot = self.slot((agent_id,))
        if slot is None:
            return None
        return (float(self.column("x")[slot]), float(self.column("y")[slot]),
                float(self.column("z")[slot]))

    def within(self, point: NDArray[np.float64], radius: float, limit: int
               ) -> list[str]:
        """The ids of at most ``limit`` placed agents within ``radius`` of ``point``.

        Nearest first; equal (squared, exact float64) distances in id order.
        """
        if limit <= 0 or not len(self):
            return []
        if self._live is None:
            keys = sorted(self.keys())
            self._live = (np.array([self.slot(k) for k in keys], dtype=np.intp),
                          [k[0] for k in keys])
        slots, ids = self._live
        d2 = ((self.column("x")[slots] - point[0]) ** 2 + (self.column("y")[slots] - point[1])
              ** 2 + (self.column("z")[slots] - point[2]) ** 2)
        hits = np.flatnonzero(d2 <= radius * radius)
        # ids are sorted, so a stable sort breaks equal distances by id
        nearest = hits[np.argsort(d2[hits], kind="stable")[:limit]]
        return [ids[i] for i in nearest.tolist()]

    def delete(self, keys: Any) -> int:  # noqa: D102
        gone = super().delete(keys)
        if gone:
            self._live = None
        return gone

    def set_state(self, meta: dict[str, Any], arrays: dict[str, NDArray[Any]]) -> None:  # noqa: D102
        super().set_state(meta, arrays)
        self._live = None

    def apply_changes(self, meta: dict[str, Any], arrays: dict[str, NDArray[Any]]) -> None:  # noqa: D102
        super().apply_changes(meta, arrays)
        self._live = None

    def validate(self, columns: dict[str, NDArray[Any]]) -> None:
        """Refuse positions beyond ±1e12 and negative times."""
        for name in self.FLOATS:
            if (np.abs(columns[name]) > 1e12).any():
                raise ValueError("positions: a coordinate is beyond 1e12")
        if (columns["at"] < 0).any():
            raise ValueError("positions: a time is negative")
