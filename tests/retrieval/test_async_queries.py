"""Async mode queries: off the frame, applied at a logical tick, part of the state."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, bundle_hash
from f09_memory.embedding import HashingEmbedder
from f09_memory.retrieval.semantic import QUERY_PENDING

MAIL = "qm-secret-31@example.org"


class RecordingEmbedder(HashingEmbedder):
    """The hashing embedder, recording the threads and texts it embeds, optionally slow."""

    def __init__(self, delay_s: float = 0.0) -> None:
        super().__init__(16, seed=0)
        self.delay_s = delay_s
        self.threads: list[str] = []
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.threads.append(threading.current_thread().name)
        self.texts.extend(texts)
        if self.delay_s:
            time.sleep(self.delay_s)
        return super().embed(texts)


def _engine(model: HashingEmbedder, latency: int = 100) -> MemoryEngine:
    return MemoryEngine(MemoryConfig(embedding_dim=16, embedding_mode="async",
                                     embedding_latency_ms=latency), embedder=model)


def _req(agent: str, query: str) -> RetrievalRequest:
    return RetrievalRequest(agent_id=agent, purpose="dialog", max_tokens=200,
                            strategy="semantic", query=query)


def _seed(engine: MemoryEngine) -> None:
    for agent in ("a", "b"):
        engine.ingest_many(agent, ["a storm over the river", "the guard lost his key",
                                   "the smith forged a sword"], now=0)
    engine.tick(100)  # the records' vectors land


def test_a_new_query_waits_for_its_tick_and_never_runs_the_model_in_the_frame() -> None:
    model = RecordingEmbedder()
    engine = _engine(model)
    _seed(engine)
    model.threads.clear()
    before = engine.retrieve(_req("a", "sword"), now=150)
    assert QUERY_PENDING == before.diagnostics.semantic_fallback
    crowd = engine.retrieve_many([_req("a", "sword"), _req("b", "river")], now=160)
    assert [QUERY_PENDING] * 2 == [b.diagnostics.semantic_fallback for b in crowd]
    assert 0 == engine.tick(249).embedded  # "sword" is due at 250, "river" at 260
    assert QUERY_PENDING == engine.retrieve(_req("a", "sword"), now=249
                                            ).diagnostics.semantic_fallback
    engine.tick(250)
    after = engine.retrieve(_req("a", "sword"), now=251)
    assert after.diagnostics.semantic_fallback is None
    assert "the smith forged a sword" == after.records[0].content
    assert QUERY_PENDING == engine.retrieve(_req("b", "river"), now=251
                                            ).diagnostics.semantic_fallback
    assert all(name.startswith("f09-embed") for name in model.threads)
    assert 2 == len(model.threads)  # one job per distinct text, submitted once


def test_once_applied_the_bundles_equal_the_synchronous_engine() -> None:
    sync = MemoryEngine(MemoryConfig(embedding_dim=16), embedder=HashingEmbedder(16))
    lazy = _engine(HashingEmbedder(16))
    for engine in (sync, lazy):
        _seed(engine)
    lazy.retrieve_many([_req("a", "sword"), _req("b", "a key")], now=150)
    lazy.tick(250)
    for agent, query in (("a", "sword"), ("b", "a key")):
        assert bundle_hash(sync.retrieve(_req(agent, query), now=300)) == bundle_hash(
            lazy.retrieve(_req(agent, query), now=300))


def _run(model: HashingEmbedder) -> list[str]:
    engine = _engine(model, latency=20)
    out = []
    for step in range(12):
        now = step * 10
        engine.ingest("a", f"event {step}: the smith at the forge", now=now)
        bundles = engine.retrieve_many([_req("a", f"forge {step % 4}"),
                                        _req("a", "smith")], now=now)
        out.extend(bundle_hash(b) for b in bundles)
        engine.tick(now)
        out.append(engine.state_hash())
    return out


def test_results_do_not_depend_on_the_worker_speed() -> None:
    assert _run(RecordingEmbedder()) == _run(RecordingEmbedder(delay_s=0.01))


def test_the_query_table_is_saved_hashed_and_keyed_by_the_redacted_text(
        tmp_path: Path) -> None:
    model = RecordingEmbedder()
    engine = _engine(model)
    _seed(engine)
    hash_before = engine.state_hash()
    engine.retrieve(_req("a", f"mail from {MAIL}"), now=150)
    engine.retrieve(_req("a", "sword"), now=150)
    engine.save(tmp_path / "pending.f09")  # the query jobs are pending
    engine.tick(250)
    assert hash_before != engine.state_hash()  # the table is state
    assert not any(MAIL in t for t in model.texts)  # redacted before the model
    path = engine.save(tmp_path / "applied.f09")
    assert MAIL.encode() not in path.read_bytes()
    for name in ("pending.f09", "applied.f09"):
        loaded = MemoryEngine.load(tmp_path / name, embedder=RecordingEmbedder())
        loaded.tick(250)
        assert engine.state_hash() == loaded.state_hash()
        request = _req("a", "sword")
        assert bundle_hash(engine.retrieve(request, now=300)) == bundle_hash(
            loaded.retrieve(request, now=300))


def test_durable_mode_journals_the_query_table(tmp_path: Path) -> None:
    cfg = MemoryConfig(embedding_dim=16, embedding_mode="async", embedding_latency_ms=100)
    engine = MemoryEngine.open(tmp_path / "q.db", cfg, embedder=HashingEmbedder(16))
    _seed(engine)
    engine.retrieve_many([_req("a", "sword"), _req("b", "river")], now=150)
    engine.tick(260)
    live = engine.state_hash()
    assert engine._durable is not None
    engine._durable.log.close()  # as a crash
    reopened = MemoryEngine.open(tmp_path / "q.db", embedder=HashingEmbedder(16))
    assert live == reopened.state_hash()
    assert reopened.retrieve(_req("b", "river"), now=300).diagnostics.semantic_fallback is None
    reopened.close()


def test_a_new_embedder_empties_the_table() -> None:
    engine = _engine(HashingEmbedder(16))
    _seed(engine)
    engine.retrieve(_req("a", "sword"), now=150)
    engine.tick(250)
    engine.set_embedder(HashingEmbedder(16, seed=9))
    assert QUERY_PENDING == engine.retrieve(_req("a", "sword"), now=260
                                            ).diagnostics.semantic_fallback


@pytest.mark.parametrize("given", [True, False])
def test_an_explicit_query_vector_is_used_while_the_text_is_pending(given: bool) -> None:
    engine = _engine(HashingEmbedder(16))
    _seed(engine)
    vector = HashingEmbedder(16).embed(["sword"])[0].tolist() if given else None
    request = RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=200,
                               strategy="semantic", query="sword", query_vector=vector)
    bundle = engine.retrieve(request, now=150)
    assert (None if given else QUERY_PENDING) == bundle.diagnostics.semantic_fallback
