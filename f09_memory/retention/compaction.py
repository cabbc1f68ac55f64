"""Compactor: prune capped layers down to their caps, in budgeted, resumable slices.

Which records go (per capped layer over its cap, ``excess = live - cap`` of them):

1. Every live record of the layer gets the spec's importance-decayed score
   ``importance * exp(-(now - anchor) / decay_half_life_ms)`` (section 12), quantized to an
   integer (``round(score * score_quantum)``) so a last-bit float difference cannot reorder.
2. The ``protected_min`` records ranking highest by ``(score, key)`` are protected: never
   pruned (the most important / most recent; on equal scores the newer key is kept).
3. The rest are pruned in ascending ``(flagged, score, key)`` order: unflagged records
   first, lowest score first, on equal scores the lower key (the older record) first. A
   flagged record is touched only when no unprotected unflagged record is left in the layer.

The order is total and each record's score depends only on itself and ``now``, so pruning
``a`` records and then ``b`` more (same ``now``) removes exactly what pruning ``a + b`` at
once would: budgeted slices end in the same state as one unbounded call.

Cost model (counted work units, never the wall clock): scoring a layer costs
``scan_cost_units`` plus one unit per live record of the agent when the slice starts (the
vectorized scan; live records, not slots, so a loaded engine, whose slots are compacted,
is charged the same), each removal ``removal_cost_units`` (default
:data:`REMOVAL_COST_UNITS`). Each layer step removes ``max(1, (left - scan) //
removal_cost_units)`` records while any budget is left, so compaction always makes
progress, even under a budget smaller than one removal; a slice overshoots its budget by
at most one scan and one removal. With ``strict=True`` (a tick that has already done
other work) a layer step starts only when its scan and one removal fit, and removes only
what fits: no overshoot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.config.config import MemoryConfig
from f09_memory.decay.decay import importance_decayed
from f09_memory.errors import InputInvalidError
from f09_memory.retention.policy import CAPPED_LAYERS, check_policy, layer_caps
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import Removed

__all__ = ["REMOVAL_COST_UNITS", "CompactionCursor", "CompactionResult", "Compactor"]

REMOVAL_COST_UNITS = 2_000
"""Work units one removal costs (a SortedList delete, slot and index bookkeeping, and the
event the engine emits): about 2,000x scanning one slot of a column (about 10 µs)."""

_NO_KEYS: NDArray[np.int64] = np.zeros(0, dtype=np.int64)


def _budget(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise InputInvalidError(
            f"{what}={value!r:.40} is not a budget: pass a non-negative integer of work units, "
            "or None for an unbounded pass",
            details={"field": what},
        )
    return int(value)


@dataclass(slots=True)
class CompactionCursor:
    """Where the next compaction slice resumes: an agent, and a layer within it.

    The position is kept by agent id (not list index), so agents created between calls
    neither shift it nor get skipped: the next pass resumes at the first agent whose id is
    ``>= agent_id``.

    Attributes:
        agent_id: The agent the next slice starts with; ``None`` means the first agent in
            id order (a fresh pass).
        layer_pos: Index into the compactor's capped layers (layer-code order) where that
            agent's compaction resumes; 0 when it has not started.
    """

    agent_id: str | None = None
    layer_pos: int = 0

    def reset(self) -> None:
        """Start over: the next slice begins a fresh pass at the first agent."""
        self.agent_id = None
        self.layer_pos = 0

    def get_state(self) -> dict[str, Any]:
        """Return a JSON-safe snapshot: ``{"agentId", "layerPos"}``.

        ``set_state(get_state())`` restores an equal cursor.
        """
        return {"agentId": self.agent_id, "layerPos": self.layer_pos}

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore a snapshot taken by :meth:`get_state`.

        Args:
            state: ``{"agentId": str | None, "layerPos": int >= 0}``.

        Raises:
            InputInvalidError: The snapshot is malformed (the cursor is left unchanged).
        """
        if not isinstance(state, Mapping) or set(state) != {"agentId", "layerPos"}:
            raise InputInvalidError(
                "a compaction cursor state is a mapping with exactly agentId and layerPos; "
                "pass what get_state() returned",
                details={"field": "state"},
            )
        agent_id, layer_pos = state["agentId"], state["layerPos"]
        if agent_id is not None and not isinstance(agent_id, str):
            raise InputInvalidError("agentId must be a string or null",
                                    details={"field": "agentId"})
        if isinstance(layer_pos, bool) or not isinstance(layer_pos, int) or layer_pos < 0:
            raise InputInvalidError("layerPos must be a non-negative integer",
                                    details={"field": "layerPos"})
        self.agent_id = agent_id
        self.layer_pos = layer_pos


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What one :meth:`Compactor.compact_slice` did.

    Attributes:
        removed_records: The pruned records, in pruning order (per layer in layer-code order,
            lowest rank first). The engine emits ``memory:record:expired`` (reason
            ``retention``) for each.
        scanned_units: Work units spent (scans plus removals).
        done: Whether every capped layer of the agent is now at or under its cap.
    """

    removed_records: list[Removed]
    scanned_units: int
    done: bool


class Compactor:
    """Selects and removes the records that bring an agent's capped layers back to their caps.

    Stateless apart from values derived from the config: the resumable position lives in a
    :class:`CompactionCursor`, so one compactor serves any number of agents and passes.

    Args:
        config: Supplies ``retention_policy`` (caps, ``protected_min``),
            ``decay_half_life_ms`` and ``score_quantum``.
        removal_cost_units: Work units one removal costs (default
            :data:`REMOVAL_COST_UNITS`).
        scan_cost_units: Work units each layer scan costs on top of one per slot (default 0).

    Raises:
        InputInvalidError: ``removal_cost_units`` is not a positive integer.
        RetentionViolationError: A cap is below ``protected_min`` (only possible for a
            config built without validation).
    """

    def __init__(self, config: MemoryConfig, *,
                 removal_cost_units: int = REMOVAL_COST_UNITS,
                 scan_cost_units: int = 0) -> None:
        cost = _budget(removal_cost_units, "removal_cost_units")
        if not cost:
            raise InputInvalidError("removal_cost_units must be a positive integer",
                                    details={"field": "removal_cost_units"})
        self.config = config
        self.removal_cost_units = cost
        self.scan_cost_units = _budget(scan_cost_units, "scan_cost_units") or 0
        self.protected_min = config.retention_policy.protected_min
        check_policy(config.retention_policy, protected_min=self.protected_min)
        caps = layer_caps(config.retention_policy)
        capped = [(layer.code, cap) for layer in CAPPED_LAYERS
                  if (cap := caps[layer]) is not None]
        self._codes = np.array([code for code, _ in capped], dtype=np.intp)
        self._caps = np.array([cap for _, cap in capped], dtype=np.int64)
        self._half_life = config.decay_half_life_ms
        self._quantum = float(config.score_quantum)

    @property
    def caps(self) -> tuple[NDArray[np.intp], NDArray[np.int64]]:
        """``(layer codes, caps)`` of the capped layers, as arrays in code order."""
        return self._codes, self._caps

    @property
    def capped_codes(self) -> tuple[int, ...]:
        """Layer codes with a cap, in the order slices visit them (``layer_pos`` indexes it)."""
        return tuple(int(c) for c in self._codes)

    def over_cap(self, am: AgentMemory) -> dict[int, int]:
        """Return ``{layer code: excess}`` for each capped layer of ``am`` above its cap.

        Runtime complexity: O(1) (vectorized over ``am.layer_counts``). Keys in code order.
        """
        excess = am.layer_counts[self._codes] - self._caps
        return {int(self._codes[i]): int(excess[i]) for i in np.flatnonzero(excess > 0)}

    def needs_compaction(self, am: AgentMemory) -> bool:
        """Whether any capped layer of ``am`` is above its cap. Runtime complexity: O(1)."""
        return bool((am.layer_counts[self._codes] > self._caps).any())

    def select(self, am: AgentMemory, code: int, now: int, count: int) -> NDArray[np.int64]:
        """Return the keys of the next ``count`` records to prune from layer ``code``.

        Follows the module's order (protected top ``protected_min``, then unflagged before
        flagged, lowest quantized decayed score first, lower key first). Removes nothing.

        Args:
            am: The agent's memory.
            code: A layer code (``MemoryLayer.code``).
            now: Logical time the scores are computed at.
            count: How many keys to return at most.

        Returns:
            Up to ``count`` keys (fewer when the layer has fewer unprotected records), in
            pruning order.

        Runtime complexity: O(hi + n log n) numpy for ``n`` live records of the layer.
        """
        hi = am.hi
        slots = np.flatnonzero(am.alive[:hi] & (am.layer[:hi] == code))
        n = int(slots.shape[0])
        unprotected = n - min(self.protected_min, n)
        count = min(count, unprotected)
        if count <= 0:
            return _NO_KEYS
        keys = am.key[slots]
        score = importance_decayed(am.importance[slots], am.anchor[slots], now, self._half_life)
        ranked = np.rint(score * self._quantum).astype(np.int64)
        order = np.lexsort((keys, ranked))[:unprotected]  # ascending; the top ones protected
        flagged = am.flagged[slots[order]]
        if flagged.any():  # stable: unflagged first, each group still by (score, key)
            order = order[np.argsort(flagged, kind="stable")]
        chosen: NDArray[np.int64] = keys[order[:count]]
        return chosen

    def compact_slice(self, am: AgentMemory, now: int, budget_units: int | None,
                      cursor: CompactionCursor, *, strict: bool = False) -> CompactionResult:
        """Prune ``am``'s capped layers toward their caps within ``budget_units``.

        Visits the capped layers cyclically from ``cursor.layer_pos`` (reset to 0 when the
        cursor names another agent), pruning each over-cap layer as far as the budget allows
        via ``am.remove``. Sets ``cursor.agent_id`` to this agent and ``cursor.layer_pos`` to
        where the next slice resumes (0 once done). Same state and same calls give the same
        removals.

        Args:
            am: The agent's memory (mutated).
            now: Logical time for the decayed scores.
            budget_units: Work units this slice may spend; ``None`` for unbounded. At most
                ``budget_units // removal_cost_units`` records are removed, and at least one
                whenever the budget is positive.
            cursor: The resumable position (mutated).
            strict: Start a layer only when its scan and one removal fit in what is left
                (default: the first removal is taken whenever any budget is left).

        Returns:
            The removed records, the units spent, and whether the agent is done.

        Raises:
            InputInvalidError: ``budget_units`` is negative or not an integer.

        Runtime complexity: O(layers x (hi + n log n)) numpy plus O(log n) per removal.
        """
        budget = _budget(budget_units, "budget_units")
        if cursor.agent_id != am.agent_id:
            cursor.agent_id = am.agent_id
            cursor.layer_pos = 0
        n_layers = int(self._codes.shape[0])
        start = cursor.layer_pos % n_layers if n_layers else 0
        cost = self.removal_cost_units
        removed: list[Removed] = []
        used = 0
        resume = 0
        scan = self.scan_cost_units + am.live  # the live records when the slice starts
        for step in range(n_layers):
            pos = (start + step) % n_layers
            code = int(self._codes[pos])
            excess = int(am.layer_counts[code] - self._caps[pos])
            if excess <= 0:
                continue
            take = excess
            if budget is not None:
                left = budget - used
                if left <= 0 or (strict and left < scan + cost):
                    resume = pos
                    break
                take = min(excess, max(1, (left - scan) // cost))
            victims = self.select(am, code, now, take).tolist()
            for key in victims:
                removed.append(am.remove(key))
            used += scan + len(victims) * cost
            if take < excess:
                resume = pos
                break
        done = not self.needs_compaction(am)
        cursor.layer_pos = 0 if done else resume
        return CompactionResult(removed_records=removed, scanned_units=used, done=done)
