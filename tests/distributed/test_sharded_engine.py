"""ShardedMemoryEngine on a local Ray: the single-process hashes for any shard count,
engine events routed over every agent's position, merged bus events, save/load onto
another shard count, and a killed shard coming back with every acknowledged write."""

from __future__ import annotations

import copy
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest
from f09_memory.determinism.scenario import Village, run_village
from f09_memory.embedding import HashingEmbedder, ProcessEmbedder
from f09_memory.errors import (
    InputInvalidError,
    RecordNotFoundError,
    SnapshotInvalidError,
    StorageFailedError,
    TokenBudgetUndefinedError,
)

pytest.importorskip("ray")

from f09_memory.distributed import ShardedMemoryEngine

pytestmark = pytest.mark.usefixtures("ray_cluster")
AGENTS, TICKS, SEED = 12, 16, 42
OPTIONS = {"num_cpus": 0}


def kill(ray: Any, actor: Any) -> int:
    """Kill ``actor`` (Ray may restart it) and wait until its process is gone; its pid."""
    pid = ray.get(actor.process_id.remote())
    ray.kill(actor, no_restart=False)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if ray.get(actor.process_id.remote()) != pid:
                break
        except ray.exceptions.RayActorError:
            break
        time.sleep(0.05)
    return int(pid)


def sharded(shards: int, **kwargs: Any) -> ShardedMemoryEngine:
    return ShardedMemoryEngine(MemoryConfig(), shards=shards, seed=SEED,
                               actor_options=OPTIONS, **kwargs)


@pytest.fixture(scope="module")
def single() -> dict[str, str]:
    """The single-process village's hashes, and after it a frame of engine events."""
    engine = MemoryEngine(MemoryConfig(), seed=SEED)
    hashes = run_village(engine, agents=AGENTS, ticks=TICKS, seed=SEED).hashes()
    hashes["events_ids"] = ",".join(sorted(_world(engine, TICKS * 1_000)))
    hashes["after_events"] = engine.state_hash()
    return hashes


def _world(engine: Any, now: int) -> list[str]:
    """Place villagers, then a frame whose witnesses are found by perception radius."""
    engine.place({"npc-000": (0, 0), "npc-001": (3, 0), "npc-002": (0, 4),
                  "npc-003": (30, 30), "npc-004": (1, 1), "npc-005": (2, 2)}, now=now)
    got = engine.ingest_events([
        {"kind": "combat", "actor": "npc-000", "target": "npc-003", "position": (0.5, 0.5)},
        {"kind": "speech", "actor": "npc-001", "target": "npc-002", "text": "Wolves!",
         "position": (2, 2), "payload": {"sentiment": 0.6}},
        {"kind": "movement", "actor": "npc-003", "position": (2, 1)},
        {"kind": "combat", "actor": "npc-004", "position": (2, 1)},  # npc-003 is near now
        {"kind": "collision", "actor": "npc-005", "target": "npc-000", "position": (1, 1),
         "payload": {"contactClass": "villager"}},
    ], now=now)
    return list(got.ids) if hasattr(got, "ids") else list(got)


@pytest.mark.parametrize("shards", [1, 2, 4])
def test_the_village_and_its_engine_events_give_the_single_process_hashes(
        shards: int, single: dict[str, str], ray_cluster: Any) -> None:
    engine = sharded(shards)
    try:
        got = run_village(engine, agents=AGENTS, ticks=TICKS, seed=SEED).hashes()
        assert {k: single[k] for k in got} == got
        assert single["events_ids"] == ",".join(_world(engine, TICKS * 1_000))
        assert single["after_events"] == engine.state_hash()
        assert (2.0, 1.0, 0.0) == engine.position_of("npc-003")  # the mover, mirrored
        if shards == 1:  # a shard that was not durable is reported lost when it dies
            kill(ray_cluster, engine.actors[0])
            with pytest.raises(StorageFailedError, match="not durable"):
                engine.count("npc-000")
            return
    finally:
        if shards != 1:
            engine.close()


@pytest.fixture(scope="module")
def two() -> Any:
    engine = sharded(2)
    yield engine
    engine.close()


def test_bus_events_come_back_merged_per_agent(two: ShardedMemoryEngine) -> None:
    one = MemoryEngine(MemoryConfig(), seed=SEED)
    engine = two
    logs: list[list[Any]] = [[], []]
    one.bus.subscribe("*", logs[0].append)
    engine.bus.subscribe("memory:record:*", logs[1].append)
    engine.bus.subscribe("memory:pressure:changed", logs[1].append)
    engine.bus.subscribe("memory:tick", logs[1].append)
    try:
        t = engine.now
        one.tick(t)
        one.set_pressure(engine.pressure)
        logs[0].clear()
        for target in (one, engine):
            target.ingest_batch([{"agent_id": a, "content": f"{a} {n}", "ttl": 5}
                                 for n in range(2) for a in ("z", "m", "b")], now=t + 1)
            target.set_pressure("soft" if engine.pressure.value != "soft" else "normal")
            target.tick(t + 10)
        names = {"memory:pressure:changed", "memory:tick"}
        wanted = [e for e in logs[0] if e.name.startswith("memory:record:") or e.name in names]

        def per_agent(events: list[Any]) -> dict[str, list[Any]]:
            out: dict[str, list[Any]] = {}
            for e in events:
                out.setdefault(getattr(e, "agent_id", getattr(e, "id", "")[:1]), []).append(e)
            return out

        assert per_agent([e for e in wanted if e.name != "memory:tick"]) == per_agent(
            [e for e in logs[1] if e.name != "memory:tick"])
        assert 1 == sum(e.name == "memory:pressure:changed" for e in logs[1])
        ticks = [e for e in logs[1] if e.name == "memory:tick"]
        assert 1 == len(ticks) and logs[1][-1] is ticks[0]
        assert "memory:pressure:changed" == logs[1][6].name  # after the frame's records
    finally:
        engine.bus = type(engine.bus)()


def test_bad_calls_are_refused_before_or_by_their_shard(two: ShardedMemoryEngine) -> None:
    with pytest.raises(InputInvalidError, match="shards"):
        ShardedMemoryEngine(MemoryConfig(), shards=0)
    with pytest.raises(InputInvalidError, match="async"):
        ShardedMemoryEngine(MemoryConfig(embedding_mode="async"), shards=1)
    engine = two
    if True:
        before = engine.state_hash()
        with pytest.raises(InputInvalidError, match="agent_id"):
            engine.ingest_batch([{"agent_id": "a", "content": "x"}, {"content": "y"}], now=20)
        assert before == engine.state_hash()
        with pytest.raises(TokenBudgetUndefinedError):
            engine.retrieve_many([{"agent_id": "a", "purpose": "dialog", "max_tokens": 0}])
        with pytest.raises(RecordNotFoundError):
            engine.forget(["junk"])
        with pytest.raises(InputInvalidError, match="pressure"):
            engine.set_pressure("panic")
        with pytest.raises(InputInvalidError):
            engine.tick(-5)
        a, b = sorted({"p", "q", "r", "s"}, key=engine.shard_of)[::3]
        if engine.shard_of(a) != engine.shard_of(b):  # one shard refuses its part
            with pytest.raises(InputInvalidError) as info:
                engine.ingest_batch([{"agent_id": a, "content": "fine"},
                                     {"agent_id": b, "content": ""}], now=20)
            assert [engine.shard_of(a)] == info.value.details["appliedShards"]


def test_load_onto_other_shard_counts_and_a_killed_shard_keeps_every_acknowledged_write(
        tmp_path: Path, ray_cluster: Any) -> None:
    one = MemoryEngine(MemoryConfig(), seed=SEED)
    village = Village(AGENTS, SEED)
    for tick in range(6):
        village(one, tick)
    one.save(tmp_path / "one.f09")
    request = RetrievalRequest(agent_id="npc-003", purpose="dialog", max_tokens=400)
    # a single-process snapshot onto 2 durable shards: same hash, bundles and future
    loaded = ShardedMemoryEngine.load(tmp_path / "one.f09", shards=2, path=tmp_path / "db",
                                     actor_options=OPTIONS)
    try:
        assert one.state_hash() == loaded.state_hash()
        assert (one.now, one.pressure) == (loaded.now, loaded.pressure)
        assert one.retrieve(request).records == loaded.retrieve(request).records
        twin = copy.deepcopy(village)
        village(one, 6)
        twin(loaded, 6)
        acknowledged = loaded.state_hash()
        victim = loaded.actors[1]
        pid = kill(ray_cluster, victim)  # mid-run, between two frames
        assert acknowledged == loaded.state_hash()  # back from its checkpoint + journal
        assert pid != ray_cluster.get(victim.process_id.remote())
        for tick in range(7, 9):
            village(one, tick)
            twin(loaded, tick)
        assert one.state_hash() == loaded.state_hash()
        loaded.save(tmp_path / "saved")
    finally:
        loaded.close()
    back = ShardedMemoryEngine.load(tmp_path / "saved", shards=1, actor_options=OPTIONS)
    try:
        assert one.state_hash() == back.state_hash()
    finally:
        back.close()
    shard_file = tmp_path / "saved" / "shard-0001.f09"
    data = bytearray(shard_file.read_bytes())
    data[-1] ^= 0xFF
    shard_file.write_bytes(bytes(data))
    with pytest.raises(SnapshotInvalidError, match="checksum"):
        ShardedMemoryEngine.load(tmp_path / "saved")
    with pytest.raises(SnapshotInvalidError, match="manifest"):
        ShardedMemoryEngine.load(tmp_path)
    with pytest.raises(SnapshotInvalidError, match="another layout"):
        ShardedMemoryEngine(MemoryConfig(), shards=3, seed=SEED, path=tmp_path / "db")


def test_a_whole_frame_in_one_call_per_shard_equals_the_calls_one_by_one(
        two: ShardedMemoryEngine) -> None:
    one = MemoryEngine(MemoryConfig(), seed=SEED)
    start = two.now + 1_000
    for t, target in enumerate((one, two)):
        del t
        target.tick(start)
    items = [{"agent_id": f"f-{i % 5}", "content": f"frame item {i}", "ttl": 3_000}
             for i in range(12)]
    requests = [RetrievalRequest(agent_id=f"f-{i}", purpose="dialog", max_tokens=300)
                for i in (4, 0, 2)]
    ids = one.ingest_batch(items, now=start + 10).ids
    expected = one.retrieve_many(requests, now=start + 10)
    report = one.tick(start + 10, budget_ms=None)
    got = two.frame(items, requests, now=start + 10, budget_ms=None, hashes=True)
    assert list(ids) == got.ids
    assert [b.records for b in expected] == [b.records for b in got.bundles]
    assert got.report is not None and report.decayed <= got.report.decayed
    assert got.bundles.hashes is not None and 3 == len(got.bundles.hashes)
    for agent in ("f-0", "f-3"):
        assert [r.content for r in one.records(agent)] == [
            r.content for r in two.records(agent)]
    with pytest.raises(InputInvalidError):
        two.frame([{"content": "no agent"}], now=start + 20)


def _in_step(two: ShardedMemoryEngine, ahead: int) -> tuple[MemoryEngine, int]:
    """A single engine at the shared module fixture's clock moved ``ahead``, both ticked."""
    one = MemoryEngine(MemoryConfig(), seed=SEED)
    start = two.now + ahead
    one.tick(start)
    two.tick(start)
    return one, start


def test_interactions_live_on_the_shard_of_the_agent_whose_opinion_they_are(
        two: ShardedMemoryEngine) -> None:
    one, start = _in_step(two, 1_000)
    items = [("s-a", "s-b", 0.8), ("s-b", "s-a", -0.4), ("s-c", "s-a", 0.9),
             {"agent_id": "s-a", "other_agent_id": "s-c", "sentiment": -0.9,
              "kind": "betrayal"}, ("s-a", "s-b", 0.7)]
    expected = one.interact_many(items, now=start + 5)
    got = two.interact_many(items, now=start + 5)
    assert sorted(expected, key=lambda c: c.agent_id) == got
    for agent, other in (("s-a", "s-b"), ("s-b", "s-a"), ("s-a", "s-c"), ("s-c", "s-b")):
        assert one.opinion(agent, other) == two.opinion(agent, other)
    assert one.acquaintances("s-a", 5) == two.acquaintances("s-a", 5)
    assert one.interact("s-c", "s-b", 0.1) == two.interact("s-c", "s-b", 0.1)
    assert [] == two.procedures("s-a")
    with pytest.raises(InputInvalidError, match="chain"):
        two.interact_many([{"agent_id": "s-a", "other_agent_id": "s-c", "sentiment": 0.2,
                            "kind": "hearsay", "source": "s-b", "chain": ["s-d"]}])
    heard = [engine.hear("s-a", "s-d", source="s-b", sentiment=-0.6, now=start + 6)
             for engine in (one, two)]
    assert heard[0] == heard[1] and one.opinion("s-a", "s-d") == two.opinion("s-a", "s-d")
    with pytest.raises(InputInvalidError, match="chain"):
        two.hear("s-a", "s-d", source="s-b", sentiment=0.1, chain=["s-c"])
    with pytest.raises(InputInvalidError, match="agent_id"):
        two.interact_many([{"sentiment": 0.2}])


def test_claims_are_stored_and_superseded_on_the_agent_s_shard(
        two: ShardedMemoryEngine) -> None:
    from f09_memory.ingestion import Claim

    one, start = _in_step(two, 2_000)
    calls = [("c-a", "The mill costs 5.", Claim("mill", "costs", "5"), start + 1),
             ("c-b", "The well is dry.", Claim("well", "state", "dry"), start + 2),
             ("c-a", "The mill costs 5.", Claim("mill", "costs", "5"), start + 3),
             ("c-a", "The mill costs 9.", Claim("mill", "costs", "9"), start + 4)]
    for agent, text, claim, now in calls:
        assert one.ingest_claim(agent, text, claim, now=now) == two.ingest_claim(
            agent, text, claim, now=now)
    outcomes = [engine.ingest_claim("c-a", "The mill costs 9.", Claim("mill", "costs", "9"),
                                    now=start + 5).action for engine in (one, two)]
    assert ["reinforced", "reinforced"] == outcomes
    for agent in ("c-a", "c-b"):
        assert one.records(agent) == two.records(agent)
    assert "superseded" in {r.metadata.attributes.get("claimStatus")
                            for r in two.records("c-a")}
    with pytest.raises(InputInvalidError):
        two.ingest_claim("c-a", "", Claim("mill", "costs", "1"), now=start + 6)
    with pytest.raises(InputInvalidError):
        two.ingest_claim("", "The mill costs 1.", Claim("mill", "costs", "1"))


def test_nearby_is_answered_by_the_agent_s_shard(two: ShardedMemoryEngine) -> None:
    one, start = _in_step(two, 3_000)
    places = [("well", 1, 0), ("oak", 3, 4), ("mill", 9, 9), ("gate", -2, 1)]
    for target in (one, two):
        for agent in ("n-a", "n-b"):
            target.ingest_many(agent, [
                {"content": f"{agent} saw the {name}.", "importance": 0.5,
                 "metadata": {"spatial": {"x": x, "y": y}}} for name, x, y in places],
                now=start + 1)
    for agent in ("n-a", "n-b"):
        expected = list(one.nearby(agent, (0, 0), radius=6, k=3))
        got = two.nearby(agent, (0, 0), radius=6, k=3)
        assert expected == got and 3 == len(got)
        assert [f"{agent} saw the {p}." for p in ("well", "gate", "oak")] == [
            n.record.content for n in got]
    assert [] == two.nearby("n-a", (50, 50), radius=1, k=2)
    with pytest.raises(InputInvalidError):
        two.nearby("n-a", (0, 0), radius=-1, k=2)
    with pytest.raises(InputInvalidError):
        two.nearby("", (0, 0), radius=1, k=2)


def test_shards_on_an_embedder_in_child_processes_give_the_single_process_hashes(
        single: dict[str, str]) -> None:
    # Each shard unpickles the ProcessEmbedder: a child process of its own per shard, with
    # the default embedder's vectors (HashingEmbedder(dim, seed=engine seed)).
    embedder = ProcessEmbedder(partial(HashingEmbedder, MemoryConfig().embedding_dim,
                                       seed=SEED))
    engine = sharded(2, embedder=embedder)
    try:
        got = run_village(engine, agents=AGENTS, ticks=TICKS, seed=SEED).hashes()
        assert {k: single[k] for k in got} == got
    finally:
        engine.close()
        embedder.close()
