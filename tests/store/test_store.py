from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.store import EpisodicRing, MemoryStore, split_record_id
from f09_memory.testing import capture_events


def test_ring_overflow_keeps_exactly_episodic_max_and_expires_the_oldest() -> None:
    engine = MemoryEngine(MemoryConfig(episodic_max=5))
    with capture_events(engine.bus, "memory:record:expired") as log:
        for i in range(12):
            engine.ingest("a", f"event {i}", now=i)
            engine._check()
    kept = [r.content for r in engine.records("a", "episodic")]
    assert [f"event {i}" for i in range(7, 12)] == kept
    assert [f"a:{i:010d}" for i in range(7)] == [e.id for e in log.events]
    assert {"overflow"} == {e.reason for e in log.events}


def test_ring_skips_removed_keys_and_never_evicts_below_capacity() -> None:
    live: set[int] = set()
    ring = EpisodicRing(3, live.__contains__)
    for k in range(3):
        live.add(k)
        ring.append(k)
    live.discard(1)
    ring.discard(1)
    assert not ring.full
    live.add(3)
    ring.append(3)
    assert ring.full
    assert 0 == ring.oldest()
    assert [0, 2, 3] == list(ring)


def test_ring_compacts_dead_entries() -> None:
    live: set[int] = set()
    ring = EpisodicRing(4, live.__contains__)
    for k in range(200):
        live.add(k)
        ring.append(k)
        if k % 2 == 0:  # remove from the middle, never the head
            live.discard(k)
            ring.discard(k)
        if ring.full:
            old = ring.oldest()
            live.discard(old)
            ring.discard(old)
    assert ring.dead_entries() <= 2 * 4 + 16
    assert sorted(live) == list(ring)


def test_non_episodic_layers_iterate_in_time_then_id_order() -> None:
    engine = MemoryEngine()
    engine.ingest("a", "late fact", layer="semantic", now=50)
    engine.ingest("a", "early fact", layer="semantic", now=10)
    engine.ingest("a", "same time, later id", layer="semantic", now=10)
    engine._check()
    assert ["early fact", "same time, later id", "late fact"] == [
        r.content for r in engine.records("a", "semantic")]
    assert ["early fact", "same time, later id", "late fact"] == [
        r.content for r in engine.records("a")]


def test_slots_are_reused_so_columns_stay_bounded() -> None:
    engine = MemoryEngine(MemoryConfig(episodic_max=10))
    for i in range(5_000):
        engine.ingest("a", f"e{i}", importance=0.5, now=i)
    am = engine._state.store.get("a")
    assert am is not None
    assert am.hi <= 10
    assert am.capacity <= 64
    engine._check()


def test_split_record_id() -> None:
    assert ("npc:1", 42) == split_record_id("npc:1:0000000042")
    for bad in ["nope", "a:12", ":0000000001", "a:00000000x1", 7]:
        assert split_record_id(bad) is None  # type: ignore[arg-type]


def test_store_iterates_agents_in_sorted_order() -> None:
    store = MemoryStore(10)
    for name in ["b", "a", "c"]:
        store.get_or_create(name)
    assert ["a", "b", "c"] == store.agent_ids()
    assert ["a", "b", "c"] == [am.agent_id for am in store]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stress_random_operations_keep_invariants_and_match_a_model(seed: int) -> None:
    rng = np.random.default_rng(seed)
    engine = MemoryEngine(MemoryConfig(episodic_max=25), seed=seed)
    model: dict[str, tuple[str, int | None]] = {}  # id -> (layer, deadline)
    layers = ["episodic", "episodic", "semantic", "social", "spatial", "procedural", "system"]
    now = 0
    for _ in range(1_500):
        op = rng.random()
        agent = f"agent-{int(rng.integers(0, 3))}"
        if op < 0.8:
            layer = layers[int(rng.integers(0, len(layers)))]
            ttl = int(rng.integers(1, 200)) if rng.random() < 0.3 else None
            rec = engine.ingest(agent, f"text {int(rng.integers(0, 1000))}", layer=layer,
                                ttl=ttl, importance=float(rng.random()), now=now)
            model[rec.id] = (layer, None if ttl is None else now + ttl)
            # the model of the ring: keep only the newest episodic_max episodic per agent
            ep = sorted(i for i, (lay, _) in model.items()
                        if lay == "episodic" and i.startswith(agent + ":"))
            for gone in ep[:-25]:
                del model[gone]
        else:
            now += int(rng.integers(0, 100))
            engine.tick(now, budget_ms=None)
            for rid, (_, deadline) in list(model.items()):
                if deadline is not None and deadline <= now:
                    del model[rid]
        engine._check()
    live = {r.id for a in engine.agents() for r in engine.records(a)}
    assert set(model) == live


@pytest.mark.parametrize("dedup", [0, 5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batches_that_overflow_the_ring_equal_ingesting_one_by_one(seed: int, dedup: int) -> None:
    rng = np.random.default_rng(seed)
    items = [{"content": f"event {int(rng.integers(0, 50))} at the mill",
              "layer": str(rng.choice(["episodic", "episodic", "semantic"])),
              "importance": round(float(rng.random()), 3),
              "tags": [str(rng.choice(["a", "b", "c"]))]} for _ in range(400)]
    batched = MemoryEngine(MemoryConfig(episodic_max=37, dedup_window_ms=dedup), seed=seed)
    single = MemoryEngine(MemoryConfig(episodic_max=37, dedup_window_ms=dedup), seed=seed)
    start = 0
    while start < len(items):
        size = int(rng.integers(1, 90))
        chunk = items[start:start + size]
        batched.ingest_many("npc", chunk, now=start)
        for item in chunk:
            single.ingest("npc", **item, now=start)  # type: ignore[arg-type]
        start += size
        batched._check()
    assert single.state_hash() == batched.state_hash()
    assert [r.id for r in single.records("npc")] == [r.id for r in batched.records("npc")]



def test_ring_extend_is_append_of_each_key() -> None:
    live = set(range(0, 200, 3))  # most keys already gone: extend compacts as append does
    one, many = EpisodicRing(70, live.__contains__), EpisodicRing(70, live.__contains__)
    for k in range(200):
        one.append(k)
    many.extend(range(200))
    one.live = many.live = len(live)
    assert list(one) == list(many) == sorted(live)
    assert many.dead_entries() <= 2 * many.capacity + 16  # compacted like append


def test_an_agent_holds_no_per_record_container_the_garbage_collector_visits() -> None:
    """A full collection's pause follows the number of GC-tracked containers and their
    items: an agent's per-record data (texts, ring, free slots, id map) must not be one."""
    import gc

    from f09_memory import MemoryConfig, MemoryEngine

    engine = MemoryEngine(MemoryConfig(episodic_max=3_000), embedder=None, seed=0)
    engine.ingest_many("a", [{"content": f"word {i}.", "tags": ["x"]} for i in range(5_000)],
                       now=1)
    engine.ingest_many("a", [{"content": f"fact {i}.", "layer": "semantic",
                              "source_event": f"e{i}"} for i in range(400)], now=2)
    engine.forget([r.id for r in engine.recent("a", 300, layer="semantic")[::2]])
    engine.state_hash()
    gc.collect()
    am = engine._state.store.get("a")
    assert am is not None and len(am.free) > 1_000 and am.live > 3_000
    visited = {name: len(value) for name, value in vars(am).items()
               if gc.is_tracked(value) and isinstance(value, list | dict | set | tuple)}
    assert all(n < 100 for n in visited.values()), visited
    ring_state = am.ring.get_state()
    assert len(ring_state) == 3_000 and not gc.is_tracked(am.content)


@pytest.mark.parametrize("keys", [[0, 3, 14], [*range(10), 14]])  # scalar / numpy stores
def test_reinforce_ends_as_updates_one_by_one(keys: list[int]) -> None:
    """The batch reinforcement of dedup: importance set, anchors moved up to now (never
    back), hashed digests taken out of the sum, every slot's rev moved."""
    engines = [MemoryEngine(MemoryConfig(), embedder=None) for _ in range(2)]
    for e in engines:
        e.ingest_many("a", [{"content": f"fact {i}", "importance": 0.05 * i} for i in range(14)],
                      now=5)
        e.ingest("a", "late fact", now=50)
        e.state_hash()  # every record hashed: the changes must leave the digest sum
    batch, single = (e._state.store.get("a") for e in engines)
    assert batch is not None and single is not None
    values = [round(0.25 + 0.05 * i, 2) for i in range(len(keys))]
    revs = batch.rev.copy()
    slots = [batch.slot_of[k] for k in keys]
    batch.reinforce(slots, values, now=20)
    for key, value in zip(keys, values, strict=True):
        slot = single.slot_of[key]
        single.update(key, importance=value, anchor=max(20, int(single.anchor[slot])))
    assert engines[0].state_hash() == engines[1].state_hash()
    assert [20] * (len(keys) - 1) + [50] == batch.anchor[slots].tolist()  # the late keeps its
    assert values == batch.importance[slots].tolist()
    assert (batch.rev[slots] > revs[slots]).all() and len(set(batch.rev[slots].tolist())) == len(
        keys)
    batch._check()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "add", "forget", "touch", "repeat"]),
                          st.integers(0, 5), st.sampled_from(["episodic", "semantic"])),
                min_size=1, max_size=40), st.integers(0, 12))
def test_recent_is_the_newest_by_anchor_then_id_with_or_without_free_slots(
        ops: list[tuple[str, int, str]], k: int) -> None:
    """Ties on the anchor go to the higher id; forgotten records leave free slots (the
    general path), a store without any takes the all-live path (the last ``k`` slots when
    they are the newest); a repeat moves an older slot's anchor up (dedup)."""
    engine = MemoryEngine(MemoryConfig(episodic_max=8, dedup_window_ms=1_000), embedder=None)
    for i, (op, t, layer) in enumerate(ops):
        records = engine.records("a") if "a" in engine.agents() else []
        ids = [r.id for r in records]
        if op == "add" or not ids:
            engine.ingest("a", f"memory {i}", layer=layer, now=t)
        elif op == "repeat":
            old = records[t % len(records)]
            engine.ingest("a", old.content, layer=old.layer, now=t + 3)
        elif op == "forget":
            engine.forget([ids[t % len(ids)]])
        else:
            engine.update(ids[t % len(ids)], importance=0.9)
    if "a" not in engine.agents():
        return
    everyone = engine.records("a")
    for layer in (None, "semantic"):
        pool = [r for r in everyone if layer is None or r.layer.value == layer]
        expected = sorted(pool, key=lambda r: (r.recency_anchor, r.id), reverse=True)[:k]
        assert [r.id for r in expected] == [r.id for r in engine.recent("a", k, layer)]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(-5, 0)), min_size=1, max_size=40),
       st.integers(1, 8))
def test_newest_slots_of_a_store_without_free_slots_match_a_full_sort(
        steps: list[tuple[bool, int]], k: int) -> None:
    """The last-``k``-slots shortcut (taken when no earlier slot is as new) and the general
    path both give the ``k`` newest by ``(anchor, key)``: times mostly go forward but step
    back, repeats move old anchors up, equal anchors tie on the key."""
    engine = MemoryEngine(MemoryConfig(dedup_window_ms=1_000), embedder=None)
    for i, (repeat, back) in enumerate(steps):
        text = f"memory {(i * 7) % max(1, i)}" if repeat else f"memory {i}"
        engine.ingest("a", text, layer="semantic", now=max(0, 2 * i + back))
    am = engine._state.store.get("a")
    assert am is not None and len(am.slot_of) == am.hi  # nothing freed: the all-live path
    live = range(am.hi)
    expected = sorted(live, key=lambda s: (int(am.anchor[s]), int(am.key[s])), reverse=True)
    assert expected[:k] == am.newest_slots(k).tolist()


def test_newest_slots_take_the_last_slots_only_when_nothing_older_is_as_new() -> None:
    engine = MemoryEngine(MemoryConfig(dedup_window_ms=1_000), embedder=None)
    for t in range(6):
        engine.ingest("a", f"memory {t}", layer="semantic", now=t)
    am = engine._state.store.get("a")
    assert am is not None
    assert [5, 4, 3] == am._newest_tail(3).tolist() == am.newest_slots(3).tolist()
    engine.ingest("a", "memory 0", layer="semantic", now=9)  # slot 0 reinforced: newest
    assert am._newest_tail(3) is None
    assert [0, 5, 4] == am.newest_slots(3).tolist()


def test_a_record_changed_in_place_is_rebuilt_with_its_content_hash_kept() -> None:
    """A reinforced record is rebuilt (new importance) reusing its content's sha256; a new
    record in a reused slot gets its own; both equal records built afresh."""
    engine = MemoryEngine(MemoryConfig(dedup_window_ms=100, episodic_max=2), embedder=None)
    engine.ingest("a", "the well is dry", now=1)
    engine.ingest("a", "the mill burned", now=1)
    well = engine.records("a")[0]
    engine.ingest("a", "The well is dry", now=2)  # a dedup reinforcement: rebuilt in place
    again = next(r for r in engine.records("a") if r.id == well.id)
    assert again is not well and again.importance > well.importance
    assert again.hash == well.hash
    engine.ingest("a", "a wolf at the gate", now=3)  # evicts the well: its slot reused
    after = engine.records("a")
    assert [r.content for r in after] == ["the mill burned", "a wolf at the gate"]
    for record in after:
        assert record.hash == hashlib.sha256(record.content.encode()).hexdigest()
    engine._reader.clear()
    assert engine.records("a") == after


def _extra_of(engine: MemoryEngine, record_id: str) -> object:
    agent_id, key = split_record_id(record_id)
    am = engine._state.store.get(agent_id)
    assert am is not None
    return am.extras[key]


def test_records_with_equal_extras_share_one_object_across_agents_calls_and_paths() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    meta = {"attributes": {"with": "agent-7", "rank": 2}, "source_ref_ids": ["e:1"]}
    one = engine.ingest("a", "traded salt", layer="social", metadata=meta, now=1)
    many = engine.ingest_many("b", [{"content": "traded flint", "layer": "social",
                                     "metadata": meta}], now=2)
    batch = engine.ingest_batch([{"agent_id": "c", "content": "traded wood", "layer": "social",
                                  "metadata": {"attributes": {"with": "agent-7", "rank": 2},
                                               "source_ref_ids": ["e:1"]}}], now=3)
    extras = [_extra_of(engine, r.id) for r in (one, *many, *batch)]
    assert extras[0] is extras[1] is extras[2]
    other = engine.ingest("a", "traded fish", layer="social",
                          metadata={"attributes": {"with": "agent-8", "rank": 2}}, now=4)
    assert _extra_of(engine, other.id) is not extras[0]
    for r in engine.records("a", "social") + engine.records("c", "social"):
        assert r.metadata.attributes["rank"] == 2
    assert {"agent-7", "agent-8"} == {r.metadata.attributes["with"]
                                      for r in engine.records("a", "social")}
    engine._check()


def test_shared_extras_keep_each_value_and_its_type() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    values: list[object] = [1, 1.0, True, 0.0, -0.0, "1"]
    records = [engine.ingest("a", f"note {i}", layer="semantic",
                             metadata={"attributes": {"v": v}}, now=i)
               for i, v in enumerate(values)]
    assert len({id(_extra_of(engine, r.id)) for r in records}) == len(values)
    for r, v in zip(engine.records("a", "semantic"), values, strict=True):
        got = r.metadata.attributes["v"]
        assert type(got) is type(v) and got == v
        if isinstance(v, float):
            assert math.copysign(1.0, got) == math.copysign(1.0, v)


def test_an_extra_is_shared_as_stored_redacted_or_not() -> None:
    """The shared object is the stored (redacted) extra: an engine with redaction off never
    gets another engine's placeholder, nor the other way round."""
    meta = {"attributes": {"contact": "bob@example.com"}}
    on = MemoryEngine(MemoryConfig(redaction_mode=True), embedder=None)
    off = MemoryEngine(MemoryConfig(redaction_mode=False), embedder=None)
    hidden = on.ingest("a", "wrote a letter", metadata=meta, now=1)
    clear = off.ingest("a", "wrote a letter", metadata=meta, now=1)
    assert "bob@example.com" not in str(hidden.metadata.attributes["contact"])
    assert clear.metadata.attributes["contact"] == "bob@example.com"
    again = on.ingest("b", "wrote another letter", metadata=meta, now=2)
    assert _extra_of(on, again.id) is _extra_of(on, hidden.id)
    assert _extra_of(off, clear.id) is not _extra_of(on, hidden.id)


def test_extras_with_nested_metadata_are_not_shared_and_stay_intact() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    meta = {"social": {"other_agent_id": "bob", "sentiment": 0.5},
            "attributes": {"with": "bob"}}
    first = engine.ingest("a", "met bob", layer="social", metadata=meta, now=1)
    second = engine.ingest("a", "met bob again", layer="social", metadata=meta, now=2)
    assert _extra_of(engine, first.id) is not _extra_of(engine, second.id)
    assert second.metadata.social is not None
    assert second.metadata.social.other_agent_id == "bob"


def test_a_snapshot_loads_with_shared_extras_and_the_same_hash(tmp_path: Path) -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    for i in range(20):
        engine.ingest(f"a{i % 4}", f"trade {i}", layer="social",
                      metadata={"attributes": {"with": f"agent-{i % 2}"}}, now=i)
    loaded = MemoryEngine.load(engine.save(tmp_path / "s.f09"), embedder=None)
    assert loaded.state_hash() == engine.state_hash()
    by_value: dict[str, set[int]] = {}
    for r in [r for i in range(4) for r in loaded.records(f"a{i}", "social")]:
        by_value.setdefault(r.metadata.attributes["with"], set()).add(
            id(_extra_of(loaded, r.id)))
    assert {1} == {len(ids) for ids in by_value.values()}
    loaded._check()


def test_shared_extras_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from f09_memory.store import records

    monkeypatch.setattr(records, "SHARED_EXTRAS_MAX", 8)
    monkeypatch.setattr(records, "_shared", {})
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    for i in range(50):
        engine.ingest("a", f"trade {i}", layer="social",
                      metadata={"attributes": {"with": f"agent-{i}"}}, now=i)
        assert len(records._shared) <= 8
    assert [f"agent-{i}" for i in range(50)] == [
        r.metadata.attributes["with"] for r in engine.records("a", "social")]


def test_an_extra_with_an_unhashable_value_is_kept_unshared() -> None:
    """A value that is no attribute value (a payload not validated yet) is left to the
    caller's checks: the sharing table neither raises on it nor shares it."""
    from f09_memory.store.records import RecordExtra

    extra = RecordExtra.from_canonical({"attributes": {"v": [1, 2]}})
    assert extra.attributes == {"v": [1, 2]}
    assert RecordExtra.from_canonical({"attributes": {"v": [1, 2]}}) is not extra


def test_records_sharing_an_extra_share_their_metadata_object_when_tags_and_flag_agree() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    meta = {"attributes": {"with": "agent-7"}}
    a = engine.ingest("a", "traded salt", layer="social", tags=["trade"], metadata=meta, now=1)
    b = engine.ingest("b", "traded flint", layer="social", tags=["trade"], metadata=meta, now=2)
    c = engine.ingest("a", "traded wood", layer="social", tags=["gift"], metadata=meta, now=3)
    d = engine.ingest("a", "traded fish", layer="social", tags=["trade"], flagged=True,
                      metadata=meta, now=4)
    e = engine.ingest("a", "traded hides", layer="social", tags=["trade"], metadata=meta,
                      source_event="market", now=5)
    assert a.metadata is b.metadata
    assert len({id(r.metadata) for r in (a, c, d, e)}) == 4
    assert (c.metadata.tags, d.metadata.flagged, e.metadata.source_event) == (
        ("gift",), True, "market")
    for r in (a, b, c, d, e):
        assert r.metadata.attributes == {"with": "agent-7"}
    assert a.metadata == MemoryEngine(MemoryConfig(), embedder=None).ingest(
        "z", "traded salt", layer="social", tags=["trade"], metadata=meta, now=1).metadata


_ATTRIBUTE_VALUES = st.one_of(
    st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, -0.0, 1.0, 2.5, -1.0]),
    st.sampled_from(["0", "1", "1.0", "True", "x"]))


@settings(max_examples=100, deadline=None)
@example([{"a": 0.0}, {"a": -0.0}, {"a": 1}, {"a": True}, {"a": 1.0}, {"a": "1"}, {"a": 1},
          {"b": 1, "a": 1}, {"a": 1, "b": 1}])
@given(st.lists(st.dictionaries(st.sampled_from(["a", "b"]), _ATTRIBUTE_VALUES, min_size=1,
                                max_size=2), min_size=2, max_size=16))
def test_shared_extras_give_back_every_attribute_as_ingested(
        attributes: list[dict[str, object]]) -> None:
    """Whatever mix of equal-looking values (1, 1.0, True, '1', 0.0, -0.0) a run ingests,
    each record keeps its own values, types and key order, and equal ones share."""
    from f09_memory.store import records

    records._shared.clear()  # room for this run's extras: the table never starts over in it
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    ids = [engine.ingest("a", f"note {i}", layer="semantic", metadata={"attributes": a},
                         now=i).id for i, a in enumerate(attributes)]
    got = [r.metadata.attributes for r in engine.records("a", "semantic")]
    assert len(got) == len(attributes)

    def typed(d: dict[str, object]) -> list[tuple[str, type, str]]:
        return [(k, type(v), repr(v)) for k, v in d.items()]

    assert [typed(a) for a in attributes] == [typed(dict(g)) for g in got]
    extras = [_extra_of(engine, i) for i in ids]
    for i, a in enumerate(attributes):
        for j, b in enumerate(attributes):
            assert (extras[i] is extras[j]) == (typed(a) == typed(b))


@settings(max_examples=200)
@given(st.lists(st.text(max_size=300), min_size=1, max_size=20), st.integers(0, 5))
def test_content_fingerprints_are_the_same_remembered_or_not(texts: list[str],
                                                             layer: int) -> None:
    """A short text's digest is remembered across calls (and engines): every fingerprint
    equals the one computed afresh, before and after the table starts over, and the table
    keeps only short texts, never more than its bound."""
    from f09_memory.canonical import text_digest64
    from f09_memory.store import records

    def fresh(text: str) -> int:
        return records.fingerprint(layer, text_digest64(records.normalized_content(text)))

    for _ in range(2):  # the second pass reads what the first remembered
        assert [records.content_fingerprint(layer, t) for t in texts] == list(map(fresh, texts))
    assert all(len(t) <= records._TEXT_DIGEST_CHARS for t in records._TEXT_DIGESTS)
    records._TEXT_DIGESTS.update({f"filler {i}": text_digest64(f"filler {i}")
                                  for i in range(records._TEXT_DIGESTS_MAX)})
    assert records.content_fingerprint(layer, "A  new text") == fresh("a new text")
    assert len(records._TEXT_DIGESTS) <= records._TEXT_DIGESTS_MAX
    records._TEXT_DIGESTS.clear()


def _mixed_agent() -> MemoryEngine:
    """An agent with records of several layers, extras, source events and vectors."""
    engine = MemoryEngine(MemoryConfig(episodic_max=8, dedup_window_ms=1_000), seed=3)
    items = [{"agent_id": "a", "content": f"event {i}", "now": i} for i in range(10)]
    engine.ingest_batch([{k: v for k, v in it.items() if k != "now"} for it in items], now=5)
    engine.ingest_batch([
        {"agent_id": "a", "content": f"fact {i}", "layer": "semantic",
         "metadata": {"attributes": {"claimKey": f"k{i}"}}, "source_event": f"ev{i}"}
        for i in range(6)] + [
        {"agent_id": "a", "content": f"friend {i}", "layer": "social"} for i in range(4)],
        now=10)
    engine.tick(11)
    return engine


def test_remove_many_equals_removing_one_by_one() -> None:
    one, many = _mixed_agent(), _mixed_agent()
    am_one, am_many = (e._state.store.get("a") for e in (one, many))
    assert am_one is not None and am_many is not None
    keys = sorted(am_one.slot_of)[1::2]  # every layer, ring entries among them
    gone_one = [am_one.remove(k) for k in keys]
    gone_many = am_many.remove_many(keys)
    assert gone_one == gone_many
    assert one.state_hash() == many.state_hash()
    assert am_one.layer_counts.tolist() == am_many.layer_counts.tolist()
    assert am_one.dedup_index() == am_many.dedup_index()
    assert am_one.claims == am_many.claims and am_one.extras == am_many.extras
    one._check()
    many._check()
    # A later ingest reuses the same slots either way, and dedup sees the same index.
    for engine in (one, many):
        engine.ingest_batch([{"agent_id": "a", "content": c} for c in (
            "event 3", "fact 1", "new one")], now=20)
    assert one.state_hash() == many.state_hash()
    assert [] == am_many.remove_many([])
    before = many.state_hash()
    live = next(iter(am_many.slot_of))
    with pytest.raises(KeyError):  # a key that is not live: nothing is half removed
        am_many.remove_many([live, 10**9])
    assert before == many.state_hash() and live in am_many.slot_of
    many._check()


@pytest.mark.parametrize("n", [3, 12])  # row stores / one numpy store
def test_attach_rows_of_a_run_or_a_list_equals_attach_vectors(n: int) -> None:
    """Vectors attached as a run (slots and rows given as ranges: one block copy), as
    lists (row by row) or by ``attach_vectors`` end in the same columns and hash."""
    engines = [MemoryEngine(MemoryConfig(), embedder=None, seed=0) for _ in range(3)]
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((n + 2, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for e in engines:
        e.ingest_many("a", [f"fact {i}" for i in range(n + 4)], now=1)
        e.state_hash()
    run, listed, whole = (e._state.store.get("a") for e in engines)
    assert run is not None and listed is not None and whole is not None
    start = 2
    run.attach_rows(range(start, start + n), vectors, range(1, 1 + n))
    listed.attach_rows(list(range(start, start + n)), vectors, list(range(1, 1 + n)))
    whole.attach_vectors(np.arange(start, start + n), vectors[1:1 + n])
    assert run.vectors is not None and listed.vectors is not None and whole.vectors is not None
    for am in (run, listed):
        assert np.array_equal(am.vectors[: am.hi], whole.vectors[: whole.hi])
        assert np.array_equal(am.embedded, whole.embedded)
        am._check()
    assert run.embedded[start:start + n].all() and not run.embedded[:start].any()
    assert len({e.state_hash() for e in engines}) == 1
