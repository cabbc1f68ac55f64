"""snapshot, record_view and stats: ordering, paging, versions, counts, bad arguments."""

from __future__ import annotations

import math
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.errors import InputInvalidError, RecordNotFoundError
from f09_memory.introspection import MemorySnapshot, RecordView


def village() -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(episodic_window=0, summarization_min_interval_ms=0,
                                       summarization_batch_size=3,
                                       summarization_keep_recent=1), seed=1, embedder=None)
    for agent in ("mara", "bo", "ada"):
        for i in range(5):
            engine.ingest(agent, f"{agent} saw {i}", now=100 * (i % 3), importance=i / 5,
                          tags=["t"] if i % 2 else None, ttl=500 if i == 4 else None,
                          source_event="ev" if i == 1 else None)
    engine.ingest("ada", "a place", layer="spatial", now=50)
    return engine


def test_records_are_ordered_by_agent_then_newest_first_and_pages_cut_that_order() -> None:
    engine = village()
    snap = engine.introspection.snapshot()
    keys = [(r.agent_id, -r.created_at, r.id) for r in snap.records]
    assert [k[0] for k in keys] == sorted(k[0] for k in keys)
    assert keys == sorted(keys, key=lambda k: (k[0], k[1], [-ord(c) for c in k[2]]))
    assert snap.total == 16 == len(snap.records) == engine.count()
    assert (snap.version, snap.offset, snap.limit, snap.now) == (1, 0, None, 0)
    pages = [engine.introspection.snapshot(limit=3, offset=k) for k in range(0, 18, 3)]
    assert [r.id for p in pages for r in p.records] == [r.id for r in snap.records]
    assert {p.total for p in pages} == {16} and [p.version for p in pages] == list(range(2, 8))
    assert engine.introspection.snapshot(offset=40).records == []
    one = engine.introspection.snapshot("bo", layer="episodic", limit=2, offset=1)
    assert (one.agent_id, one.layer, one.total) == ("bo", "episodic", 5)
    assert [r.id for r in one.records] == [r.id for r in snap.records if r.agent_id == "bo"][1:3]
    assert engine.introspection.snapshot("ada", layer="spatial").total == 1
    assert engine.introspection.snapshot("nobody").total == 0
    assert engine.introspection.version == 11


def test_a_view_holds_the_stored_values() -> None:
    engine = village()
    engine.tick(1_000)  # ttl 500 from created 100: the record expired and was swept
    record = engine.records("mara")[0]
    view = engine.introspection.record_view(record.id)
    assert isinstance(view, RecordView)
    assert (view.id, view.agent_id, view.content, view.layer) == (
        record.id, "mara", record.content, record.layer)
    assert (view.importance, view.created_at, view.recency_anchor) == (
        record.importance, record.created_at, record.recency_anchor)
    assert view.recency == pytest.approx(math.exp(-(1_000 - record.recency_anchor)
                                                  / engine.config.decay_half_life_ms))
    assert (view.ttl, view.expires_at, view.status) == (None, None, "active")
    assert len(view.digest) == 32 and int(view.digest, 16) >= 0
    timed = engine.ingest("mara", "short lived", ttl=70, source_event="door", now=1_000)
    short = engine.introspection.record_view(timed.id)
    assert (short.ttl, short.expires_at, short.source_event) == (70, 1_070, "door")
    again = engine.introspection.record_view(record.id)
    assert again.digest == view.digest
    engine.update(record.id, importance=0.99)
    assert engine.introspection.record_view(record.id).digest != view.digest
    data = view.model_dump(by_alias=True, mode="json")
    assert list(data) == ["id", "agentId", "layer", "content", "importance", "recency",
                          "createdAt", "recencyAnchor", "ttl", "expiresAt", "tags", "status",
                          "tokensEstimate", "redacted", "sourceEvent", "digest"]
    assert RecordView.parse(data) == view


def test_stats_count_agents_layers_pending_summaries_and_pressure() -> None:
    engine = village()
    engine.set_pressure("soft")
    engine.tick(1_000)  # schedules summaries (window 0, batches of 3)
    engine.introspection.snapshot("bo")
    stats = engine.introspection.stats()
    assert (stats.now, stats.pressure_state, stats.version) == (1_000, "soft", 1)
    assert stats.agents == 3 and [a.agent_id for a in stats.per_agent] == ["ada", "bo", "mara"]
    assert stats.records == engine.count() == sum(a.records for a in stats.per_agent)
    assert stats.by_layer["spatial"] == 1 and set(stats.by_layer) == {
        "episodic", "semantic", "procedural", "social", "spatial", "system"}
    for agent in stats.per_agent:
        assert agent.records == engine.count(agent.agent_id)
        assert agent.by_layer["episodic"] == engine.count(agent.agent_id, "episodic")
        assert agent.pending_summaries == len(engine.summarization.pending(agent.agent_id))
    assert sum(a.pending_summaries for a in stats.per_agent) == len(
        engine.summarization.pending()) > 0


BAD_SNAPSHOTS: list[tuple[dict[str, Any], str]] = [
    ({"agent_id": ""}, "agent_id"), ({"agent_id": 7}, "agent_id"),
    ({"layer": "dreams"}, "layer"), ({"limit": 0}, "limit"), ({"limit": -1}, "limit"),
    ({"limit": 2.5}, "limit"), ({"limit": True}, "limit"), ({"offset": -1}, "offset"),
    ({"offset": "3"}, "offset"), ({"redact": 1}, "redact"), ({"redact": None}, "redact"),
]


@pytest.mark.parametrize(("kwargs", "field"), BAD_SNAPSHOTS)
def test_bad_snapshot_arguments_name_the_field_and_take_no_capture(
        kwargs: dict[str, Any], field: str) -> None:
    engine = village()
    before = (engine.state_hash(), engine.introspection.version)
    with pytest.raises(InputInvalidError) as err:
        engine.introspection.snapshot(**kwargs)
    assert err.value.details["field"] == field
    assert before == (engine.state_hash(), engine.introspection.version)


@pytest.mark.parametrize("rid", ["mara:0000000999", "nobody:0000000000", "mara", 5, None,
                                 "mara:12"])
def test_record_view_of_no_live_record_is_not_found(rid: Any) -> None:
    engine = village()
    with pytest.raises(RecordNotFoundError) as err:
        engine.introspection.record_view(rid)
    assert err.value.details["field"] == "record_id"


SNAPSHOT_SCOPES: list[dict[str, Any]] = [
    {}, {"agent_id": "ada"}, {"layer": "spatial"}, {"agent_id": "bo", "layer": "episodic"},
    {"limit": 3, "offset": 2}, {"offset": 40}, {"agent_id": "nobody"}, {"redact": False},
]


@pytest.mark.parametrize("kwargs", SNAPSHOT_SCOPES)
def test_snapshot_data_is_the_snapshot_in_json_form(kwargs: dict[str, Any]) -> None:
    engine = village()
    engine.ingest("ada", "Card 4111 1111 1111 1111 and ada@example.com", now=300,
                  importance=0.123456)
    engine.tick(450)  # recency below 1, a ttl record gone
    data = engine.introspection.snapshot_data(**kwargs)
    snap = engine.introspection.snapshot(**kwargs)
    assert data.pop("version") + 1 == snap.version  # each takes a capture
    expected = snap.model_dump(mode="json", by_alias=True)
    expected.pop("version")
    assert data == expected and list(data) == list(expected)
    assert [list(row) for row in data["records"]] == [list(row) for row in expected["records"]]


def test_snapshot_data_refuses_what_snapshot_refuses() -> None:
    engine = village()
    for kwargs, field in BAD_SNAPSHOTS:
        before = (engine.state_hash(), engine.introspection.version)
        with pytest.raises(InputInvalidError) as err:
            engine.introspection.snapshot_data(**kwargs)
        assert err.value.details["field"] == field
        assert before == (engine.state_hash(), engine.introspection.version)


def test_a_snapshot_round_trips_through_its_json() -> None:
    snap = village().introspection.snapshot("ada")
    assert MemorySnapshot.parse(snap.model_dump(by_alias=True, mode="json")) == snap


def test_a_loaded_engine_shows_the_same_records_and_digests(tmp_path: Any) -> None:
    engine = village()
    engine.tick(700)
    path = tmp_path / "village.f09"
    engine.save(path)
    loaded = MemoryEngine.load(path, embedder=None)
    before = engine.introspection.snapshot(redact=False)
    after = loaded.introspection.snapshot(redact=False)
    assert after.records == before.records and after.version == 1
    assert loaded.introspection.stats().per_agent == engine.introspection.stats().per_agent
