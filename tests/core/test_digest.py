"""The state hash splits by agent: engines holding parts of the agents add up to the whole."""

from __future__ import annotations

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.core.digest import HashParts, combine_parts, merge_parts
from f09_memory.determinism.scenario import LIFECYCLE_CONFIG, agent_names, village_items

AGENTS = agent_names(6)


def _play(engines: list[MemoryEngine], owner: dict[str, int], ticks: int) -> None:
    rng = np.random.default_rng(7)
    for tick in range(ticks):
        now = (tick + 1) * 10_000
        for i, name in enumerate(AGENTS):
            items = village_items(rng, AGENTS, i)
            other = AGENTS[(i + 1 + tick % 5) % len(AGENTS)]
            for engine in {id(e): e for e in (engines[0], engines[owner[name]])}.values():
                if items:
                    engine.ingest_many(name, items, now=now)
                engine.place({name: (float(i), float(tick))}, now=now)
                engine.interact(name, other, 0.5 - (tick % 3) * 0.4, now=now)
        for engine in engines:
            engine.tick(now, budget_ms=None)


def test_parts_of_engines_holding_some_agents_add_up_to_the_whole() -> None:
    config = MemoryConfig(**LIFECYCLE_CONFIG)
    whole, a, b = (MemoryEngine(config, seed=3) for _ in range(3))
    owner = {name: 1 + (i % 2) for i, name in enumerate(AGENTS)}
    _play([whole, a, b], owner, ticks=12)
    merged = merge_parts([a.state_hash_parts(), b.state_hash_parts()])
    assert whole.state_hash() == combine_parts(merged)
    assert whole.state_hash_parts() == merged
    assert {"perception.placements", "social"} <= set(merged.tables)
    assert merged.tasks > 0  # summarization state is part of it, split by agent


def test_the_hash_ignores_where_maintenance_resumes() -> None:
    engine = MemoryEngine(MemoryConfig(), seed=0)
    engine.ingest("a", "x", now=1)
    before = engine.state_hash()
    engine._state.tick_cursor = 5
    engine._state.compaction.agent_id = "zz"
    assert before == engine.state_hash()


def test_merging_parts_of_engines_that_do_not_share_their_state_is_refused() -> None:
    a, b = MemoryEngine(MemoryConfig(), seed=0), MemoryEngine(MemoryConfig(), seed=0)
    b.tick(5)
    with pytest.raises(ValueError, match="clock"):
        merge_parts([a.state_hash_parts(), b.state_hash_parts()])
    with pytest.raises(ValueError, match="no hash parts"):
        merge_parts([])
    assert combine_parts(HashParts(a.state_hash_parts().header)) == a.state_hash()


def test_batched_digests_equal_the_one_record_digest_of_each_record() -> None:
    """``refresh_digest`` packs many records' heads with numpy: each digest must be the one
    ``record_digest`` gives that record (tags, source events, sparse metadata, flags, TTLs,
    redaction, vectors, quantized importance)."""
    from f09_memory import Claim
    from f09_memory.store.digests import _digests, record_digest

    engine = MemoryEngine(MemoryConfig(embedding_dim=16), seed=1)
    engine.ingest_many("a", [
        {"content": "Saw the wolf by the mill.", "tags": ["wolf", "mill"], "importance": 0.1234567},
        {"content": "Card 4111 1111 1111 1111 was used.", "flagged": True, "ttl": 5_000},
        {"content": "Walked to the well.", "layer": "spatial",
         "metadata": {"spatial": {"x": 1.5, "y": -2.25}}, "source_event": "evt-1"},
        {"content": "Spoke with Bo; it went well.", "layer": "social",
         "metadata": {"social": {"otherAgentId": "b", "sentiment": 0.25}}},
        {"content": "naïve café \u2019s text", "importance": 0.5},
    ], now=10)
    engine.ingest_claim("a", "Budget is 5 gold.", Claim("project:mill", "budget_is", "5"), now=11)
    engine.forget([engine.records("a")[1].id])
    am = engine._state.store.get("a")
    assert am is not None
    slots = np.flatnonzero(am.alive[: am.hi])
    quantum = engine.config.score_quantum
    assert _digests(am, slots, quantum) == [record_digest(am, int(s), quantum) for s in slots]
    assert len(set(_digests(am, slots, quantum))) == len(slots) == 5
