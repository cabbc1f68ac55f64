"""RetrievalRequest.query_vector: a query embedded elsewhere, validated before serving."""

from __future__ import annotations

import math

import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, bundle_hash
from f09_memory.embedding import HashingEmbedder
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.testing import capture_events


def _engine() -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(embedding_dim=32), embedder=HashingEmbedder(32))
    for agent in ("a", "b"):
        engine.ingest_many(agent, ["the smith forged a sword", "bread at the market",
                                   "a storm over the river", "the guard lost his key"], now=0)
    return engine


def _req(agent: str, **kw: object) -> RetrievalRequest:
    return RetrievalRequest(agent_id=agent, purpose="dialog", max_tokens=200,
                            strategy="semantic", **kw)


def test_a_precomputed_vector_ranks_like_the_query_text() -> None:
    engine = _engine()
    vector = tuple(float(x) for x in HashingEmbedder(32).embed(["sword smith"])[0])
    by_text = engine.retrieve(_req("a", query="sword smith"), now=1)
    by_vector = engine.retrieve(_req("a", query_vector=vector), now=1)
    assert bundle_hash(by_text) == bundle_hash(by_vector)
    assert "sword" in by_vector.records[0].content
    crowd = engine.retrieve_many([_req("a", query_vector=vector), _req("b", query="storm")],
                                 now=1)
    assert bundle_hash(crowd[0]) == bundle_hash(by_vector)
    assert bundle_hash(crowd[1]) == bundle_hash(engine.retrieve(_req("b", query="storm"),
                                                                now=1))


def test_a_wrong_dimension_is_refused_before_any_bundle_is_built() -> None:
    engine = _engine()
    with capture_events(engine.bus, "memory:retrieval") as log, \
            pytest.raises(MemoryEngineError) as info:
        engine.retrieve_many([_req("a", query="storm"), _req("b", query_vector=(1.0,) * 8)],
                             now=1)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert "request 1" in info.value.message and "32-dimensional" in info.value.message
    assert [] == list(log.events)
    with pytest.raises(MemoryEngineError):
        engine.retrieve(_req("a", query_vector=(1.0,) * 31), now=1)


@pytest.mark.parametrize("vector", [(1.0, math.nan), (math.inf, 0.0), (1.0,), ("x", 1.0)])
def test_a_vector_that_is_not_finite_numbers_is_refused(vector: tuple[object, ...]) -> None:
    with pytest.raises(MemoryEngineError) as info:
        RetrievalRequest.parse({"agent_id": "a", "purpose": "dialog", "max_tokens": 10,
                                "query_vector": vector})
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
