"""Retrieval purpose navigation blends proximity to RetrievalRequest.position into the score."""

from __future__ import annotations

from typing import Any

import pytest

from f09_memory import (
    InputInvalidError,
    MemoryConfig,
    MemoryEngine,
    PressureState,
    Purpose,
    RetrievalRequest,
    Strategy,
    bundle_hash,
)
from f09_memory.retrieval.scoring import effective_weights
from f09_memory.testing import FakeEmbedder


def engine_with_places(places: int = 8, **config: Any) -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(**config), seed=4, embedder=FakeEmbedder(16))
    for agent in ("a", "b"):
        engine.ingest_many(agent, [
            {"content": f"Place {i} of {agent}.", "layer": "spatial", "importance": 0.5,
             "metadata": {"spatial": {"x": 10.0 * i, "y": 0.0}}} for i in range(places)], now=0)
        engine.ingest(agent, f"A thought of {agent}.", layer="semantic", importance=0.5, now=0)
    return engine


def nav(agent: str, position: list[float] | None = None, **extra: Any) -> dict[str, Any]:
    return {"agent_id": agent, "purpose": "navigation", "limit": 4, "position": position,
            **extra}


def test_the_nearest_place_ranks_first_and_follows_the_position() -> None:
    engine = engine_with_places()
    first = [r.content for r in engine.retrieve(nav("a", [0, 0]), now=1).records]
    assert first[:2] == ["Place 0 of a.", "Place 1 of a."]
    moved = [r.content for r in engine.retrieve(nav("a", [70, 1]), now=1).records]
    assert moved[:2] == ["Place 7 of a.", "Place 6 of a."]
    breakdown = engine.retrieve(nav("a", [0, 0]), now=1).diagnostics.scoring_breakdown
    assert [c.key for c in breakdown] == ["importance", "recency", "semantic", "structural",
                                          "proximity"]
    assert abs(sum(c.weight for c in breakdown) - 1.0) < 1e-8


def test_without_a_position_the_weights_are_the_four_term_ones_bit_for_bit() -> None:
    config = MemoryConfig()
    for purpose in Purpose:
        for strategy in Strategy:
            for semantic in (True, False):
                four = effective_weights(config, purpose, strategy, PressureState.SOFT, semantic)
                assert four.shape == (4,)
                if config.scoring.proximity[purpose] == 0.0:
                    five = effective_weights(config, purpose, strategy, PressureState.SOFT,
                                             semantic, positioned=True)
                    assert five[:4].tolist() == four.tolist() and five[4] == 0.0
    engine = engine_with_places()
    plain = engine.retrieve(nav("a"), now=1)
    assert [c.key for c in plain.diagnostics.scoring_breakdown] == [
        "importance", "recency", "semantic", "structural"]


def test_a_position_without_proximity_weight_leaves_the_order_alone() -> None:
    engine = engine_with_places()
    dialog = {"agent_id": "a", "purpose": "dialog", "limit": 6}
    plain = [r.id for r in engine.retrieve(dialog, now=1).records]
    placed = [r.id for r in engine.retrieve(dict(dialog, position=[70, 0]), now=1).records]
    assert placed == plain


def test_the_weight_is_configurable_and_renormalized() -> None:
    tables = {"proximity": {p.value: (5.0 if p is Purpose.NAVIGATION else 0.0)
                            for p in Purpose}}
    engine = engine_with_places(scoring=tables)
    bundle = engine.retrieve(nav("a", [30, 0]), now=1)
    assert bundle.records[0].content == "Place 3 of a."
    assert bundle.diagnostics.scoring_breakdown[4].weight > 0.8


def test_retrieve_many_gives_the_bundles_of_retrieve_one_by_one() -> None:
    engine = engine_with_places()
    frame = [nav("a", [0, 0]), nav("b"), nav("b", [35, 2], query="place"),
             {"agent_id": "a", "purpose": "dialog", "limit": 3, "position": [1, 1]},
             nav("a", [5, 5], strategy="recency"), nav("stranger", [0, 0])]
    alone = [bundle_hash(engine.retrieve(r, now=2)) for r in frame]
    assert [bundle_hash(b) for b in engine.retrieve_many(frame, now=2)] == alone
    unplaced = [dict(r, position=None) for r in frame]
    alone = [bundle_hash(engine.retrieve(r, now=2)) for r in unplaced]
    assert [bundle_hash(b) for b in engine.retrieve_many(unplaced, now=2)] == alone


def test_a_preselected_large_agent_scores_proximity_too() -> None:
    small = engine_with_places(40)
    large = engine_with_places(40, semantic_preselect_threshold=2, semantic_preselect_k=2,
                               semantic_preselect_min_ratio=0, exact_index_max=4)
    large.tick(1, budget_ms=50.0)  # builds the agents' vector indexes
    assert all(am.index is not None for am in large._state.store)
    request = nav("a", [260, 0], query="place", limit=2)
    expected = [r.id for r in small.retrieve(request, now=3).records]
    assert [r.id for r in large.retrieve(request, now=3).records] == expected
    assert [r.id for r in large.retrieve_many([request], now=3)[0].records] == expected


@pytest.mark.parametrize("position", [[1.0], [1, 2, 3, 4], [float("nan"), 0], "here",
                                      [float("inf"), 0]])
def test_a_bad_position_is_refused_naming_the_field(position: Any) -> None:
    engine = engine_with_places()
    before = engine.state_hash()
    with pytest.raises(InputInvalidError, match="position"):
        engine.retrieve(nav("a", position), now=1)
    with pytest.raises(InputInvalidError, match="position"):
        RetrievalRequest.parse(nav("a", position))
    assert engine.state_hash() == before
