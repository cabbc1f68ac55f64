"""The village's frames: a pure function of the generator, every kind of item, valid input."""

from __future__ import annotations

from collections import Counter

import numpy as np

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.determinism.scenario import agent_names, village_frame, village_items

NAMES = agent_names(40)


def _frames(seed: int, ticks: int) -> list[list[dict[str, object]]]:
    rng = np.random.default_rng(seed)
    return [village_frame(rng, NAMES) for _ in range(ticks)]


def test_a_frame_is_a_pure_function_of_the_generator_state() -> None:
    assert _frames(5, 20) == _frames(5, 20)
    assert _frames(5, 20) != _frames(6, 20)


def test_frames_hold_every_kind_of_item_in_agent_order() -> None:
    items = [item for frame in _frames(1, 30) for item in frame]
    layers = Counter(str(item.get("layer", "episodic")) for item in items)
    assert set(layers) == {"episodic", "semantic", "procedural", "social", "spatial"}
    assert layers["episodic"] > len(items) / 2
    assert any("@village.example" in str(item["content"]) for item in items)
    assert any("4111 1111 1111" in str(item["content"]) for item in items)
    assert 0 < sum(1 for item in items if item.get("flagged")) < len(items) / 10
    assert 0.3 < sum(1 for item in items if "importance" in item) / len(items) < 0.7
    for frame in _frames(2, 10):  # 0-3 items per agent, agents in order
        per_agent = Counter(str(item["agent_id"]) for item in frame)
        assert max(per_agent.values(), default=0) <= 3
        owners = [NAMES.index(str(item["agent_id"])) for item in frame]
        assert owners == sorted(owners)


def test_one_agents_items_are_its_part_of_a_frame_without_the_agent_id() -> None:
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    for _ in range(10):
        alone = village_items(rng_a, NAMES, 7)
        framed = village_frame(rng_b, NAMES, [7])
        assert alone == [{k: v for k, v in item.items() if k != "agent_id"} for item in framed]
        assert all(item["agent_id"] == NAMES[7] for item in framed)


def test_an_empty_crowd_draws_an_empty_frame() -> None:
    assert village_frame(np.random.default_rng(0), NAMES, []) == []


def test_every_frame_is_accepted_by_the_engine() -> None:
    engine = MemoryEngine(MemoryConfig(), seed=0)
    stored = sum(len(engine.ingest_batch(frame, now=(t + 1) * 1_000))
                 for t, frame in enumerate(_frames(9, 15)))
    assert stored == sum(len(frame) for frame in _frames(9, 15))
