"""``retrieve_many(..., hashes=True)``: the engine's own bundle hashes equal ``bundle_hash``.

The engine keeps one digest per record version (per slot, with the record's ``rev``) and
one per compressed record; every test here changes what those depend on and checks the
kept digests follow (each hash is compared with ``bundle_hash`` of the returned bundle).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, bundle_hash
from f09_memory.embedding.hashing import HashingEmbedder
from f09_memory.errors import InputInvalidError
from f09_memory.retrieval.digest import RetrievedBundles

AGENTS = ("a", "b", "c")


def _requests(budget: int = 400, **extra: object) -> list[RetrievalRequest]:
    return [RetrievalRequest(agent_id=agent, purpose="dialog", max_tokens=budget, **extra)
            for agent in AGENTS]


def _check(engine: MemoryEngine, now: int, requests: list[RetrievalRequest] | None = None
           ) -> RetrievedBundles:
    bundles = engine.retrieve_many(requests or _requests(), now=now, hashes=True)
    assert bundles.hashes is not None
    assert bundles.hashes == [bundle_hash(b) for b in bundles]
    return bundles


def _engine(**config: object) -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(**config), seed=3)  # type: ignore[arg-type]
    for i in range(30):
        engine.ingest(AGENTS[i % 3], f"the smith {i} saw a wolf near the mill",
                      importance=0.1 + 0.02 * i, tags=["wolf"] if i % 4 else [], now=i + 1)
    return engine


def test_hashes_are_left_out_unless_asked_for() -> None:
    engine = _engine()
    plain = engine.retrieve_many(_requests(), now=100)
    assert isinstance(plain, list) and plain.hashes is None
    hashed = _check(engine, 100)
    assert [b.records for b in hashed] == [b.records for b in plain]


def test_hashes_follow_every_kind_of_record_change() -> None:
    engine = _engine()
    first = _check(engine, 100)
    first_ids = [r.id for r in first[0].records]
    engine.update(first_ids[0], importance=0.99)
    engine.update(first_ids[1], tags=["fire"])
    engine.update(first_ids[2], content="the mill burned down at night")
    engine.forget([first_ids[3]])
    engine.ingest("a", "a new memory of the well", importance=0.9, now=101)
    after = _check(engine, 102)
    assert after.hashes != first.hashes
    engine.forget(agent_id="b")
    _check(engine, 103)
    engine.ingest("b", "the smith came back", now=104)
    _check(engine, 105)


def test_hashes_under_compressing_pressure_and_back() -> None:
    engine = _engine()
    normal = _check(engine, 100)
    for state in ("throttle", "exhausted", "soft", "throttle", "normal"):
        engine.set_pressure(state)
        bundles = _check(engine, 100)
        if state == "throttle":
            assert any(b.diagnostics.compression_applied for b in bundles)
    assert _check(engine, 100).hashes == normal.hashes
    engine.set_pressure("throttle")
    engine.update(normal[0].records[0].id, content="a different text entirely now")
    _check(engine, 101)  # a compressed record whose source changed is digested again


def test_hashes_with_a_new_embedder_and_after_its_reembedding() -> None:
    engine = _engine()
    query = _requests(query="wolf at the mill")
    _check(engine, 100, query)
    engine.set_embedder(HashingEmbedder(384, seed=9))  # every embedding_ref changes
    _check(engine, 100, query)
    for t in range(5):
        engine.tick(200 + t, budget_ms=None)
    _check(engine, 300, query)
    engine.set_embedder(None)
    _check(engine, 301, query)


def test_hashes_after_load_and_in_a_fresh_process_state(tmp_path: Path) -> None:
    engine = _engine()
    before = _check(engine, 100)
    engine.save(tmp_path / "snap")
    loaded = MemoryEngine.load(tmp_path / "snap")
    assert _check(loaded, 100).hashes == before.hashes
    engine.ingest("a", "one more", now=101)
    loaded.ingest("a", "one more", now=101)
    assert _check(engine, 102).hashes == _check(loaded, 102).hashes


def test_hashes_of_empty_unknown_and_large_preselected_agents() -> None:
    engine = MemoryEngine(MemoryConfig(semantic_preselect_threshold=200, exact_index_max=100,
                                       semantic_preselect_min_ratio=0), seed=1)
    rng = np.random.default_rng(0)
    words = ["wolf", "mill", "smith", "river", "bread", "storm", "lantern", "gate"]
    engine.ingest_many("big", [
        {"content": " ".join(rng.choice(words, size=6)), "importance": float(i % 10) / 10}
        for i in range(400)], now=1)
    requests = [RetrievalRequest(agent_id="big", purpose="reasoning", max_tokens=300,
                                 query="wolf near the river"),
                RetrievalRequest(agent_id="nobody", purpose="dialog", max_tokens=300),
                RetrievalRequest(agent_id="big", purpose="dialog", max_tokens=300,
                                 layers=["semantic"])]
    bundles = _check(engine, 10, requests)
    assert bundles[0].records and not bundles[1].records and not bundles[2].records


def test_hashes_when_the_record_cache_starts_over() -> None:
    engine = _engine()
    engine._reader._capacity = 8  # the object cache starts over often; digests stay valid
    for now in range(100, 106):
        engine.ingest("c", f"memory {now}", now=now)
        _check(engine, now)


def test_a_bad_frame_or_flag_raises_before_anything_is_served() -> None:
    engine = _engine()
    before = engine.state_hash()
    with pytest.raises(InputInvalidError):
        engine.retrieve_many("not a list", now=100, hashes=True)  # type: ignore[arg-type]
    with pytest.raises(InputInvalidError) as info:
        engine.retrieve_many(_requests(), now=100, hashes="yes")  # type: ignore[arg-type]
    assert info.value.details["field"] == "hashes"
    assert engine.state_hash() == before
    _check(engine, 100)



@pytest.mark.parametrize("pressure", ["normal", "throttle"])
def test_hashes_after_a_durable_frame_is_undone(tmp_path: Path, pressure: str) -> None:
    # commit="tick": a write that fails (a full disk) reloads the last committed state,
    # undoing the frame, whose record versions (revs) are then given out again to other
    # contents. The digests kept for the undone versions must go with them.
    from f09_memory.errors import MemoryEngineError

    engine = MemoryEngine.open(tmp_path / "mem.db", seed=1, commit="tick",
                               checkpoint_every=1_000_000)
    for i in range(6):
        engine.ingest(AGENTS[i % 3], f"a fact about the mill {i}", now=i)
    engine.set_pressure(pressure)
    engine.tick(10)
    target = _check(engine, 11)[1].records[0].id
    engine.update(target, content="first rewrite, undone with its frame")
    assert target in [r.id for r in _check(engine, 12)[1].records]
    assert engine._durable is not None
    db = engine._durable.log._db
    db.execute(f"PRAGMA max_page_count={db.execute('PRAGMA page_count').fetchone()[0]}")
    with pytest.raises(MemoryEngineError):
        for i in range(100):
            engine.ingest("a", f"filler {i} " + "y" * 3000, now=13)
    db.execute("PRAGMA max_page_count=1000000")
    assert engine.get(target).content != "first rewrite, undone with its frame"
    engine.update(target, content="second rewrite, kept")
    assert engine.get(target).content == "second rewrite, kept"
    assert target in [r.id for r in _check(engine, 14)[1].records]
    engine.close()
