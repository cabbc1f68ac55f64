"""Argument checks shared by the facade and its services: one copy each (base layer).

Each raises :class:`~f09_memory.errors.InputInvalidError` naming the field and the fix.
"""

from __future__ import annotations

import math

import numpy as np

from f09_memory.errors import InputInvalidError
from f09_memory.schema.enums import MemoryLayer

__all__ = ["MAX_LOGICAL_TIME", "check_budget_ms", "check_now", "parse_layer"]

MAX_LOGICAL_TIME = 2**62
"""Logical time must stay below this, so ``now + ttl`` and deadlines fit in int64."""

_LAYER_BY_VALUE = {layer.value: layer for layer in MemoryLayer}


def check_now(now: object, what: str = "now") -> int:
    """Return ``now`` as an int if it is logical time (a non-negative integer below 2**62).

    Raises:
        InputInvalidError: Not an integer, negative, or too large.
    """
    if type(now) is int and 0 <= now < MAX_LOGICAL_TIME:  # the common case, checked first
        return now
    if isinstance(now, bool) or not isinstance(now, int | np.integer) or not (
            0 <= now < MAX_LOGICAL_TIME):
        raise InputInvalidError(
            f"{what} is not logical time (got {type(now).__name__}): pass a non-negative "
            "integer below 2**62 (ms or ticks)",
            details={"field": what},
        )
    return int(now)


def check_budget_ms(budget_ms: object, per_ms: int) -> int | None:
    """Work units for a tick budget of ``budget_ms`` milliseconds (``None``: unbounded).

    Raises:
        InputInvalidError: Not a positive finite number.
    """
    if budget_ms is None:
        return None
    if isinstance(budget_ms, bool) or not isinstance(budget_ms, int | float) or not (
            0 < budget_ms < 1e12) or (isinstance(budget_ms, float) and math.isnan(budget_ms)):
        raise InputInvalidError("budget_ms must be a positive number of milliseconds (below "
                                "1e12), or None for an unbounded tick",
                                details={"field": "budget_ms"})
    return max(1, int(budget_ms * per_ms))


def parse_layer(layer: object) -> MemoryLayer:
    """The layer named by ``layer`` (a MemoryLayer or its string value).

    Raises:
        InputInvalidError: Not a layer.
    """
    if isinstance(layer, MemoryLayer):
        return layer
    found = _LAYER_BY_VALUE.get(layer) if isinstance(layer, str) else None
    if found is None:
        raise InputInvalidError(
            f"layer is unknown; use one of {[x.value for x in MemoryLayer]}",
            details={"field": "layer"})
    return found
