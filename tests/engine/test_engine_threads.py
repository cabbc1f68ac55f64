"""Threads: an engine belongs to one thread; every foreign call is a clean, harmless error."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.errors import ErrorCode, InputInvalidError, MemoryEngineError
from f09_memory.testing import ScriptedLLM

REQ: dict[str, Any] = {"agentId": "npc-0", "purpose": "dialog", "maxTokens": 300}
CONFIG = MemoryConfig(episodic_window=0, summarization_min_interval_ms=0,
                      summarization_batch_size=5, summarization_keep_recent=2)


def owner_work(engine: MemoryEngine, step: int) -> None:
    """One step of the owner's loop: writes, reads, a tick, a summary now and then."""
    now = 100 * (step + 1)
    engine.ingest(f"npc-{step % 3}", f"event {step} at the mill", now=now)
    engine.ingest_many("npc-0", [f"rumour {step}", {"content": f"fact {step}",
                                                    "layer": "semantic"}], now=now)
    engine.retrieve(REQ, now=now)
    engine.tick(now, budget_ms=1.0)
    if step % 10 == 9:
        engine.summarize_pending(ScriptedLLM(["The miller saw events at the mill."]), now=now)


FOREIGN: list[Callable[[MemoryEngine], object]] = [
    lambda e: e.ingest("npc-9", "intruder", now=50),
    lambda e: e.ingest_batch([{"agent_id": "npc-9", "content": "x"}], now=50),
    lambda e: e.retrieve(REQ, now=50),
    lambda e: e.retrieve_many([REQ], now=50),
    lambda e: e.tick(10**6),
    lambda e: e.forget(agent_id="npc-0"),
    lambda e: e.update("npc-0:0000000000", importance=1.0),
    lambda e: e.set_pressure("throttle"),
    lambda e: e.state_hash(),
    lambda e: e.records("npc-0"),
    lambda e: e.count(),
    lambda e: e.now,
    lambda e: e.pressure,
    lambda e: e.summarization.poll(now=50),
    lambda e: e.summarization.request("npc-0", now=50),
    lambda e: e.summarization.pending(),
]


def test_four_threads_on_one_engine_foreign_calls_fail_cleanly_and_change_nothing() -> None:
    engine = MemoryEngine(CONFIG, embedder=None)
    steps, calls_per_thread = 60, 200
    start = threading.Barrier(4)
    foreign: list[list[BaseException]] = [[] for _ in range(3)]
    accepted: list[int] = [0, 0, 0]

    def intruder(i: int) -> None:
        start.wait()
        for n in range(calls_per_thread):
            try:
                FOREIGN[(n + i) % len(FOREIGN)](engine)
            except BaseException as exc:  # every one must be the clean thread error
                foreign[i].append(exc)
            else:
                accepted[i] += 1

    threads = [threading.Thread(target=intruder, args=(i,), name=f"intruder-{i}")
               for i in range(3)]
    for t in threads:
        t.start()
    start.wait()
    for step in range(steps):
        owner_work(engine, step)
        engine._check()
    for t in threads:
        t.join()

    assert [0, 0, 0] == accepted
    for errors in foreign:
        assert calls_per_thread == len(errors)
        for exc in errors:
            assert isinstance(exc, InputInvalidError), repr(exc)
            assert ErrorCode.MEMORY_INPUT_INVALID == exc.code
            assert "thread" == exc.details["field"] and "bind_thread" in exc.message
    engine._check()
    alone = MemoryEngine(CONFIG, embedder=None)
    for step in range(steps):
        owner_work(alone, step)
    assert alone.state_hash() == engine.state_hash()  # the intruders changed nothing


def test_an_engine_built_on_a_worker_is_handed_to_the_loop_with_bind_thread() -> None:
    handoff: queue.Queue[MemoryEngine] = queue.Queue()
    after: list[BaseException] = []
    done = threading.Event()

    def worker() -> None:
        engine = MemoryEngine(CONFIG, embedder=None)
        engine.ingest("npc-0", "built on the worker", now=1)
        handoff.put(engine)
        done.wait()
        try:
            engine.ingest("npc-0", "too late", now=2)
        except MemoryEngineError as exc:
            after.append(exc)

    t = threading.Thread(target=worker, name="loader")
    t.start()
    engine = handoff.get()
    with pytest.raises(InputInvalidError):
        engine.count()
    engine.bind_thread()
    assert 1 == engine.count()
    engine.ingest("npc-0", "now on the loop", now=3)
    engine.summarization.pending()
    done.set()
    t.join()
    assert 1 == len(after) and "loader" in after[0].message
    assert 2 == engine.count()
    engine._check()


def test_bind_thread_can_name_the_thread_that_takes_over() -> None:
    engine = MemoryEngine(embedder=None)
    results: queue.Queue[object] = queue.Queue()
    go = threading.Event()

    def loop() -> None:
        go.wait()
        results.put(engine.ingest("a", "on the loop", now=1).id)

    t = threading.Thread(target=loop, name="game-loop")
    t.start()
    engine.bind_thread(t)
    with pytest.raises(InputInvalidError):
        engine.count()
    go.set()
    t.join()
    assert "a:0000000000" == results.get_nowait()
    for bad in (threading.Thread(target=print), "main", 5):
        with pytest.raises(InputInvalidError):
            engine.bind_thread(bad)  # type: ignore[arg-type]
    engine.bind_thread()
    assert 1 == engine.count()


def test_the_engines_own_worker_threads_keep_working() -> None:
    engine = MemoryEngine(CONFIG.replace(embedding_mode="async"), seed=1)
    engine.ingest_many("npc-0", [f"event {i} at the mill" for i in range(8)], now=0)
    engine.tick(1)  # attaches the vectors the embedding pool computed
    engine.retrieve({**REQ, "query": "mill"}, now=2)  # the query's vector is on its way
    engine.tick(2)
    assert engine.retrieve({**REQ, "query": "mill"}, now=3).diagnostics.semantic_fallback is None
    if not engine.summarization.pending():
        engine.summarization.request("npc-0", now=4)
    (outcome,) = engine.summarize_pending(ScriptedLLM(["Events at the mill, eight of them."]),
                                          now=4, timeout_ms=60_000)  # the LLM worker thread
    assert outcome.summary_text
    engine._check()


def test_a_durable_engine_is_not_handed_over_its_connection_belongs_to_the_opener(
        tmp_path: Path) -> None:
    engine = MemoryEngine.open(tmp_path / "npc.db", embedder=None)
    engine.ingest("a", "x", now=1)
    with pytest.raises(InputInvalidError) as info:
        engine.bind_thread()
    assert "open" in info.value.message
    engine.ingest("a", "y", now=2)
    engine.close()
