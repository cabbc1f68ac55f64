"""Retention (index 13): per-layer caps and incremental compaction under a work budget.

Modules: ``policy`` (CAPPED_LAYERS, layer_caps, check_policy: caps versus the protected
minimum), ``compaction`` (Compactor: vectorized victim selection by importance-decayed score,
budgeted ``compact_slice``; CompactionCursor; CompactionResult; REMOVAL_COST_UNITS),
``sweep`` (compact_store: a budgeted, resumable pass over every agent; AgentCompaction,
StoreCompaction). TTL expiry is the engine's tick; the episodic layer is bounded by its ring.
The functions here remove records and report them; the engine emits the events.
"""

from f09_memory.retention.compaction import (
    REMOVAL_COST_UNITS,
    CompactionCursor,
    CompactionResult,
    Compactor,
)
from f09_memory.retention.policy import CAPPED_LAYERS, check_policy, layer_caps
from f09_memory.retention.sweep import AgentCompaction, StoreCompaction, compact_store

__all__ = [
    "CAPPED_LAYERS",
    "REMOVAL_COST_UNITS",
    "AgentCompaction",
    "CompactionCursor",
    "CompactionResult",
    "Compactor",
    "StoreCompaction",
    "check_policy",
    "compact_store",
    "layer_caps",
]
