from __future__ import annotations

import pytest

from f09_memory import MemoryRecord, RetrievalRequest, SummarizationTask
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.schema import MemoryLayer, Purpose, RecordMetadata, RetrievedBundle, Strategy
from f09_memory.schema.base import build_models, trusted, trusted_factory


def record(**over: object) -> MemoryRecord:
    data: dict[str, object] = dict(
        id="npc:0000000001", layer="social", agent_id="npc", created_at=10, importance=0.5,
        recency_anchor=10, ttl=100, embedding_ref="e1", tokens_estimate=3, content="hi",
        metadata={"tags": ["t"], "sourceEvent": "ev", "sourceRefIds": ["x"],
                  "spatial": {"x": 1, "y": 2, "z": 3},
                  "social": {"otherAgentId": "b", "sentiment": -0.5},
                  "procedural": {"patternId": "p", "successRate": 0.25}},
        redacted=True, hash="h",
    )
    data.update(over)
    return MemoryRecord(**data)  # type: ignore[arg-type]


def test_record_json_matches_the_spec_interface_field_for_field() -> None:
    js = record().to_json_dict()
    assert ["id", "layer", "agentId", "createdAt", "importance", "recencyAnchor", "ttl",
            "embeddingRef", "tokensEstimate", "content", "metadata", "redacted",
            "hash"] == list(js)
    assert {"tags": ["t"], "sourceEvent": "ev", "sourceRefIds": ["x"],
            "spatial": {"x": 1.0, "y": 2.0, "z": 3.0},
            "social": {"otherAgentId": "b", "sentiment": -0.5},
            "procedural": {"patternId": "p", "successRate": 0.25},
            "flagged": False, "attributes": {}} == js["metadata"]


def test_record_round_trips_through_camel_case_json() -> None:
    rec = record()
    assert rec == MemoryRecord.parse(rec.to_json_dict())


def test_records_are_immutable() -> None:
    rec = record()
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen-instance error
        rec.content = "changed"  # type: ignore[misc]


@pytest.mark.parametrize("over", [
    {"importance": 1.5}, {"importance": float("nan")}, {"layer": "dream"},
    {"metadata": {"social": {"sentiment": 2}}}, {"metadata": {"unknown": 1}},
    {"content": 5},
])
def test_bad_record_fields_raise_input_invalid(over: dict[str, object]) -> None:
    with pytest.raises(MemoryEngineError) as info:
        record(**over)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code


def test_request_accepts_both_spellings_and_defaults_to_balanced() -> None:
    a = RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=10)
    b = RetrievalRequest.parse({"agentId": "a", "purpose": "dialog", "maxTokens": 10})
    assert a == b
    assert Strategy.BALANCED == a.strategy
    assert {"agentId": "a", "purpose": "dialog", "maxTokens": 10,
            "strategy": "balanced"} == a.to_json_dict()


@pytest.mark.parametrize("tokens", [0, -5, 1.5, "100", True])
def test_bad_budget_raises_token_budget_undefined(tokens: object) -> None:
    with pytest.raises(MemoryEngineError) as info:
        RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=tokens)  # type: ignore[arg-type]
    assert ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED == info.value.code


@pytest.mark.parametrize("over", [{"purpose": "gossip"}, {"agent_id": ""},
                                  {"strategy": "random"}, {"pressure_state": "panic"}])
def test_bad_request_fields_raise_input_invalid(over: dict[str, object]) -> None:
    data: dict[str, object] = {"agent_id": "a", "purpose": "dialog", "max_tokens": 5, **over}
    with pytest.raises(MemoryEngineError) as info:
        RetrievalRequest(**data)  # type: ignore[arg-type]
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert "RetrievalRequest" in info.value.message


def test_bundle_and_task_json_use_spec_names() -> None:
    bundle = RetrievedBundle.parse({
        "records": [], "totalTokens": 0, "truncated": False, "strategyApplied": "balanced",
        "diagnostics": {"candidateCount": 0, "filteredCount": 0,
                        "scoringBreakdown": [{"key": "importance", "weight": 1.0}],
                        "timeMs": 0.1, "compressionApplied": False},
    })
    assert {"records", "totalTokens", "truncated", "strategyApplied",
            "diagnostics"} == set(bundle.to_json_dict())
    task = SummarizationTask(id="t1", agent_id="a", target_layer="semantic",
                             source_ids=["a:0000000001"], created_at=5)
    assert {"id": "t1", "agentId": "a", "targetLayer": "semantic",
            "sourceIds": ["a:0000000001"], "createdAt": 5,
            "status": "queued"} == task.to_json_dict()


def test_trusted_construction_equals_validated_model() -> None:
    rec = record()
    assert rec == trusted(MemoryRecord, dict(rec.__dict__))
    meta = RecordMetadata(tags=("a",))
    assert meta == trusted(RecordMetadata, dict(meta.__dict__))
    made = trusted_factory(MemoryRecord)(dict(rec.__dict__))
    assert rec == made
    assert rec.model_fields_set == made.model_fields_set
    assert rec.model_dump() == made.model_dump()


def test_layer_codes_are_dense_and_stable() -> None:
    assert list(range(6)) == [layer.code for layer in MemoryLayer]
    assert {"reasoning", "dialog", "navigation", "summary"} == {p.value for p in Purpose}


def test_boundary_models_are_built_by_the_engine_not_at_first_use_in_a_frame() -> None:
    # BoundaryModel defers each model's build; constructing an engine builds every model
    # imported so far, so no first retrieval or ingest inside a frame pays for one.
    import subprocess
    import sys

    code = (
        "from f09_memory.schema.base import BoundaryModel\n"
        "from f09_memory.schema.retrieval import RetrievalRequest\n"
        "from f09_memory import MemoryEngine\n"
        "assert not RetrievalRequest.__pydantic_complete__\n"
        "MemoryEngine()\n"
        "pending, seen = [BoundaryModel], 0\n"
        "while pending:\n"
        "    model = pending.pop(); seen += 1\n"
        "    assert model.__pydantic_complete__, model\n"
        "    pending.extend(model.__subclasses__())\n"
        "assert seen > 30, seen\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_build_models_is_idempotent_and_models_still_refuse_bad_input() -> None:
    build_models()
    build_models()
    with pytest.raises(MemoryEngineError) as err:
        RetrievalRequest(agent_id="", purpose="dialog", max_tokens=10)
    assert err.value.code == ErrorCode.MEMORY_INPUT_INVALID
