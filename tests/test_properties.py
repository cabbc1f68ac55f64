"""Property tests of the public API: any input works or raises a MemoryEngineError with a
taxonomy code, and a rejected call leaves the state hash unchanged."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from f09_memory import MemoryConfig, MemoryEngine, MemoryEngineError, RetrievalRequest
from f09_memory.errors import ErrorCode

anything = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=True),
    st.text(max_size=30), st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
layers = st.one_of(st.sampled_from(["episodic", "semantic", "social", "spatial",
                                    "procedural", "system"]), anything)


def base_engine() -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(episodic_max=20))
    engine.ingest_many("a", [f"memory {i}" for i in range(5)], now=10)
    return engine


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agent=st.one_of(st.text(max_size=8), anything), content=st.one_of(st.text(), anything),
       layer=layers, importance=st.one_of(st.floats(-1, 2), anything),
       tags=anything, ttl=anything, now=st.one_of(st.integers(-3, 10**9), anything))
def test_ingest_either_stores_or_rejects_cleanly(
    agent: Any, content: Any, layer: Any, importance: Any, tags: Any, ttl: Any, now: Any
) -> None:
    engine = base_engine()
    before = engine.state_hash()
    try:
        rec = engine.ingest(agent, content, layer=layer, importance=importance, tags=tags,
                            ttl=ttl, now=now)
    except MemoryEngineError as exc:
        assert isinstance(exc.code, ErrorCode)
        assert before == engine.state_hash()
    else:
        assert rec == engine.get(rec.id)
        assert 0.0 <= rec.importance <= 1.0
    engine._check()


@settings(max_examples=150, deadline=None)
@given(data=st.dictionaries(
    st.sampled_from(["agentId", "agent_id", "purpose", "maxTokens", "strategy",
                     "pressureState", "query", "bogus"]),
    st.one_of(st.sampled_from(["a", "dialog", "reasoning", "semantic", "throttle"]),
              st.integers(-10, 5000), anything), max_size=6))
def test_retrieve_either_answers_within_budget_or_rejects_cleanly(data: dict[str, Any]) -> None:
    engine = base_engine()
    before = engine.state_hash()
    try:
        bundle = engine.retrieve(data, now=20)
    except MemoryEngineError as exc:
        assert isinstance(exc.code, ErrorCode)
    else:
        req = RetrievalRequest.parse(data)
        assert req.max_tokens is not None
        assert bundle.total_tokens <= req.max_tokens
    assert before == engine.state_hash()
