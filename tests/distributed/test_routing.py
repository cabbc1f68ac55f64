"""Shard routing, event merging and re-sharding: pure functions, no Ray needed."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.bus import PressureChanged, RecordCreated, RecordExpired, TickCompleted
from f09_memory.core.digest import combine_parts, merge_parts
from f09_memory.determinism.scenario import LIFECYCLE_CONFIG, run_village
from f09_memory.distributed import (
    ShardRouter,
    event_agent,
    merge_events,
    merge_snapshots,
    record_agent,
    shard_of,
    task_agent,
)
from f09_memory.errors import SnapshotInvalidError


def test_routing_is_stable_across_processes_and_hash_seeds() -> None:
    ids = [f"npc-{i:03d}" for i in range(64)] + ["ünï", "a:b"]
    here = [shard_of(a, 4) for a in ids]
    code = ("from f09_memory.distributed import shard_of; "
            f"print([shard_of(a, 4) for a in {ids!r}])")
    for seed in ("987",):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env={"PYTHONHASHSEED": seed,
                                              "PYTHONPATH": ":".join(sys.path)})
        assert str(here) == out.stdout.strip()
    assert [0] * len(ids) == [shard_of(a, 1) for a in ids]


def test_routing_spreads_agents_and_moves_few_when_a_shard_is_added() -> None:
    ids = [f"agent-{i}" for i in range(4000)]
    counts = Counter(shard_of(a, 4) for a in ids)
    assert sorted(counts) == [0, 1, 2, 3] and min(counts.values()) > 850
    moved = sum(shard_of(a, 4) != shard_of(a, 5) for a in ids)
    assert moved < 0.3 * len(ids)  # jump hash: about 1/5 move
    router = ShardRouter(3)
    assert [router.shard(a) for a in ids[:50]] == [shard_of(a, 3) for a in ids[:50]]
    owns = router.owns(1)
    assert all(owns(a) == (shard_of(a, 3) == 1) for a in ids[:50])


def test_ids_name_their_agent() -> None:
    assert "npc:7" == record_agent("npc:7:0000000042")
    assert record_agent("bad") is None and record_agent("x:12") is None
    assert "npc:7" == task_agent("sum:npc:7:00000003")
    assert task_agent("other:npc:1") is None and task_agent("sum:npc") is None
    assert "a" == event_agent(RecordExpired(id="a:0000000001", layer="episodic"))
    assert event_agent(PressureChanged(previous="normal", current="soft")) is None


def test_events_merge_by_agent_with_one_pressure_change_and_one_tick() -> None:
    pressure = PressureChanged(previous="normal", current="soft")

    def created(agent: str, n: int) -> RecordCreated:
        return RecordCreated(id=f"{agent}:{n:010d}", layer="episodic", agent_id=agent,
                             importance=0.5)

    shard0 = [pressure, created("b", 0), created("b", 1), TickCompleted(now=5, tick_ms=1.0,
                                                                        used_units=3,
                                                                        records=2)]
    shard1 = [pressure, created("c", 0), created("a", 0),
              TickCompleted(now=5, tick_ms=2.0, used_units=4, records=1)]
    merged = merge_events([shard0, shard1])
    assert [pressure, created("a", 0), created("b", 0), created("b", 1), created("c", 0),
            TickCompleted(now=5, tick_ms=2.0, used_units=7, records=3)] == merged


def _engine_with_village(agents: int = 8) -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(**LIFECYCLE_CONFIG), seed=5)
    run_village(engine, agents=agents, ticks=25, seed=5, tick_ms=10_000, budget_ms=None)
    engine.place({"npc-001": (1, 2), "npc-004": (3, 4)}, now=engine.now)
    engine.interact("npc-002", "npc-003", 0.7, now=engine.now)
    return engine


def test_resharding_a_snapshot_splits_agents_and_keeps_the_hash() -> None:
    whole = _engine_with_village()
    blob = whole.dumps()
    pieces = [MemoryEngine.loads(merge_snapshots([blob], lambda a, i=i: shard_of(a, 3) == i))
              for i in range(3)]
    assert sorted(a for p in pieces for a in p.agents()) == whole.agents()
    assert whole.state_hash() == combine_parts(merge_parts(p.state_hash_parts()
                                                           for p in pieces))
    # and back: the three snapshots merged into one engine
    rejoined = MemoryEngine.loads(merge_snapshots([p.dumps() for p in pieces]))
    assert whole.state_hash() == rejoined.state_hash()
    assert whole.position_of("npc-004") == rejoined.position_of("npc-004")
    assert whole.opinion("npc-002", "npc-003") == rejoined.opinion("npc-002", "npc-003")
    rejoined._check()


def test_resharding_refuses_snapshots_of_different_engines() -> None:
    a = MemoryEngine(MemoryConfig(), seed=1)
    a.ingest("x", "one", now=1)
    b = MemoryEngine(MemoryConfig(), seed=2)
    with pytest.raises(SnapshotInvalidError, match="config and seed"):
        merge_snapshots([a.dumps(), b.dumps()])
    with pytest.raises(SnapshotInvalidError, match="same agent"):
        merge_snapshots([a.dumps(), a.dumps()])
    with pytest.raises(SnapshotInvalidError):
        merge_snapshots([b"not a snapshot"])
    with pytest.raises(SnapshotInvalidError, match="no snapshots"):
        merge_snapshots([])


def test_the_bundle_codec_round_trips_every_field() -> None:
    from f09_memory.determinism.scenario import Village
    from f09_memory.distributed import decode_bundle, encode_bundle

    engine = MemoryEngine(MemoryConfig(**LIFECYCLE_CONFIG), seed=9)
    village = Village(10, 9)
    bundles = [b for tick in range(12) for b in village(engine, tick)]
    layers = {r.layer.value for b in bundles for r in b.records}
    assert {"episodic", "semantic", "social", "spatial", "procedural"} <= layers
    assert bundles == [decode_bundle(encode_bundle(b)) for b in bundles]
