"""The record reader's object cache (``core.records.RecordReader``).

It serves an unchanged record's object again, never a changed one; it holds one entry per
slot at most, and an agent's cache keeps only what its last reads asked for once it passes
``_AGENT_KEEP`` objects, so the objects a crowd's frames stop asking for do not pile up for
the garbage collector to visit.
"""

from __future__ import annotations

import gc

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest
from f09_memory.core.records import _AGENT_KEEP


def test_the_record_cache_keeps_no_pair_per_record_for_the_collector() -> None:
    """Records handed back are cached by slot; the cache adds no GC-tracked object of its
    own per record (its rev map holds only ints, so the collector skips it)."""
    engine = MemoryEngine(MemoryConfig(), embedder=None, seed=0)
    engine.ingest_many("a", [f"word {i}." for i in range(1_000)], now=1)
    records = engine.records("a")
    gc.collect()
    revs, cached = engine._reader._cache["a"]
    assert len(revs) == len(cached) == len(records) == 1_000
    assert not gc.is_tracked(revs)
    assert all(cached[slot] is record for slot, record in zip(
        sorted(cached), records, strict=True))
    tracked_before = len(gc.get_objects())
    engine.records("a")  # served from the cache: nothing new is kept
    gc.collect()
    assert len(gc.get_objects()) <= tracked_before + 10


def test_the_record_cache_never_serves_a_changed_or_replaced_record() -> None:
    """A cached object is served only for its own rev: an update, and a new record in a
    freed slot, are built afresh (and the old objects stay as they were)."""
    engine = MemoryEngine(MemoryConfig(), embedder=None, seed=0)
    well, mill = engine.ingest_many("a", [{"content": c, "importance": 0.2}
                                          for c in ("the well", "the mill")], now=1).ids
    before = engine.records("a")
    engine.update(well, importance=0.9)
    after = engine.records("a")
    assert after[0] is not before[0] and after[0].importance == 0.9
    assert before[0].importance == 0.2 and after[1] is before[1]
    engine.forget([mill])
    fresh = engine.ingest("a", "the bridge", now=3)  # takes the freed slot
    assert [r.content for r in engine.records("a")] == ["the well", "the bridge"]
    assert engine.get(fresh.id) == fresh and mill not in [r.id for r in engine.records("a")]


def test_the_record_cache_holds_one_entry_per_slot_under_churn() -> None:
    """Churn (a full episodic ring evicting on every ingest, updates, reads) replaces a
    slot's entry instead of adding one: the cache never holds more entries than the agent
    has slots in use, and what it serves is still the current record."""
    engine = MemoryEngine(MemoryConfig(episodic_max=100), embedder=None, seed=0)
    for i in range(2_000):
        engine.ingest("a", f"fact {i % 300}", importance=0.5, now=i)
        if i % 7 == 0:
            engine.update(engine.recent("a", 1)[0].id, importance=0.25)
        if i % 50 == 0:
            engine.records("a")
        am = engine._state.store.get("a")
        assert am is not None
        revs, cached = engine._reader._cache["a"]
        assert len(revs) == len(cached) <= am.hi
    assert engine._reader._cached == sum(len(c[0]) for c in engine._reader._cache.values())
    records = engine.records("a")
    assert [r.content for r in records] == [f"fact {i % 300}" for i in range(1_900, 2_000)]
    engine._reader.clear()  # built afresh from the columns: the same records
    assert engine.records("a") == records


def _cached(engine: MemoryEngine, agent_id: str) -> int:
    revs, objects = engine._reader._cache[agent_id]
    assert len(revs) == len(objects)
    return len(revs)


def test_an_agents_cache_keeps_only_what_its_last_reads_asked_for() -> None:
    """A bundle whose records change every frame (new important memories each frame)
    leaves stale objects behind; past ``_AGENT_KEEP`` the agent's cache is trimmed to its
    last two reads, and every bundle is what a reader starting afresh builds."""
    engine = MemoryEngine(MemoryConfig(), embedder=None, seed=0)
    fresh = MemoryEngine(MemoryConfig(), embedder=None, seed=0)
    request = RetrievalRequest(agent_id="a", purpose="reasoning", max_tokens=10_000,
                               limit=8)
    most = 0
    built: set[str] = set()
    for frame in range(200):
        for e in (engine, fresh):
            e.ingest_many("a", [{"content": f"event {frame} {i}", "importance": 0.9}
                                for i in range(3)], now=frame)
        bundle = engine.retrieve(request, now=frame)
        built.update(r.id for r in bundle.records)
        fresh._reader.clear()
        assert bundle.records == fresh.retrieve(request, now=frame).records
        assert bundle.records == engine.retrieve(request, now=frame).records  # a re-read
        most = max(most, _cached(engine, "a"))
        assert _cached(engine, "a") <= max(_AGENT_KEEP, 2 * 8)
    assert most > 8  # the cache did fill past one bundle before it was trimmed
    assert len(built) > 3 * max(_AGENT_KEEP, 2 * 8)  # far more objects than it keeps
    reader = engine._reader
    assert reader._cached == sum(len(revs) for revs, _ in reader._cache.values())


def test_single_record_reads_and_ingests_keep_an_agents_cache_bounded() -> None:
    """``ingest`` (its record built and cached) and ``get`` one by one: the agent's cache
    stays within ``_AGENT_KEEP`` and one entry, and an old record is rebuilt on demand."""
    engine = MemoryEngine(MemoryConfig(episodic_max=1_000), embedder=None, seed=0)
    first = engine.ingest("a", "the first stone", now=0)
    ids = [engine.ingest("a", f"stone {i}", now=i).id for i in range(1, 300)]
    assert len(ids) > _AGENT_KEEP + 1 >= _cached(engine, "a")  # each one was cached
    for rid in ids[::7]:
        assert engine.get(rid).id == rid
        assert _cached(engine, "a") <= _AGENT_KEEP + 1
    assert engine.get(first.id) == first


def test_a_whole_agent_read_is_served_from_the_cache_again() -> None:
    """A read larger than ``_AGENT_KEEP`` (an inspector listing an agent) is kept whole:
    asked for again after a change elsewhere, its unchanged records are the same objects."""
    engine = MemoryEngine(MemoryConfig(), embedder=None, seed=0)
    engine.ingest_many("a", [f"word {i}." for i in range(500)], now=1)
    first = engine.records("a")
    engine.ingest_many("a", ["and another"], now=3)  # the agent changed: a lookup per slot
    again = engine.records("a")
    assert len(again) == 501 and all(a is b for a, b in zip(first, again, strict=False))
    assert _cached(engine, "a") == 501


def test_a_crowds_frames_keep_few_record_objects_for_the_collector() -> None:
    """Forty agents over 150 frames, each frame adding memories that push others out of
    the bundles: the record objects left alive stay within the caches' bound, not every
    record a frame ever built."""
    engine = MemoryEngine(MemoryConfig(), embedder=None, seed=0)
    agents = [f"npc-{i:02d}" for i in range(40)]
    requests = [RetrievalRequest(agent_id=a, purpose="reasoning", max_tokens=10_000,
                                 limit=6) for a in agents]
    built: set[str] = set()
    for frame in range(150):
        engine.ingest_batch([{"agent_id": a, "content": f"{a} saw {frame} {k}",
                              "importance": 0.5 + 0.4 * ((frame + k) % 2)}
                             for a in agents for k in range(2)], now=frame)
        for bundle in engine.retrieve_many(requests, now=frame):
            built.update(r.id for r in bundle.records)
    gc.collect()
    alive = sum(type(o).__name__ == "MemoryRecord" for o in gc.get_objects())
    assert alive <= len(agents) * _AGENT_KEEP < len(built) // 2


def test_the_same_top_records_are_served_again_while_the_agent_stores_others(
        monkeypatch) -> None:
    """A bundle whose records did not change is served as the same objects without a
    lookup per record, even though the agent stored other memories since; once one of
    them changes (a dedup reinforcement, an update), it is built afresh."""
    engine = MemoryEngine(MemoryConfig(dedup_window_ms=1_000), embedder=None, seed=0)
    engine.ingest_many("a", [{"content": f"the well {i}", "importance": 0.9}
                             for i in range(4)], now=1)
    request = RetrievalRequest(agent_id="a", purpose="reasoning", max_tokens=10_000,
                               limit=4, strategy="importance")
    first = engine.retrieve(request, now=2).records
    engine.ingest("a", "a pebble", importance=0.1, now=3)  # the agent changed, not its top
    reader = engine._reader

    def no_lookup(agent_id: str) -> object:
        raise AssertionError("an unchanged bundle looked its records up one by one")

    with monkeypatch.context() as patched:
        patched.setattr(reader, "_agent_cache", no_lookup)
        again = engine.retrieve(request, now=4).records
    assert len(again) == 4 and all(a is b for a, b in zip(first, again, strict=True))
    engine.ingest("a", "the well 2", importance=0.9, now=5)  # a repeat: reinforces one
    after = engine.retrieve(request, now=6).records
    was = {r.id: r for r in first}
    changed = [r for r in after if r is not was[r.id]]
    assert [r.content for r in changed] == ["the well 2"] and after[0] is changed[0]
    assert changed[0].recency_anchor == 5 and changed[0].importance == 0.95
    engine.update(after[0].id, importance=0.5)
    last = engine.retrieve(request, now=7).records
    assert last[-1].id == after[0].id and last[-1] is not after[0]
    assert last[-1].importance == 0.5 and last[:-1] == after[1:]
