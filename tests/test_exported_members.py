from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil

import f09_memory

PUBLIC = {
    "EVENT_NAMES", "EmbeddingProvider", "EngineBus", "ErrorCode", "EventLog", "LLMClient",
    "MemoryConfig", "MemoryEngine", "MemoryEngineError", "MemoryLayer", "MemoryRecord",
    "PressureProfile", "PressureSource", "PressureState", "Procedure", "Purpose", "RecordMetadata",
    "RetentionPolicy", "RetrievalDiagnostics", "RetrievalRequest", "RetrievedBundle",
    "RetrievedBundles", "ScoreWeights", "Strategy", "SummarizationTask", "TaskStatus",
    "TickBacklog", "TickCosts", "TickReport",
    "TokenCounter", "VectorIndex", "bundle_hash",
    # what public signatures use, every error class, the default-embedder sentinel
    "CapacityExceededError", "Claim", "ClaimOutcome", "ConfigInvalidError", "DEFAULT_EMBEDDER",
    "DefaultEmbedder", "EmbeddingFailedError", "EmbeddingUnavailableError", "IngestedRecords",
    "InputInvalidError", "RecordNotFoundError", "RedactionPatternInvalidError",
    "RetentionViolationError", "RetrievalEmptyError", "SnapshotInvalidError", "StorageFailedError",
    "SummaryFailedError", "SummaryLockedError", "SummaryOutcome", "TokenBudgetUndefinedError",
    "TypedExtractionPrompt", "TypedExtractionResult",
    "EngineEvent", "EventRule", "PerceptionSettings",
    # the social layer (index 15)
    "Interaction", "Opinion", "SocialChanged",
    # the spatial layer (index 16)
    "Nearby", "NearbyRecords", "PhysicsEvent",
    # the JSON value type of error details and to_json_dict forms (QG1: no Any)
    "JsonValue",
    # observability (index 20)
    "AgentMetrics", "MetricsCollector", "MetricsSnapshot", "TickPoint", "attach_log_tags",
    "render_prometheus",
    # introspection (index 17)
    "AgentStats", "CandidateExplanation", "EngineStats", "Explanation", "FieldChange",
    "Introspector", "MemoryDiff", "MemorySnapshot", "RecordChange", "RecordView", "ScoreTerm",
}


def test_top_level_all_is_exactly_the_public_api() -> None:
    assert PUBLIC == set(f09_memory.__all__)
    assert sorted(f09_memory.__all__) == list(f09_memory.__all__)


def test_every_module_declares_all_and_documents_its_exports() -> None:
    for info in pkgutil.walk_packages(f09_memory.__path__, "f09_memory."):
        module = importlib.import_module(info.name)
        assert module.__doc__, f"{info.name} has no docstring"
        names = getattr(module, "__all__", None)
        assert names is not None, f"{info.name} lacks __all__"
        for name in names:
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                assert getattr(obj, "__doc__", None), f"{info.name}.{name} has no docstring"


def test_the_package_docstring_tour_runs() -> None:
    result = doctest.testmod(f09_memory, raise_on_error=False)
    assert result.attempted > 5 and 0 == result.failed
    from f09_memory import engine

    assert 0 == doctest.testmod(engine).failed
