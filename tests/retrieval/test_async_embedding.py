"""Async embedding: ingest never waits for the model; vectors land at a logical tick."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, bundle_hash
from f09_memory.embedding import HashingEmbedder
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.testing import capture_events


class GatedEmbedder(HashingEmbedder):
    """The hashing embedder behind a gate: embed() waits until the test opens it."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(16, seed=seed)
        self.gate = threading.Event()
        self.threads: set[str] = set()

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.threads.add(threading.current_thread().name)
        assert self.gate.wait(10.0)
        return super().embed(texts)


def _engine(embedder: HashingEmbedder, latency: int = 100) -> MemoryEngine:
    cfg = MemoryConfig(embedding_dim=16, embedding_mode="async",
                       embedding_latency_ms=latency)
    return MemoryEngine(cfg, embedder=embedder)


def _req(query: str) -> RetrievalRequest:
    return RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=200,
                            strategy="semantic", query=query)


def test_ingest_returns_before_the_model_and_the_tick_applies_at_the_due_time() -> None:
    model = GatedEmbedder()
    engine = _engine(model)
    records = engine.ingest_many("a", ["the smith forged a sword", "bread at the market"],
                                 now=0)  # the gate is shut: this returns anyway
    assert [None, None] == [r.embedding_ref for r in records]
    assert 0 == engine.tick(99).embedded  # not due yet: the worker's speed does not matter
    model.gate.set()
    report = engine.tick(100)
    assert 2 == report.embedded and 0 == report.backlog.embedding_retries
    assert all(r.embedding_ref for r in engine.records("a"))
    assert "threading" not in model.threads and any("f09-embed" in t for t in model.threads)


def test_async_results_equal_sync_results_once_applied() -> None:
    sync = MemoryEngine(MemoryConfig(embedding_dim=16), embedder=HashingEmbedder(16))
    lazy = _engine(HashingEmbedder(16), latency=0)
    for engine in (sync, lazy):
        engine.ingest_many("a", ["a storm over the river", "the guard lost his key",
                                 "the smith forged a sword"], now=0)
    assert bundle_hash(lazy.retrieve(_req("sword"), now=0)) != bundle_hash(
        sync.retrieve(_req("sword"), now=0))  # no semantic term before the tick
    lazy.tick(0)
    sync.tick(0)
    assert bundle_hash(lazy.retrieve(_req("sword"), now=1)) == bundle_hash(
        sync.retrieve(_req("sword"), now=1))
    assert lazy.records("a") == sync.records("a")  # (state hashes differ: the configs do)


def test_a_host_executor_runs_the_jobs_and_pending_jobs_survive_save_and_load(
        tmp_path: Path) -> None:
    engine = _engine(HashingEmbedder(16), latency=50)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="host-pool") as pool:
        engine.set_embed_executor(pool)
        engine.ingest("a", "the smith forged a sword", now=0)
        engine.save(tmp_path / "e.f09")
        loaded = MemoryEngine.load(tmp_path / "e.f09", embedder=HashingEmbedder(16))
        assert 0 == loaded.tick(49).embedded and 1 == loaded.tick(50).embedded
        assert 1 == engine.tick(50).embedded
    assert loaded.state_hash() == engine.state_hash()


def test_ingest_reserves_the_vector_column_so_the_attaching_tick_allocates_none(
        tmp_path: Path) -> None:
    """The column is made when the texts go to the worker; the due tick writes into it (the
    same array). A save does not hold the empty column (not state): a loaded engine saves
    the same bytes and ends equal."""
    engine = _engine(HashingEmbedder(16), latency=50)
    engine.ingest_many("a", ["the smith forged a sword", "bread at the market"], now=0)
    am = engine._state.store.get("a")
    assert am is not None and am.vectors is not None and (16 == am.vectors.shape[1])
    column = am.vectors
    assert not am.embedded[: am.hi].any()
    engine.save(tmp_path / "pending.f09")
    loaded = MemoryEngine.load(tmp_path / "pending.f09", embedder=HashingEmbedder(16))
    loaded.save(tmp_path / "again.f09")
    assert (tmp_path / "pending.f09").read_bytes() == (tmp_path / "again.f09").read_bytes()
    for e in (engine, loaded):
        assert 2 == e.tick(50).embedded
    assert am.vectors is column and am.embedded[: am.hi].all()
    assert loaded.state_hash() == engine.state_hash()
    assert loaded.records("a") == engine.records("a")


def test_a_failing_model_is_reported_at_the_due_tick_and_retried() -> None:
    class Failing(HashingEmbedder):
        fail = True

        def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
            if Failing.fail:
                raise RuntimeError("model crashed")
            return super().embed(texts)

    engine = _engine(Failing(16), latency=10)
    engine.ingest("a", "a storm over the river", now=0)
    with capture_events(engine.bus, "memory:embedding:failed") as log:
        report = engine.tick(10)
    assert 0 == report.embedded and 1 == len(log.events)
    Failing.fail = False  # the tick handed the record to the worker again, due at 20
    assert 0 == engine.tick(19).embedded and 1 == engine.tick(20).embedded


def test_set_embed_executor_needs_async_mode_and_an_executor() -> None:
    sync = MemoryEngine(MemoryConfig(embedding_dim=16), embedder=HashingEmbedder(16))
    with pytest.raises(MemoryEngineError) as info:
        sync.set_embed_executor(None)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    with pytest.raises(MemoryEngineError):
        _engine(HashingEmbedder(16)).set_embed_executor(object())  # type: ignore[arg-type]


def test_in_async_mode_re_embedding_runs_on_the_worker_and_lands_at_its_tick() -> None:
    engine = _engine(HashingEmbedder(16), latency=5)
    engine.ingest_many("a", ["a storm over the river", "the guard lost his key"], now=0)
    engine.tick(5)
    model = GatedEmbedder(seed=1)  # a new model version: both records are stale
    engine.set_embedder(model)
    first = engine.tick(10, budget_ms=2.0)  # hands the texts over; nothing blocks
    assert (0, 2) == (first.embedded, first.backlog.embedding_retries)
    model.gate.set()
    assert 2 == engine.tick(15).embedded  # their due tick attaches them
    assert all(r.embedding_ref == model.version for r in engine.records("a"))
    assert "MainThread" not in model.threads


def test_a_due_job_skips_records_forgotten_or_changed_meanwhile() -> None:
    """A frame's job attaches each agent's vectors in one block: a record forgotten before
    the due tick is skipped, one whose text changed is left for a retry (embedded later, with
    its new text), the others land at the due tick."""
    model = GatedEmbedder()
    engine = _engine(model)
    out = engine.ingest_batch([{"agent_id": agent, "content": f"{agent} saw the {thing}"}
                               for agent in ("a", "b") for thing in ("mill", "well", "fox")],
                              now=0)
    engine.forget([out.ids[0]])
    engine.update(out.ids[1], content="a saw the burning mill")
    model.gate.set()
    report = engine.tick(100)
    assert 4 == report.embedded  # a's third record and b's three
    by_id = {r.id: r for agent in ("a", "b") for r in engine.records(agent)}
    assert by_id[out.ids[1]].embedding_ref is None
    assert all(by_id[i].embedding_ref for i in out.ids[2:])
    for now in range(101, 400, 50):  # the changed record is re-embedded by a later tick
        engine.tick(now)
    assert engine.get(out.ids[1]).embedding_ref
    top = engine.retrieve(_req("a saw the burning mill"), now=400).records[0]
    assert out.ids[1] == top.id and top.embedding_ref
    engine._check()


def test_the_due_tick_is_charged_per_vector_and_per_agent_it_attaches_to() -> None:
    def used(per_vector: int, per_agent: int) -> tuple[int, int]:
        cfg = MemoryConfig(embedding_dim=16, embedding_mode="async", embedding_latency_ms=10,
                           tick_costs={"embed_apply": per_vector,
                                       "embed_apply_agent": per_agent})
        engine = MemoryEngine(cfg, embedder=HashingEmbedder(16))
        engine.ingest_batch([{"agent_id": agent, "content": f"{agent} saw the cart {i}"}
                             for agent, n in (("a", 2), ("b", 1), ("c", 3))
                             for i in range(n)], now=0)
        assert 0 == engine.tick(9).embedded  # not due: nothing charged for it
        report = engine.tick(10)
        return report.used_units, report.embedded

    base, attached = used(200, 2_000)
    assert 6 == attached
    assert 3 * 3_000 == used(200, 5_000)[0] - base  # three agents' blocks
    assert 6 * 100 == used(300, 2_000)[0] - base  # six vectors


def test_a_wrong_attach_cost_is_refused() -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig(tick_costs={"embed_apply_agent": 0})
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code


def test_the_pending_keys_by_agent_follow_the_queue() -> None:
    """What retries leave alone is gathered from the jobs when asked: it follows submits,
    due jobs taken, a drop and a restored state; a tick with nothing due changes nothing."""
    from f09_memory.retrieval.async_embedding import AsyncEmbedding

    queue = AsyncEmbedding(HashingEmbedder(16).embed, latency_ms=10)
    queue.submit([("a", 1), ("b", 1), ("a", 2)], ["x", "y", "z"], now=0)
    queue.submit([("b", 7)], ["w"], now=5)
    queue.submit_queries(["a query"], now=5)
    assert {"a": {1, 2}, "b": {1, 7}} == queue.keys_by_agent()
    revision = queue.revision
    assert [] == queue.take_due(9) and revision == queue.revision  # nothing due: unchanged
    assert 1 == len(queue.take_due(10))
    assert {"b": {7}} == queue.keys_by_agent()
    assert {"a query"} == queue.queued_queries
    saved = queue.get_state()
    assert [] != queue.take_due(15) and {} == queue.keys_by_agent()
    assert set() == queue.queued_queries
    queue.set_state(saved)
    assert {"b": {7}} == queue.keys_by_agent() and {"a query"} == queue.queued_queries
    queue.drop()
    assert {} == queue.keys_by_agent() and 0 == queue.waiting


def test_a_job_attaches_run_by_run_in_its_order() -> None:
    """An agent named in two runs of a job, a repeated key (its first row wins), an agent
    that left and a changed text: the rows land as if grouped by agent first, and the job
    is charged once per stored agent it names."""
    from f09_memory.retrieval.async_embedding import attach_job

    engine = MemoryEngine(MemoryConfig(embedding_dim=16), embedder=None)
    out = engine.ingest_batch([{"agent_id": a, "content": f"{a} saw the cart {i}"}
                               for a in ("a", "b") for i in range(3)], now=0)
    store = engine._state.store
    key = [int(rid.split(":")[1]) for rid in out.ids]
    texts = [r.content for agent in ("a", "b") for r in engine.records(agent)]
    vectors = np.eye(16, dtype=np.float32)[:9]
    job = [("a", key[0]), ("b", key[3]), ("a", key[1]), ("a", key[1]), ("gone", 1),
           ("b", key[4]), ("a", key[2])]
    rows = [texts[0], texts[3], texts[1], "another text", "x", "changed text", texts[2]]
    retry: set[str] = set()
    assert (4, 2) == attach_job(store, job, rows, vectors[:7], retry)
    assert {"b"} == retry  # b's second record changed its text: a later tick re-embeds it
    a, b = store.get("a"), store.get("b")
    assert a is not None and b is not None and a.vectors is not None
    for k, row in ((key[0], 0), (key[1], 2), (key[2], 6)):
        assert np.array_equal(a.vectors[a.slot_of[k]], vectors[row])
    assert b.embedded[b.slot_of[key[3]]] and not b.embedded[b.slot_of[key[4]]]
    assert (0, 2) == attach_job(store, job, rows, vectors[:7], retry)  # all attached before
    a._check()
    b._check()
