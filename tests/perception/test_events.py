"""Engine events: routing by kind, perceivers, positions, all-or-nothing, persistence, privacy."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.perception import EngineEvent, render_text

SECRET_MAIL = "zq-marker-91@example.org"


def crowd(**perception: Any) -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(perception=perception) if perception else None, seed=3)
    engine.place({"near-b": (2, 0), "near-a": (0, 2), "far": (40, 0), "mid": (0, -3)}, now=0)
    return engine


def by_agent(records: Any) -> dict[str, Any]:
    return {r.agent_id: r for r in records}


def test_parties_and_witnesses_remember_with_their_roles() -> None:
    engine = crowd()
    got = engine.ingest_events([{"kind": "combat", "actor": "hero", "target": "troll",
                                 "position": (0, 0), "payload": {"weapon": "axe"}}], now=5)
    # the parties first, then witnesses nearest first, equal distances in id order
    assert ["hero", "troll", "near-a", "near-b", "mid"] == [r.agent_id for r in got]
    roles = {r.agent_id: r.metadata.attributes["eventRole"] for r in got}
    assert {"hero": "actor", "troll": "target", "near-a": "witness"}.items() <= roles.items()
    rec = by_agent(got)
    assert 0.8 == rec["hero"].importance and 0.4 == rec["near-a"].importance  # discounted
    mid = rec["mid"].metadata
    assert "combat" == mid.source_event and ["danger"] == list(mid.tags)
    assert "combat: hero -> troll (weapon=axe)" == rec["troll"].content
    assert (0.0, 0.0, 0.0) == (rec["hero"].metadata.spatial.x, rec["hero"].metadata.spatial.y,
                               rec["hero"].metadata.spatial.z)
    assert engine.count("far") == 0


def test_social_kinds_name_the_other_party_and_the_sentiment() -> None:
    engine = crowd()
    got = by_agent(engine.ingest_event({"kind": "speech", "actor": "bob", "target": "alice",
                                        "text": "You cheated me.", "position": [1, 1],
                                        "payload": {"sentiment": -0.75}}, now=1))
    assert "alice" == got["bob"].metadata.social.other_agent_id
    assert "bob" == got["alice"].metadata.social.other_agent_id == got[
        "near-a"].metadata.social.other_agent_id
    assert -0.75 == got["alice"].metadata.social.sentiment
    assert {r.layer.value for r in got.values()} == {"social"}


def test_max_perceivers_caps_a_crowd_scene() -> None:
    engine = crowd(max_perceivers=2)
    got = engine.ingest_event({"kind": "combat", "actor": "hero", "position": (0, 0)}, now=1)
    assert ["hero", "near-a", "near-b"] == [r.agent_id for r in got]


def test_perception_uses_frame_start_positions_and_the_last_move_wins() -> None:
    engine = crowd()
    got = engine.ingest_events([
        {"kind": "combat", "actor": "scout", "position": (100, 100)},
        {"kind": "combat", "actor": "hero", "position": (100, 101)},  # scout not yet placed
        {"kind": "observation", "actor": "scout", "position": (7, 7), "text": "A quiet road."},
    ], now=2)
    assert ["scout", "hero", "scout"] == [r.agent_id for r in got]
    assert (7.0, 7.0, 0.0) == engine.position_of("scout")
    got = engine.ingest_event({"kind": "combat", "actor": "hero", "position": (7, 8)}, now=3)
    assert "scout" in {r.agent_id for r in got}


def test_a_kind_without_a_rule_is_refused_unless_a_default_rule_is_set() -> None:
    engine = crowd()
    before = engine.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        engine.ingest_events([{"kind": "combat", "actor": "hero"},
                              {"kind": "dance", "actor": "hero"}], now=1)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert "events[1]" in info.value.message and "default_rule" in info.value.message
    assert before == engine.state_hash() and 0 == engine.count("hero")
    engine = crowd(default_rule={"layer": "system", "perceivers": ["actor"]},
                   rules={"dance": {"layer": "episodic", "tags": ["fun"]}})
    got = engine.ingest_events([{"kind": "dance", "actor": "hero", "target": "bard"},
                                {"kind": "sneeze", "actor": "hero", "target": "bard"}], now=1)
    assert [("hero", "episodic"), ("bard", "episodic"), ("hero", "system")] == [
        (r.agent_id, r.layer.value) for r in got]
    assert ["fun"] == list(got[0].metadata.tags)


BAD_EVENTS = [
    pytest.param({"kind": "Combat!", "actor": "a"}, id="kind-pattern"),
    pytest.param({"kind": "combat"}, id="nobody"),
    pytest.param({"kind": "combat", "actor": "a", "target": "a"}, id="self-target"),
    pytest.param({"kind": "combat", "actor": "a", "position": (float("nan"), 0)}, id="nan"),
    pytest.param({"kind": "combat", "actor": "a", "position": (1, 2, 3, 4)}, id="4d"),
    pytest.param({"kind": "combat", "actor": "a", "payload": {"x": [1]}}, id="payload-list"),
    pytest.param({"kind": "combat", "actor": "a", "importance": 2}, id="importance"),
    pytest.param({"kind": "combat", "actor": "", "target": "b"}, id="empty-id"),
    pytest.param({"kind": "combat", "actor": "a", "colour": "red"}, id="unknown-field"),
    pytest.param({"kind": "combat", "actor": "a", "position": (1e13, 0)}, id="far-away"),
    pytest.param({"kind": "combat", "actor": f"{SECRET_MAIL}"}, id="private-id"),
    pytest.param("combat", id="not-a-mapping"),
]


@pytest.mark.parametrize("bad", BAD_EVENTS)
def test_a_bad_event_refuses_the_frame_and_changes_nothing(bad: Any,
                                                           caplog: Any) -> None:
    engine = crowd()
    before = engine.state_hash()
    with caplog.at_level(logging.DEBUG, logger="f09_memory"), pytest.raises(
            MemoryEngineError) as info:
        engine.ingest_events([{"kind": "combat", "actor": "ok", "position": (0, 0)}, bad],
                             now=1)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert "events[1]" in info.value.message or "agent_id" in info.value.message
    assert before == engine.state_hash() and 0 == engine.count("ok")
    assert engine.position_of("ok") is None
    assert SECRET_MAIL not in str(info.value) + str(info.value.details) + caplog.text


@pytest.mark.parametrize("events", ["combat", {"kind": "combat"}, 7, None])
def test_events_must_be_a_list(events: Any) -> None:
    with pytest.raises(MemoryEngineError) as info:
        crowd().ingest_events(events, now=1)
    assert "list of EngineEvent" in info.value.message


@pytest.mark.parametrize("positions", [
    {"a": (1,)}, {"a": "north"}, {"": (1, 2)}, {"a": (float("inf"), 1)}, [("a", (1, 2))],
    {"a": (2e12, 0)}, {SECRET_MAIL: (0, 0)},
])
def test_place_refuses_bad_positions_and_places_nobody(positions: Any) -> None:
    engine = MemoryEngine(seed=1)
    engine.place({"keep": (1, 1)}, now=0)
    before = engine.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        engine.place({"z-first": (0, 0), **positions} if isinstance(positions, dict)
                     else positions, now=1)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert before == engine.state_hash() and engine.position_of("z-first") is None
    assert SECRET_MAIL not in str(info.value) + str(info.value.details)


def test_private_text_and_payload_are_redacted_before_storage_and_events() -> None:
    engine = crowd()
    seen: list[str] = []
    engine.bus.subscribe("*", lambda ev: seen.append(repr(ev)))
    got = engine.ingest_event({"kind": "speech", "actor": "bob", "target": "alice",
                               "text": f"Write to me at {SECRET_MAIL}.",
                               "payload": {"contact": SECRET_MAIL}}, now=1)
    dumped = [r.model_dump_json() for r in got]
    assert all(SECRET_MAIL not in d for d in dumped) and all(r.redacted for r in got)
    assert SECRET_MAIL not in "".join(seen)


def test_render_text_is_deterministic() -> None:
    event = EngineEvent(kind="trade", actor="a", target="b", payload={"z": 1, "item": "ale"})
    assert "trade: a -> b (item=ale, z=1)" == render_text(event)
    assert "only text" == render_text(event.model_copy(update={"text": "only text"}))


def test_positions_are_state_saved_hashed_and_journaled(tmp_path: Path) -> None:
    engine = crowd()
    engine.ingest_event({"kind": "combat", "actor": "hero", "position": (1, 1)}, now=1)
    moved = engine.state_hash()
    engine.place({"hero": (1, 1.5)}, now=2)
    assert moved != engine.state_hash()
    engine.save(tmp_path / "snap")
    loaded = MemoryEngine.load(tmp_path / "snap")
    assert engine.state_hash() == loaded.state_hash()
    assert (1.0, 1.5, 0.0) == loaded.position_of("hero")
    event = {"kind": "combat", "actor": "x", "position": (0, 1)}
    assert ([r.agent_id for r in engine.ingest_event(event, now=3)]
            == [r.agent_id for r in loaded.ingest_event(event, now=3)])

    db = tmp_path / "durable.db"
    live = MemoryEngine.open(db, seed=3)
    live.place({"w1": (0, 1), "w2": (5, 5)}, now=0)
    live.ingest_events([{"kind": "combat", "actor": "hero", "position": (0, 0)},
                        {"kind": "movement", "actor": "w2", "position": (30, 30)}], now=1)
    with pytest.raises(MemoryEngineError):  # a refused frame is undone, moves nobody
        live.ingest_events([{"kind": "movement", "actor": "w1", "position": (9, 9)},
                            {"kind": "nope", "actor": "w1"}], now=2)
    expected = live.state_hash()
    live.close()
    reopened = MemoryEngine.open(db)
    assert expected == reopened.state_hash()
    assert (30.0, 30.0, 0.0) == reopened.position_of("w2")
    assert (0.0, 1.0, 0.0) == reopened.position_of("w1")
    reopened._check()
    reopened.close()


def test_a_new_engine_state_hash_is_unchanged_by_the_unused_positions_table() -> None:
    a, b = MemoryEngine(seed=1), MemoryEngine(seed=1)
    a.ingest("npc", "hello", now=1)
    b.ingest("npc", "hello", now=1)
    b.place({}, now=1)
    assert a.state_hash() == b.state_hash()


def test_social_kinds_feed_the_ledger_mutually_and_gossip_as_hearsay() -> None:
    engine = crowd()
    engine.ingest_events([
        {"kind": "trade", "actor": "bob", "target": "ann", "payload": {"sentiment": 0.6}},
        {"kind": "speech", "actor": "bob", "target": "ann", "text": "Thanks!",
         "payload": {"sentiment": 0.9}},
        {"kind": "gossip", "actor": "ann", "target": "cid", "text": "Bob is honest.",
         "payload": {"about": "bob", "sentiment": 0.8}},
        {"kind": "speech", "actor": "cid", "text": "Hello, anyone?", "position": (0, 0)},
    ], now=10)
    ann, bob = engine.opinion("ann", "bob"), engine.opinion("bob", "ann")
    assert 2 == ann.count == bob.count and ann.sentiment == bob.sentiment > 0
    heard = engine.opinion("cid", "bob")
    assert 0 == heard.count and 1 == heard.hearsay_count and heard.sentiment > 0
    assert 0 == engine.opinion("cid", "ann").count  # cid only listened: no interaction
    assert 0 == engine.opinion("ann", "cid").count


@pytest.mark.parametrize("payload", [{"sentiment": 2}, {"sentiment": "good"},
                                     {"sentiment": float("nan")}])
def test_a_bad_sentiment_refuses_the_frame(payload: Any) -> None:
    engine = crowd()
    before = engine.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        engine.ingest_events([{"kind": "observation", "actor": "bob", "text": "Rain."},
                              {"kind": "trade", "actor": "bob", "target": "ann",
                               "payload": payload}], now=1)
    assert "events[1]" in info.value.message
    assert before == engine.state_hash() and 0 == engine.opinion("bob", "ann").count


@pytest.mark.parametrize("about", [None, "", "ann", "cid", 3])
def test_gossip_must_name_a_third_agent(about: Any) -> None:
    engine = crowd()
    payload = {} if about is None else {"about": about}
    with pytest.raises(MemoryEngineError) as info:
        engine.ingest_event({"kind": "gossip", "actor": "ann", "target": "cid",
                             "payload": payload}, now=1)
    assert "payload.about" in info.value.message and 0 == engine.count("cid")


def test_a_ledger_kind_the_social_settings_lack_is_a_config_error() -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig(perception={"rules": {"hug": {"ledger": "mutual", "ledger_kind": "hug"}}})
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    with pytest.raises(MemoryEngineError):
        MemoryConfig(social={"kind_weights": {"interaction": 1.0, "hearsay": 0.5}})  # trade


def test_physics_kinds_go_through_the_spatial_adapter_and_its_flags() -> None:
    engine = crowd()
    got = engine.ingest_events([
        {"kind": "movement", "actor": "hero", "position": (1, 1),
         "payload": {"fromRegion": "forest", "toRegion": "market"}},  # a crossing
        {"kind": "movement", "actor": "hero", "position": (2, 1),
         "payload": {"region": "market"}},  # plain movement: not remembered by default
        {"kind": "collision", "actor": "hero", "target": "cart", "position": (2, 2),
         "payload": {"contactClass": "wood"}},  # a first contact for both bodies
        {"kind": "collision", "actor": "hero", "position": (2, 3),
         "payload": {"contactClass": "wood"}},  # touched before (same frame)
    ], now=4)
    assert [("hero", "boundary"), ("hero", "first-contact"), ("cart", "first-contact")] == [
        (r.agent_id, r.metadata.tags[1]) for r in got]
    assert {"spatial"} == {r.layer.value for r in got}
    assert "market" == got[0].metadata.spatial.region
    assert 2 == engine.contact_count("hero", "wood") and 1 == engine.contact_count("cart", "wood")
    assert (2.0, 3.0, 0.0) == engine.position_of("hero")  # physics moves the actor too
    again = engine.ingest_event({"kind": "collision", "actor": "hero", "position": (0, 0),
                                 "payload": {"contactClass": "wood"}}, now=5)
    assert 0 == len(again) and 3 == engine.contact_count("hero", "wood")


@pytest.mark.parametrize("event", [
    {"kind": "collision", "actor": "hero", "payload": {"contactClass": "wood"}},  # where?
    {"kind": "collision", "actor": "hero", "position": (0, 0)},  # touched what?
    {"kind": "boundary", "actor": "hero", "position": (0, 0), "payload": {"toRegion": 3}},
])
def test_a_malformed_physics_event_refuses_the_frame(event: Any) -> None:
    engine = crowd()
    before = engine.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        engine.ingest_events([{"kind": "observation", "actor": "hero", "text": "Calm."}, event],
                             now=1)
    assert "events[1]" in info.value.message
    assert before == engine.state_hash() and 0 == engine.contact_count("hero", "wood")


def test_a_physics_rule_cannot_have_witnesses() -> None:
    with pytest.raises(MemoryEngineError):
        MemoryConfig(perception={"rules": {"bump": {"physics": "collision",
                                                    "perceivers": ["actor", "nearby"]}}})


def test_a_rule_that_does_not_place_the_actor_leaves_it_where_it_was() -> None:
    engine = crowd(rules={"sighting": {"layer": "spatial", "perceivers": ["actor"],
                                       "places_actor": False}})
    engine.place({"scout": (1, 1)}, now=0)
    got = engine.ingest_event({"kind": "sighting", "actor": "scout", "position": (30, 30),
                               "text": "Smoke far to the east."}, now=1)
    assert (30.0, 30.0) == (got[0].metadata.spatial.x, got[0].metadata.spatial.y)
    assert (1.0, 1.0, 0.0) == engine.position_of("scout")


def test_forgetting_an_agent_drops_its_opinions_and_placement_but_not_others_views(
        tmp_path: Path) -> None:
    db = tmp_path / "durable.db"
    engine = MemoryEngine.open(db, seed=3)
    engine.place({"bob": (1, 1), "ann": (2, 2)}, now=0)
    engine.ingest_events([{"kind": "trade", "actor": "bob", "target": "ann",
                           "payload": {"sentiment": 0.5}}], now=1)
    before = engine.state_hash()
    assert engine.forget(agent_id="bob") >= 1  # bob's records go
    assert 0 == engine.count("bob") and engine.position_of("bob") is None
    assert 0 == engine.opinion("bob", "ann").count and 1 == engine.opinion("ann", "bob").count
    assert (2.0, 2.0, 0.0) == engine.position_of("ann") and before != engine.state_hash()
    expected = engine.state_hash()
    engine.close()
    again = MemoryEngine.open(db)
    assert expected == again.state_hash() and again.position_of("bob") is None
    assert 0 == again.opinion("bob", "ann").count
    again._check()
    again.close()
