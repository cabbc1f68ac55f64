"""What the driver knows without asking a shard: clock, pressure, positions, argument checks.

:class:`DriverShadow` holds a shard-less ``MemoryEngine`` of the same config and seed (no
memories, never ticked). It does two jobs for ``ShardedMemoryEngine``:

- **Checks before any shard is touched**: ``now`` and budgets as ``tick`` checks them, the
  pressure state, agent ids, record ids, and ``place``'s positions; a bad call raises its
  ``MemoryEngineError`` and no shard sees it.
- **The position mirror** for engine events: ``nearby`` perception needs every agent's last
  known position, so the shadow's ``Placements`` mirror them (from ``place`` and from the
  actors' moves, a pure function of each frame). :meth:`DriverShadow.route` resolves a
  frame's perceivers over all agents with the single engine's own ``route_events``.

It also keeps the engine clock and pressure every shard shares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from f09_memory._validate import check_budget_ms, check_now
from f09_memory.config.config import MemoryConfig
from f09_memory.core.tables import TableState
from f09_memory.distributed.routing import record_agent
from f09_memory.engine import MemoryEngine
from f09_memory.errors import InputInvalidError, RecordNotFoundError
from f09_memory.perception.router import RoutedFrame, parse_events, physics_events, route_events
from f09_memory.schema.enums import PressureState

__all__ = ["DriverShadow"]


class DriverShadow:
    """The driver's own engine state and checks (see the module docstring).

    Args:
        config: The engine settings (every shard's).
        seed: The engine seed.
    """

    def __init__(self, config: MemoryConfig, seed: int) -> None:
        self.engine = MemoryEngine(config, seed=seed, embedder=None)
        self.config = config
        self.clock = 0
        """The engine clock (every shard's): the ``now`` of the last tick."""
        self.pressure = PressureState.NORMAL
        """The pressure in force on every shard."""

    # ------------------------------------------------------------------ checks
    @staticmethod
    def check_engine(config: object, shards: object, commit: object) -> MemoryConfig:
        """A sharded engine's arguments, checked; the config (``None``: the defaults).

        Raises:
            InputInvalidError: ``shards`` not an int in 1..4096, ``config`` not a
                ``MemoryConfig`` or asking for the async embedding mode (its query table is
                engine-wide), or ``commit`` not a durable commit mode.
        """
        if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= 4096:
            raise InputInvalidError("shards must be an int in 1..4096",
                                    details={"field": "shards"})
        config = config if config is not None else MemoryConfig()
        if not isinstance(config, MemoryConfig):
            raise InputInvalidError("config must be a MemoryConfig", details={"field": "config"})
        if config.embedding_mode == "async":
            raise InputInvalidError(
                "ShardedMemoryEngine does not support embedding_mode='async' (its query table "
                "is engine-wide); use the synchronous mode", details={"field": "embedding_mode"})
        if commit not in ("call", "tick"):
            raise InputInvalidError("commit must be 'call' or 'tick'", details={"field": "commit"})
        return config

    def now(self, now: int | None) -> int:
        """``now``, checked (``None``: the clock)."""
        return self.clock if now is None else check_now(now)

    def check_tick(self, now: object, budget_ms: object) -> int:
        """``now`` (not before the clock) and the budget, checked as ``tick`` checks them.

        Raises:
            InputInvalidError: ``now`` earlier than the clock, or a bad budget.
        """
        t = check_now(now)
        if t < self.clock:
            raise InputInvalidError(
                f"tick(now={t}) is earlier than the engine clock {self.clock}; logical time "
                "must not run backwards", details={"now": t, "clock": self.clock})
        check_budget_ms(budget_ms, self.config.work_units_per_ms)
        return t

    @staticmethod
    def check_pressure(state: PressureState | str) -> PressureState:
        """``state`` as a pressure state.

        Raises:
            InputInvalidError: Not a pressure state.
        """
        try:
            return PressureState(state)
        except ValueError:
            raise InputInvalidError(
                f"unknown pressure state; use one of {[p.value for p in PressureState]}",
                details={"field": "state"}) from None

    @staticmethod
    def check_agent(agent_id: object) -> None:
        """Raises ``InputInvalidError`` unless ``agent_id`` is a non-empty string."""
        if not isinstance(agent_id, str) or not agent_id:
            raise InputInvalidError("agent_id must be a non-empty string",
                                    details={"field": "agent_id"})

    @staticmethod
    def record_owner(record_id: object) -> str:
        """The agent of an engine record id.

        Raises:
            RecordNotFoundError: Not an engine record id.
        """
        agent = record_agent(record_id) if isinstance(record_id, str) else None
        if agent is None:
            raise RecordNotFoundError(f"{str(record_id)[:80]!r} is not a record id",
                                      details={"id": str(record_id)[:80]})
        return agent

    # ------------------------------------------------------------------ positions
    def place(self, positions: Mapping[str, object], now: int) -> None:
        """Validate ``positions`` (``MemoryEngine.place``) and mirror them."""
        self.engine.place(positions, now=now)

    def position_of(self, agent_id: str) -> tuple[float, float, float] | None:
        """The agent's last known position in the mirror (``None``: never placed)."""
        return self.engine.position_of(agent_id)

    def forget(self, agent_id: str) -> None:
        """Drop a forgotten agent's position."""
        self.engine._perception.placements.delete([(agent_id,)])

    def route(self, frame: Any) -> RoutedFrame:
        """A frame of engine events parsed, its perceivers resolved over every agent.

        Raises:
            InputInvalidError: A malformed event or a kind without a rule.
        """
        parsed = parse_events(frame)
        perception = self.engine._perception
        return route_events(parsed, perception.settings, perception.placements,
                            lambda e, r, i, p: physics_events(e, r, i, p) and [])

    def moved(self, routed: RoutedFrame, now: int) -> None:
        """Mirror the moves of a frame the shards stored."""
        movers, xyz = routed.moves
        if movers:
            self.engine._perception.placements.place(movers, xyz, now)

    def refresh(self, states: Sequence[TableState]) -> None:
        """Rebuild the mirror from the shards' placements (after a load or a reopen)."""
        metas = [meta for meta, _ in states]
        cols: list[dict[str, Any]] = [dict(arrays) for _, arrays in states]
        keys = [k for meta in metas for k in meta["keys"]]
        if not keys:
            return
        merged = {name: np.concatenate([c[name] for c in cols]) for name in cols[0]}
        order = sorted(range(len(keys)), key=lambda n: keys[n])
        self.engine._perception.placements.set_state(
            {"keys": [keys[n] for n in order], "used": True},
            {name: arr[order] for name, arr in merged.items()})
