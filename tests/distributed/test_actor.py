"""A shard actor run in-process (no Ray): numbered writes, durable reopen, crowd replies."""

from __future__ import annotations

from pathlib import Path

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest
from f09_memory.determinism.hashing import bundle_hash
from f09_memory.distributed import ShardActor, ShardSpec, decode_bundle
from f09_memory.distributed.wire import encode_requests


def _spec(path: Path | None = None) -> ShardSpec:
    return ShardSpec(0, 1, MemoryConfig(), 4, None if path is None else str(path / "s.db"))


def test_a_numbered_write_is_applied_once_and_its_number_is_kept_across_a_crash(
        tmp_path: Path) -> None:
    actor = ShardActor(_spec(tmp_path))
    ok, ids, _, busy = actor.write(1, (), "ingest_batch",
                                   ([{"agent_id": "a", "content": "hello"}],), {"now": 5})
    assert ok and ["a:0000000000"] == ids and busy >= 0
    ok, error, _, _ = actor.write(1, (), "ingest_batch",
                                  ([{"agent_id": "a", "content": "again"}],), {"now": 6})
    assert not ok and error[2]["applied"] is True  # never applied twice
    before = actor.hash_parts()
    durable = actor.engine._durable
    assert durable is not None
    durable.log.close()  # the process dies: no checkpoint, the journal stays
    reopened = ShardActor(_spec(tmp_path))
    assert 1 == reopened.applied() and before == reopened.hash_parts()
    reopened.close()


def test_a_refused_write_reports_its_error_and_applies_nothing() -> None:
    actor = ShardActor(_spec())
    ok, error, events, _ = actor.write(1, ("memory:record:created",), "ingest",
                                       ("a", ""), {"now": 1})
    assert not ok and "MEMORY_INPUT_INVALID" == error[0] and [] == events
    assert 0 == actor.applied() and 0 == actor.engine.count()


def test_the_crowd_reply_holds_each_bundle_encoded_with_its_hash() -> None:
    actor = ShardActor(_spec())
    actor.write(1, (), "ingest_batch", ([{"agent_id": a, "content": f"{a} saw the well"}
                                         for a in ("a", "b")],), {"now": 1})
    requests = [RetrievalRequest(agent_id=a, purpose="dialog", max_tokens=200)
                for a in ("b", "a")]
    ok, (blobs, hashes), events, _ = actor.retrieve_many(
        ("memory:retrieval",), encode_requests(requests), True, 2, True)
    assert ok and ["b", "a"] == [e.agent_id for e in events]
    single = MemoryEngine(MemoryConfig(), seed=4)
    single.ingest_batch([{"agent_id": a, "content": f"{a} saw the well"} for a in ("a", "b")],
                        now=1)
    expected = single.retrieve_many(requests, now=2)
    assert [bundle_hash(b) for b in expected] == hashes
    assert [b.records for b in expected] == [decode_bundle(b).records for b in blobs]


def test_tick_mode_commits_at_each_tick_and_frame(tmp_path: Path) -> None:
    spec = ShardSpec(0, 1, MemoryConfig(), 4, str(tmp_path / "t.db"), commit="tick")
    actor = ShardActor(spec)
    actor.write(1, (), "ingest_batch", ([{"agent_id": "a", "content": "kept"}],), {"now": 1})
    actor.write(2, (), "tick", (5,), {})
    actor.frame_write(3, (), None, [{"agent_id": "b", "content": "also kept"}],
                      encode_requests([]), True, 6, None, True, False)
    actor.write(4, (), "ingest_batch", ([{"agent_id": "c", "content": "lost"}],), {"now": 7})
    durable = actor.engine._durable
    assert durable is not None
    durable.log.close()  # the process dies before the next tick
    reopened = ShardActor(spec)
    assert 3 == reopened.applied() and ["a", "b"] == reopened.engine.agents()
    reopened.close()
