"""engine.nearby and engine.ingest_physics: answers, bad input, save/load, durable reopen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from f09_memory import InputInvalidError, MemoryConfig, MemoryEngine, Nearby
from f09_memory.testing import capture_events

PLACES = [("well", 0, 0), ("oak", 3, 4), ("smithy", -3, 4), ("gate", 10, 0), ("cave", 0, 30)]


def village(**config: Any) -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(**config), seed=3, embedder=None)
    engine.ingest_many("npc", [
        {"content": f"The {name}.", "layer": "spatial",
         "metadata": {"spatial": {"x": x, "y": y, "region": "village"}}}
        for name, x, y in PLACES], now=0)
    engine.ingest("npc", "Heard a rumour.", now=1)  # no position
    return engine


def names(found: list[Nearby]) -> list[str]:
    return [n.record.content.removeprefix("The ").rstrip(".") for n in found]


def test_nearby_is_the_k_nearest_within_the_radius_ties_by_id() -> None:
    engine = village()
    found = engine.nearby("npc", (0, 0), radius=5, k=10)
    assert names(found) == ["well", "oak", "smithy"]  # oak and smithy tie at 5: id order
    assert [n.distance for n in found] == [0.0, 5.0, 5.0]
    assert names(engine.nearby("npc", (0, 0, 0), radius=100, k=2)) == ["well", "oak"]
    assert engine.nearby("npc", (50, 50), radius=1, k=3) == []
    assert names(engine.nearby("npc", (3, 4), radius=0, k=3)) == ["oak"]
    engine._check()


def test_nearby_respects_ttl_layer_and_removals() -> None:
    engine = village()
    engine.ingest("npc", "A fire.", layer="episodic", ttl=10,
                  metadata={"spatial": {"x": 0, "y": 1}}, now=5)
    assert names(engine.nearby("npc", (0, 0), radius=2, k=5, now=6)) == ["well", "A fire"]
    assert names(engine.nearby("npc", (0, 0), radius=2, k=5, now=15)) == ["well"]
    assert names(engine.nearby("npc", (0, 0), radius=2, k=5, layer="episodic", now=6)) == [
        "A fire"]
    engine.forget(["npc:0000000000"])
    assert names(engine.nearby("npc", (0, 0), radius=5, k=5, layer="spatial")) == [
        "oak", "smithy"]
    engine.ingest("npc", "The well.", layer="spatial",  # reuses the freed slot
                  metadata={"spatial": {"x": 100, "y": 100}})
    assert names(engine.nearby("npc", (100, 100), radius=1, k=5)) == ["well"]
    assert names(engine.nearby("npc", (0, 0), radius=1, k=5, layer="spatial")) == []


def test_an_unknown_agent_has_nothing_nearby() -> None:
    engine = village()
    before = engine.state_hash()
    assert engine.nearby("stranger", (0, 0), radius=5, k=3) == []
    assert engine.state_hash() == before
    assert engine.agents() == ["npc"]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"position": (0,)}, "position"),
    ({"position": (0, 0, 0, 0)}, "position"),
    ({"position": (float("nan"), 0)}, "position"),
    ({"position": (0, float("inf"))}, "position"),
    ({"position": "0,0"}, "position"),
    ({"position": (True, 0)}, "position"),
    ({"radius": -1.0}, "radius"),
    ({"radius": float("inf")}, "radius"),
    ({"radius": "5"}, "radius"),
    ({"k": 0}, "k"),
    ({"k": 2.5}, "k"),
    ({"layer": "attic"}, "layer"),
    ({"now": -1}, "now"),
    ({"agent_id": ""}, "agent_id"),
])
def test_bad_nearby_input_names_its_field_and_changes_nothing(kwargs: dict[str, Any],
                                                              field: str) -> None:
    engine = village()
    before = engine.state_hash()
    args: dict[str, Any] = {"agent_id": "npc", "position": (0, 0), "radius": 5.0, "k": 3}
    args.update(kwargs)
    with pytest.raises(InputInvalidError) as info:
        engine.nearby(args.pop("agent_id"), args.pop("position"), **args)
    assert field in info.value.message or info.value.details.get("field") == field
    assert engine.state_hash() == before


def test_physics_events_make_records_through_the_writer() -> None:
    engine = MemoryEngine(MemoryConfig(), seed=1, embedder=None)
    with capture_events(engine.bus) as events:
        made = engine.ingest_physics([
            {"kind": "collision", "agent_id": "a", "position": [2, 2], "contact_class": "fire"},
            {"kind": "collision", "agent_id": "a", "position": [2, 3], "contact_class": "fire"},
            {"kind": "movement", "agent_id": "b", "position": [5, 5],
             "from_region": "forest", "to_region": "town"},
            {"kind": "movement", "agent_id": "b", "position": [6, 5], "region": "town"},
        ], now=10)
    assert made.ids == ["a:0000000000", "b:0000000000"]
    assert len(events.of("memory:record:created")) == 2
    assert engine.contact_count("a", "fire") == 2 and engine.contact_count("a", "ice") == 0
    crossing = engine.get("b:0000000000")
    assert crossing.metadata.spatial is not None and crossing.metadata.spatial.region == "town"
    assert names(engine.nearby("a", (2, 2), radius=1, k=3)) == ["Touched fire for the first time"]
    again = engine.ingest_physics([{"kind": "collision", "agent_id": "a", "position": [0, 0],
                                    "contact_class": "fire"}], now=20)
    assert len(again) == 0 and engine.contact_count("a", "fire") == 3
    engine._check()


def test_a_rejected_physics_batch_changes_nothing() -> None:
    engine = MemoryEngine(MemoryConfig(max_records_per_agent=1), embedder=None)
    before = engine.state_hash()
    fire = {"kind": "collision", "agent_id": "a", "position": [0, 0], "contact_class": "fire"}
    with pytest.raises(InputInvalidError, match=r"events\[1\]"):
        engine.ingest_physics([fire, {"kind": "collision", "agent_id": "a"}], now=1)
    with pytest.raises(Exception, match="max_records_per_agent"):
        engine.ingest_physics([fire, dict(fire, contact_class="ice")], now=1)
    assert engine.state_hash() == before and engine.contact_count("a", "fire") == 0


def test_region_and_contact_class_are_redacted() -> None:
    engine = MemoryEngine(MemoryConfig(redaction_key="k" * 32), embedder=None)
    mail = "zq-marker-77@example.org"
    engine.ingest("a", "A house.", layer="spatial",
                  metadata={"spatial": {"x": 0, "y": 0, "region": mail}})
    engine.ingest_physics([{"kind": "collision", "agent_id": "a", "position": [0, 0],
                            "contact_class": mail}], now=1)
    assert mail not in repr(engine.records("a"))
    assert mail not in repr(engine._state.tables["spatial.contacts"].get_state())
    assert engine.contact_count("a", mail) == 1  # looked up by its redacted form


def spatial_workload(engine: MemoryEngine) -> None:
    engine.ingest_many("npc", [{"content": f"Spot {i}.", "layer": "spatial",
                                "metadata": {"spatial": {"x": i % 7, "y": i // 7}}}
                               for i in range(40)], now=0)
    engine.ingest_physics([
        {"kind": "collision", "agent_id": "npc", "position": [1, 1], "contact_class": "wall"},
        {"kind": "boundary", "agent_id": "npc", "position": [2, 2], "to_region": "yard"},
        {"kind": "collision", "agent_id": "cat", "position": [3, 1], "contact_class": "wall"},
    ], now=5)
    engine.forget(["npc:0000000003"])


def answers(engine: MemoryEngine) -> list[Any]:
    near = [(n.record.id, n.distance) for n in engine.nearby("npc", (3, 2), radius=3, k=8)]
    request = {"agent_id": "npc", "purpose": "navigation", "limit": 6, "position": [3, 2]}
    nav = [r.id for r in engine.retrieve(request, now=10).records]
    return [near, nav, engine.contact_count("npc", "wall"), engine.contact_count("cat", "wall")]


def test_save_load_keeps_the_hash_and_the_answers(tmp_path: Path) -> None:
    engine = MemoryEngine(MemoryConfig(), seed=2, embedder=None)
    spatial_workload(engine)
    path = engine.save(tmp_path / "snap.f09")
    loaded = MemoryEngine.load(path, embedder=None)
    assert loaded.state_hash() == engine.state_hash()
    assert answers(loaded) == answers(engine)
    wall = {"kind": "collision", "agent_id": "npc", "position": [0, 0], "contact_class": "wall"}
    assert len(loaded.ingest_physics([wall], now=20)) == 0  # not new after a load
    loaded._check()


def test_a_durable_engine_reopens_with_the_same_state(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    live = MemoryEngine.open(db, MemoryConfig(), seed=2, embedder=None)
    spatial_workload(live)
    expected, hashed = answers(live), live.state_hash()
    assert live._durable is not None
    live._durable.log.close()  # as a killed process: no checkpoint
    reopened = MemoryEngine.open(db, embedder=None)
    assert reopened.state_hash() == hashed
    assert answers(reopened) == expected
    reopened._check()
    reopened.close()


def test_the_state_hash_follows_the_contact_table() -> None:
    engine = MemoryEngine(MemoryConfig(spatial={"ingest_first_contact": False}), embedder=None)
    start = engine.state_hash()
    event = {"kind": "collision", "agent_id": "a", "position": [0, 0], "contact_class": "x"}
    assert len(engine.ingest_physics([event], now=1)) == 0  # no record, a table row
    first = engine.state_hash()
    engine.ingest_physics([event], now=2)
    assert len({start, first, engine.state_hash()}) == 3


def test_a_snapshot_without_regions_or_contacts_loads_unchanged(tmp_path: Path) -> None:
    engine = MemoryEngine(MemoryConfig(), seed=2, embedder=None)
    engine.ingest("a", "Old place.", layer="spatial", metadata={"spatial": {"x": 1, "y": 1}})
    manifest = engine.save(tmp_path / "old.f09")
    loaded = MemoryEngine.load(manifest, embedder=None)
    assert "spatial.contacts" not in str(loaded._snapshot_bytes()[:4096])
    assert loaded.state_hash() == engine.state_hash()
    assert [n.record.id for n in loaded.nearby("a", (1, 1), radius=1, k=1)] == ["a:0000000000"]


@pytest.mark.parametrize("region", ["", "x" * 5_000, "bad\ud800"])
def test_a_bad_region_is_refused_at_ingest(region: str) -> None:
    engine = MemoryEngine(MemoryConfig(max_attribute_chars=4_096), embedder=None)
    before = engine.state_hash()
    with pytest.raises(InputInvalidError, match="region"):
        engine.ingest("a", "A place.", metadata={"spatial": {"x": 0, "y": 0, "region": region}})
    assert engine.state_hash() == before
