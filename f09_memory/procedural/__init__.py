"""Procedural layer (index 14): a deterministic miner of action patterns.

Modules: ``actions`` (the action-record convention, canonical pattern text and
``pattern_id``), ``tables`` (PatternTable, CursorTable: the miner's state as
``core.tables.KeyedTable`` rows), ``pending`` (PendingQueue: the records not mined yet,
counted exactly and incrementally), ``miner`` (ProceduralMiner: the tick slice, the
procedural records, ``Procedure`` and the ``engine.procedures`` query).
"""

from f09_memory.procedural.actions import ActionStep, action_at, canonical_pattern, pattern_id
from f09_memory.procedural.miner import (
    MineReport,
    ProceduralMiner,
    Procedure,
    procedural_importance,
)
from f09_memory.procedural.pending import PendingActions, PendingQueue
from f09_memory.procedural.tables import CursorTable, PatternTable

__all__ = [
    "ActionStep",
    "CursorTable",
    "MineReport",
    "PatternTable",
    "PendingActions",
    "PendingQueue",
    "ProceduralMiner",
    "Procedure",
    "action_at",
    "canonical_pattern",
    "pattern_id",
    "procedural_importance",
]
