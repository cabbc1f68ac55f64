"""save/load: identical state hash and retrievals, atomic writes, refused bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, bundle_hash
from f09_memory.determinism import run_village
from f09_memory.determinism.scenario import LIFECYCLE_CONFIG
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.persistence import MAGIC
from f09_memory.testing import FakeEmbedder, ScriptedLLM


def requests(agents: int) -> list[RetrievalRequest]:
    return [RetrievalRequest(agent_id=f"npc-{i:03d}", purpose=p, max_tokens=400,
                             strategy="semantic", query="the smith at the market")
            for i in range(agents) for p in ("reasoning", "dialog")]


def test_round_trip_keeps_the_state_hash_and_the_next_retrievals(tmp_path: Path) -> None:
    engine = MemoryEngine(MemoryConfig(**LIFECYCLE_CONFIG), seed=3)
    run_village(engine, agents=4, ticks=40, seed=3, tick_ms=10_000)
    engine.tick(engine.now + 10_000)  # leave summarization tasks queued
    path = engine.save(tmp_path / "village.f09")
    loaded = MemoryEngine.load(path)
    assert engine.state_hash() == loaded.state_hash()
    for r in requests(4):
        assert bundle_hash(engine.retrieve(r)) == bundle_hash(loaded.retrieve(r))
    assert [t.id for t in engine.summarization.pending()] == [
        t.id for t in loaded.summarization.pending()]
    llm = ScriptedLLM(["Villager 001 met Villager 002 at the market."])
    for e in (engine, loaded):
        e.summarize_pending(llm, now=e.now)
        e.ingest("npc-000", "A new day begins.", now=e.now)
        e.tick(e.now + 10_000, budget_ms=1.0)
    assert engine.state_hash() == loaded.state_hash()
    loaded._check()


def test_round_trip_keeps_vector_indexes_of_large_agents(tmp_path: Path) -> None:
    cfg = MemoryConfig(episodic_max=600, semantic_preselect_threshold=100, exact_index_max=200,
                       semantic_preselect_min_ratio=0, semantic_preselect_k=20, embedding_dim=32)
    engine = MemoryEngine(cfg, seed=5)
    engine.ingest_many("a", [f"grain river boat {i % 17} sword {i % 5}" for i in range(400)],
                       now=0)
    engine.tick(1)
    am = engine._state.store.get("a")
    assert am is not None and am.index is not None
    loaded = MemoryEngine.load(engine.save(tmp_path / "big.f09"))
    request = RetrievalRequest(agent_id="a", purpose="reasoning", max_tokens=300,
                               strategy="semantic", query="boat on the river")
    assert bundle_hash(engine.retrieve(request, now=2)) == bundle_hash(
        loaded.retrieve(request, now=2))
    loaded._check()


def test_a_different_embedder_version_re_embeds_after_load(tmp_path: Path) -> None:
    engine = MemoryEngine(MemoryConfig(embedding_dim=16), embedder=FakeEmbedder(16, "v1"))
    engine.ingest_many("a", ["one", "two", "three"], now=0)
    path = engine.save(tmp_path / "s.f09")
    same = MemoryEngine.load(path, embedder=FakeEmbedder(16, "v1"))
    other = MemoryEngine.load(path, embedder=FakeEmbedder(16, "v2"))
    assert 0 == same.tick(1).embedded
    assert 3 == other.tick(1).embedded


def test_save_replaces_the_file_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    engine = MemoryEngine(embedder=None)
    engine.ingest("a", "first", now=0)
    path = engine.save(tmp_path / "s.f09")
    before = path.read_bytes()
    engine.ingest("a", "second", now=1)

    def boom(*_: object, **__: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(OSError):
        engine.save(path)
    assert before == path.read_bytes()
    assert [path] == list(tmp_path.iterdir())  # the temporary file was removed


def _corrupt(data: bytes) -> bytes:
    body = bytearray(data)
    body[-10] ^= 0xFF
    return bytes(body)


@pytest.mark.parametrize(("mutate", "needle"), [
    (lambda d: d[: len(d) // 2], "truncated"),
    (_corrupt, "checksum"),
    (lambda d: d.replace(b"version 3", b"version 9", 1), "version 9"),
    (lambda d: b"PK\x03\x04 not ours", "not an f09-memory snapshot"),
    (lambda d: MAGIC + b"version 3\n", "truncated inside its header"),
])
def test_bad_files_are_refused_naming_the_problem(tmp_path: Path, mutate, needle: str) -> None:
    engine = MemoryEngine(embedder=None)
    engine.ingest_many("a", ["x", "y"], now=0)
    path = engine.save(tmp_path / "s.f09")
    path.write_bytes(mutate(path.read_bytes()))
    with pytest.raises(MemoryEngineError) as info:
        MemoryEngine.load(path)
    assert ErrorCode.MEMORY_SNAPSHOT_INVALID == info.value.code
    assert needle in info.value.message


def test_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryEngine.load(tmp_path / "nope.f09")
    assert ErrorCode.MEMORY_SNAPSHOT_INVALID == info.value.code


def test_dumps_and_loads_round_trip_in_memory_like_a_file(tmp_path: Path) -> None:
    engine = MemoryEngine(MemoryConfig(), seed=5, embedder=FakeEmbedder(16, "v1"))
    run_village(engine, agents=3, ticks=15, seed=5)
    blob = engine.dumps()
    assert blob.startswith(MAGIC)
    assert blob == (engine.save(tmp_path / "same.f09")).read_bytes()
    loaded = MemoryEngine.loads(blob, embedder=FakeEmbedder(16, "v1"))
    assert engine.state_hash() == loaded.state_hash()
    for r in requests(3):
        assert bundle_hash(engine.retrieve(r)) == bundle_hash(loaded.retrieve(r))
    loaded._check()


def test_loads_refuses_what_is_not_a_snapshot() -> None:
    blob = MemoryEngine(MemoryConfig(), seed=0).dumps()
    for bad in ("a string", b"not a snapshot", blob[: len(blob) // 2]):
        with pytest.raises(MemoryEngineError) as err:
            MemoryEngine.loads(bad)  # type: ignore[arg-type]
        assert ErrorCode.MEMORY_SNAPSHOT_INVALID == err.value.code
