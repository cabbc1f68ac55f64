"""Argument checks shared by the facade and its services: one copy each (base layer).

Each raises :class:`~f09_memory.errors.InputInvalidError` naming the field and the rule, never
echoing the value (it may be private).

Logical time: every time a caller passes (``now``, ``tick(now)``, ``since``/``until``, a
claim's ``valid_to``) is an integer in ``0 .. 2**62 - 1`` (:data:`MAX_LOGICAL_TIME`), and
every duration (``ttl``, time-outs, windows, half-lives in the config) in ``1 .. 2**62 - 1``
(``0`` where the field allows it). So ``now + ttl`` and every deadline derived from a time
and a duration stays below ``2**63``: it fits the int64 columns, the hash and the snapshot.

Text: every string a caller stores (content, agent ids, tags, source events, attribute keys
and values, LLM replies) must be valid Unicode, encodable as UTF-8: a lone surrogate
(U+D800 to U+DFFF alone, which ``bytes.decode(errors="surrogateescape")`` produces) is rejected.
"""

from __future__ import annotations

import math

import numpy as np

from f09_memory.errors import InputInvalidError
from f09_memory.schema.enums import MemoryLayer

__all__ = [
    "MAX_LOGICAL_TIME",
    "check_budget_ms",
    "check_duration",
    "check_now",
    "is_text",
    "not_text",
    "parse_layer",
    "too_long",
]

MAX_LOGICAL_TIME = 2**62
"""Logical times and durations stay below this, so ``now + ttl`` and deadlines fit in int64."""

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


def check_duration(value: object, what: str) -> int:
    """Return ``value`` as an int if it is a duration (a positive integer below 2**62).

    Raises:
        InputInvalidError: Not an integer, not positive, or too large.
    """
    if type(value) is int and 0 < value < MAX_LOGICAL_TIME:
        return value
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not (
            0 < value < MAX_LOGICAL_TIME):
        raise InputInvalidError(
            f"{what} is not a duration (got {type(value).__name__}): pass a positive integer "
            "below 2**62 (ms or ticks)",
            details={"field": what},
        )
    return int(value)


def check_budget_ms(budget_ms: object, per_ms: int) -> int | None:
    """Work units for a tick budget of ``budget_ms`` milliseconds (``None``: unbounded).

    Raises:
        InputInvalidError: Not a positive finite number below 1e12.
    """
    if budget_ms is None:
        return None
    if isinstance(budget_ms, bool) or not isinstance(budget_ms, int | float) or not (
            0 < budget_ms < 1e12) or (isinstance(budget_ms, float) and math.isnan(budget_ms)):
        raise InputInvalidError("budget_ms must be a positive number of milliseconds (below "
                                "1e12), or None for an unbounded tick",
                                details={"field": "budget_ms"})
    return max(1, int(budget_ms * per_ms))


def is_text(value: str) -> bool:
    """Whether the str ``value`` is valid Unicode text (no lone surrogate). O(len)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def not_text(what: str) -> InputInvalidError:
    """The error for a string holding a lone surrogate (not encodable as UTF-8)."""
    return InputInvalidError(
        f"{what} is not valid Unicode text (it holds a lone surrogate code point): decode "
        "bytes with errors='replace', or strip the surrogates, before passing them",
        details={"field": what, "rule": "utf-8 text"})


def too_long(what: str, size: int, limit: int, config_field: str | None,
             unit: str = "characters") -> InputInvalidError:
    """The error for a string or collection past its size limit (naming the config field)."""
    fix = (f"shorten it, or raise MemoryConfig.{config_field}" if config_field
           else "shorten it")
    return InputInvalidError(
        f"{what} has {size} {unit}, above the limit of {limit}: {fix}",
        details={"field": what, "size": size, "limit": limit,
                 **({"configField": config_field} if config_field else {})})


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
