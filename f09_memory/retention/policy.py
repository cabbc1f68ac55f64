"""Retention policy helpers: per-layer caps as a table, and the protected-minimum check.

``MemoryConfig`` already refuses a cap below ``retention_policy.protected_min`` when it is
built; :func:`check_policy` runs the same check against any minimum (a host that wants a
stricter floor, or a policy built without validation).
"""

from __future__ import annotations

from f09_memory.config.config import RetentionPolicy
from f09_memory.errors import RetentionViolationError
from f09_memory.schema.enums import MemoryLayer

__all__ = ["CAPPED_LAYERS", "check_policy", "layer_caps"]

CAPPED_LAYERS: tuple[MemoryLayer, ...] = (
    MemoryLayer.SEMANTIC,
    MemoryLayer.PROCEDURAL,
    MemoryLayer.SOCIAL,
)
"""The layers a ``RetentionPolicy`` can cap, in layer-code order (the order compaction visits
them). Episodic is bounded by the ring (``episodic_max``); spatial and system are uncapped."""

_FIELD = {
    MemoryLayer.SEMANTIC: "semantic_max",
    MemoryLayer.PROCEDURAL: "procedural_max",
    MemoryLayer.SOCIAL: "social_max",
}


def layer_caps(policy: RetentionPolicy) -> dict[MemoryLayer, int | None]:
    """Return the live-record cap of every layer under ``policy``.

    Args:
        policy: The retention policy (``MemoryConfig.retention_policy``).

    Returns:
        One entry per :class:`MemoryLayer`, in layer-code order: the cap, or ``None`` for an
        uncapped layer. Episodic is always ``None`` here (the ring bounds it), as are
        spatial and system.

    Runtime complexity: O(1).
    """
    caps: dict[MemoryLayer, int | None] = {}
    for layer in MemoryLayer:
        name = _FIELD.get(layer)
        caps[layer] = None if name is None else getattr(policy, name)
    return caps


def check_policy(policy: RetentionPolicy, *, protected_min: int) -> None:
    """Check that no cap of ``policy`` is below ``protected_min``.

    Args:
        policy: The retention policy to check.
        protected_min: Records each capped layer must be able to keep (compaction never
            prunes a layer below it).

    Raises:
        RetentionViolationError: A cap is below ``protected_min`` (MEMORY_RETENTION_VIOLATION);
            the message and ``details`` name the layer (the first in layer-code order), its
            cap and the minimum.

    Runtime complexity: O(1).
    """
    for layer, cap in layer_caps(policy).items():
        if cap is not None and cap < protected_min:
            field = _FIELD[layer]
            raise RetentionViolationError(
                f"the {layer.value} layer's cap {field}={cap} is below the protected minimum "
                f"{protected_min}: raise {field} to at least {protected_min} or lower the "
                "minimum",
                details={"field": f"retention_policy.{field}", "layer": layer.value,
                         "cap": cap, "protectedMin": protected_min},
            )
