"""Config (index 2): MemoryConfig, its scoring and pressure tables, and ``MEMORY_*`` env reading.

Modules: ``config`` (MemoryConfig, RetentionPolicy, ImportanceSettings,
TickCosts), ``tables``
(ScoreWeights, PressureProfile, ScoringTables and their defaults), ``env`` (MemoryEnv, the
variable map), ``procedural`` (ProceduralSettings).
"""

from f09_memory.config.config import ImportanceSettings, MemoryConfig, RetentionPolicy, TickCosts
from f09_memory.config.env import ENV_FIELDS, MemoryEnv
from f09_memory.config.procedural import ProceduralSettings
from f09_memory.config.tables import (
    CompressionStrategy,
    PressureProfile,
    ScoreWeights,
    ScoringTables,
    SummarizationMode,
)

__all__ = [
    "ENV_FIELDS",
    "CompressionStrategy",
    "ImportanceSettings",
    "MemoryConfig",
    "MemoryEnv",
    "PressureProfile",
    "ProceduralSettings",
    "RetentionPolicy",
    "ScoreWeights",
    "ScoringTables",
    "SummarizationMode",
    "TickCosts",
]
