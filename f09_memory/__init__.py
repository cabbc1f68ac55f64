"""f09_memory: a deterministic, rate-aware, multi-layer memory engine for agents.

A short tour:

>>> from f09_memory import MemoryEngine, MemoryConfig, RetrievalRequest, bundle_hash
>>> engine = MemoryEngine(MemoryConfig(), seed=0)
>>> _ = engine.ingest("npc-1", "Saw the smith at the well.", importance=0.4, now=1_000)
>>> _ = engine.ingest("npc-1", "The smith owes me 3 gold!", importance=0.9, tags=["debt"],
...                   now=1_500)
>>> bundle = engine.retrieve(
...     RetrievalRequest(agent_id="npc-1", purpose="dialog", max_tokens=400), now=2_000)
>>> [r.content for r in bundle.records]
['The smith owes me 3 gold!', 'Saw the smith at the well.']
>>> bundle.total_tokens, bundle.truncated
(14, False)
>>> engine.set_pressure("throttle")
>>> engine.retrieve(RetrievalRequest(agent_id="npc-1", purpose="dialog", max_tokens=400),
...                 now=2_000).diagnostics.compression_applied
True
>>> len(bundle_hash(bundle)), len(engine.state_hash())
(64, 64)
"""

from f09_memory.bus import EVENT_NAMES, EngineBus, EventLog, SocialChanged
from f09_memory.config import (
    EventRule,
    MemoryConfig,
    PerceptionSettings,
    PressureProfile,
    RetentionPolicy,
    ScoreWeights,
    TickCosts,
)
from f09_memory.core.records import IngestedRecords
from f09_memory.engine import DEFAULT_EMBEDDER, DefaultEmbedder, MemoryEngine, TickReport
from f09_memory.errors import (
    CapacityExceededError,
    ConfigInvalidError,
    EmbeddingFailedError,
    EmbeddingUnavailableError,
    ErrorCode,
    InputInvalidError,
    MemoryEngineError,
    RecordNotFoundError,
    RedactionPatternInvalidError,
    RetentionViolationError,
    RetrievalEmptyError,
    SnapshotInvalidError,
    StorageFailedError,
    SummaryFailedError,
    SummaryLockedError,
    TokenBudgetUndefinedError,
)
from f09_memory.ingestion.claims import Claim, ClaimOutcome
from f09_memory.ingestion.typed_extraction import TypedExtractionPrompt, TypedExtractionResult
from f09_memory.introspection import (
    AgentStats,
    CandidateExplanation,
    EngineStats,
    Explanation,
    FieldChange,
    Introspector,
    MemoryDiff,
    MemorySnapshot,
    RecordChange,
    RecordView,
    ScoreTerm,
)
from f09_memory.json_types import JsonValue
from f09_memory.maintenance import TickBacklog
from f09_memory.observability import (
    AgentMetrics,
    MetricsCollector,
    MetricsSnapshot,
    TickPoint,
    attach_log_tags,
    render_prometheus,
)
from f09_memory.perception import EngineEvent
from f09_memory.procedural import Procedure
from f09_memory.protocols import (
    EmbeddingProvider,
    LLMClient,
    PressureSource,
    TokenCounter,
    VectorIndex,
)
from f09_memory.retrieval.digest import RetrievedBundles, bundle_hash
from f09_memory.schema import (
    MemoryLayer,
    MemoryRecord,
    PressureState,
    Purpose,
    RecordMetadata,
    RetrievalDiagnostics,
    RetrievalRequest,
    RetrievedBundle,
    Strategy,
    SummarizationTask,
    TaskStatus,
)
from f09_memory.social import Interaction, Opinion
from f09_memory.spatial import Nearby, NearbyRecords, PhysicsEvent
from f09_memory.summarization.outcome import SummaryOutcome

__version__ = "0.1.0"

__all__ = [
    "AgentMetrics",
    "AgentStats",
    "CandidateExplanation",
    "CapacityExceededError",
    "Claim",
    "ClaimOutcome",
    "ConfigInvalidError",
    "DEFAULT_EMBEDDER",
    "DefaultEmbedder",
    "EVENT_NAMES",
    "EmbeddingFailedError",
    "EmbeddingProvider",
    "EmbeddingUnavailableError",
    "EngineBus",
    "EngineEvent",
    "EngineStats",
    "ErrorCode",
    "EventLog",
    "EventRule",
    "Explanation",
    "FieldChange",
    "IngestedRecords",
    "InputInvalidError",
    "Interaction",
    "Introspector",
    "JsonValue",
    "LLMClient",
    "MemoryConfig",
    "MemoryDiff",
    "MemoryEngine",
    "MemoryEngineError",
    "MemoryLayer",
    "MemoryRecord",
    "MemorySnapshot",
    "MetricsCollector",
    "MetricsSnapshot",
    "Nearby",
    "NearbyRecords",
    "Opinion",
    "PerceptionSettings",
    "PhysicsEvent",
    "PressureProfile",
    "PressureSource",
    "PressureState",
    "Procedure",
    "Purpose",
    "RecordChange",
    "RecordMetadata",
    "RecordNotFoundError",
    "RecordView",
    "RedactionPatternInvalidError",
    "RetentionPolicy",
    "RetentionViolationError",
    "RetrievalDiagnostics",
    "RetrievalEmptyError",
    "RetrievalRequest",
    "RetrievedBundle",
    "RetrievedBundles",
    "ScoreTerm",
    "ScoreWeights",
    "SnapshotInvalidError",
    "SocialChanged",
    "StorageFailedError",
    "Strategy",
    "SummarizationTask",
    "SummaryFailedError",
    "SummaryLockedError",
    "SummaryOutcome",
    "TaskStatus",
    "TickBacklog",
    "TickCosts",
    "TickPoint",
    "TickReport",
    "TokenBudgetUndefinedError",
    "TokenCounter",
    "TypedExtractionPrompt",
    "TypedExtractionResult",
    "VectorIndex",
    "attach_log_tags",
    "bundle_hash",
    "render_prometheus",
]
