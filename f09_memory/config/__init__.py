"""Config (index 2): MemoryConfig, its scoring and pressure tables, and ``MEMORY_*`` env reading.

Modules: ``config`` (MemoryConfig, RetentionPolicy, ImportanceSettings,
TickCosts), ``perception`` (EventRule, PerceptionSettings: engine-event routing),
``social`` (SocialSettings), ``spatial`` (SpatialSettings), ``tables``
(ScoreWeights, PressureProfile, ScoringTables and their defaults), ``env`` (MemoryEnv, the
variable map ENV_FIELDS, read_env), ``procedural`` (ProceduralSettings).

``env`` is imported from its module (``from f09_memory.config.env import MemoryEnv``), not
from this package: it loads pydantic-settings, which only ``MemoryConfig.from_env`` needs,
so a program that never reads the environment does not pay for it at start-up.
"""

from f09_memory.config.config import ImportanceSettings, MemoryConfig, RetentionPolicy, TickCosts
from f09_memory.config.perception import DEFAULT_EVENT_RULES, EventRule, PerceptionSettings
from f09_memory.config.procedural import ProceduralSettings
from f09_memory.config.social import SocialSettings
from f09_memory.config.spatial import SpatialSettings
from f09_memory.config.tables import (
    CompressionStrategy,
    PressureProfile,
    ScoreWeights,
    ScoringTables,
    SummarizationMode,
)

__all__ = [
    "DEFAULT_EVENT_RULES",
    "CompressionStrategy",
    "EventRule",
    "ImportanceSettings",
    "MemoryConfig",
    "PerceptionSettings",
    "PressureProfile",
    "ProceduralSettings",
    "RetentionPolicy",
    "ScoreWeights",
    "ScoringTables",
    "SocialSettings",
    "SpatialSettings",
    "SummarizationMode",
    "TickCosts",
]
