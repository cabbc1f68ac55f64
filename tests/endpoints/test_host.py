"""EngineHost: requests marshalled to the engine's owner thread, pumped between frames."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.endpoints.host import EngineHost, HostBusyError
from f09_memory.errors import ErrorCode, InputInvalidError, RecordNotFoundError

WAIT = 30.0
"""Generous timeout for calls that must succeed (never reached unless the test is broken)."""


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, queue.Queue[Any]]:
    out: queue.Queue[Any] = queue.Queue()

    def target() -> None:
        try:
            out.put(("ok", fn()))
        except BaseException as exc:  # handed to the test
            out.put(("error", exc))

    thread = threading.Thread(target=target)
    thread.start()
    return thread, out


def pump_until_done(host: EngineHost, thread: threading.Thread) -> int:
    ran = 0
    while thread.is_alive():
        ran += host.pump()
        thread.join(0.001)
    return ran + host.pump()


def test_a_call_from_another_thread_runs_on_the_owner_at_its_pump() -> None:
    engine = MemoryEngine(seed=0, embedder=None)
    engine.ingest("npc-1", "Saw the smith at the well", now=1)
    host = EngineHost(engine)
    owner = threading.get_ident()
    thread, out = in_thread(lambda: host.call(
        lambda e: (threading.get_ident(), e.count()), timeout_s=WAIT))
    assert 1 == pump_until_done(host, thread)
    assert ("ok", (owner, 1)) == out.get_nowait()


def test_a_job_error_is_raised_in_the_caller_and_the_owner_keeps_going() -> None:
    engine = MemoryEngine(seed=0, embedder=None)
    host = EngineHost(engine)
    thread, out = in_thread(lambda: host.call(lambda e: e.get("npc-1:0000000000"),
                                              timeout_s=WAIT))
    pump_until_done(host, thread)
    kind, error = out.get_nowait()
    assert "error" == kind and isinstance(error, RecordNotFoundError)
    thread, out = in_thread(lambda: host.call(lambda e: e.count(), timeout_s=WAIT))
    pump_until_done(host, thread)
    assert ("ok", 0) == out.get_nowait()


def test_a_timed_out_job_never_runs_later() -> None:
    engine = MemoryEngine(seed=0, embedder=None)
    host = EngineHost(engine)
    ran: list[int] = []
    thread, out = in_thread(lambda: host.call(lambda e: ran.append(1), timeout_s=0.05))
    thread.join(WAIT)  # nobody pumps: the caller gives up
    kind, error = out.get_nowait()
    assert "error" == kind and isinstance(error, HostBusyError)
    assert 0 == host.pump()  # the cancelled job is skipped
    assert [] == ran and 0 == host.pending()


def test_on_the_owner_thread_a_call_runs_at_once() -> None:
    engine = MemoryEngine(seed=0, embedder=None)
    host = EngineHost(engine)
    assert 0 == host.call(lambda e: e.count())
    assert 0 == host.pending()


def test_a_job_may_call_the_host_again_without_deadlock() -> None:
    engine = MemoryEngine(seed=0, embedder=None)
    host = EngineHost(engine)
    thread, out = in_thread(lambda: host.call(lambda e: host.call(lambda e2: e2.now) + 1,
                                              timeout_s=WAIT))
    pump_until_done(host, thread)
    assert ("ok", 1) == out.get_nowait()


def test_pump_off_the_owner_thread_is_the_engines_thread_error() -> None:
    engine = MemoryEngine(seed=0, embedder=None)
    host = EngineHost(engine)
    thread, out = in_thread(host.pump)
    thread.join(WAIT)
    kind, error = out.get_nowait()
    assert "error" == kind and isinstance(error, InputInvalidError)
    assert "thread" == error.details["field"]


def test_a_full_queue_refuses_at_once_and_max_jobs_bounds_a_pump() -> None:
    engine = MemoryEngine(seed=0, embedder=None)
    host = EngineHost(engine, max_pending=2)
    threads = [in_thread(lambda: host.call(lambda e: e.count(), timeout_s=WAIT))
               for _ in range(2)]
    while host.pending() < 2:
        threading.Event().wait(0.001)
    third, out3 = in_thread(lambda: host.call(lambda e: 0, timeout_s=WAIT))
    third.join(WAIT)
    kind, error = out3.get_nowait()
    assert "error" == kind and isinstance(error, HostBusyError)  # refused at once
    assert 1 == host.pump(max_jobs=1)
    assert 1 == host.pending()
    assert 1 == host.pump()
    for thread, out in threads:
        thread.join(WAIT)
        assert ("ok", 0) == out.get_nowait()


def test_close_fails_the_waiting_calls_and_refuses_new_ones() -> None:
    engine = MemoryEngine(seed=0, embedder=None)
    host = EngineHost(engine)
    thread, out = in_thread(lambda: host.call(lambda e: e.count(), timeout_s=WAIT))
    while host.pending() < 1:
        threading.Event().wait(0.001)
    host.close()
    thread.join(WAIT)
    kind, error = out.get_nowait()
    assert "error" == kind and isinstance(error, HostBusyError)
    thread, out = in_thread(lambda: host.call(lambda e: e.count(), timeout_s=WAIT))
    thread.join(WAIT)
    assert isinstance(out.get_nowait()[1], HostBusyError)
    assert host.closed and 0 == host.pump()


def test_serve_forever_answers_until_stopped_then_closes() -> None:
    ready: queue.Queue[EngineHost] = queue.Queue()
    stop = threading.Event()

    def owner() -> None:
        engine = MemoryEngine(seed=0, embedder=None)  # created (owned) by this thread
        engine.ingest("npc-1", "A quiet morning at the mill", now=5)
        host = EngineHost(engine)
        ready.put(host)
        host.serve_forever(stop)

    thread = threading.Thread(target=owner)
    thread.start()
    host = ready.get(timeout=WAIT)
    answers = [host.call(lambda e: e.count(), timeout_s=WAIT) for _ in range(5)]
    stop.set()
    thread.join(WAIT)
    assert [1] * 5 == answers and host.closed
    with pytest.raises(HostBusyError):
        host.call(lambda e: e.count(), timeout_s=WAIT)


@pytest.mark.parametrize("make", [
    lambda e: EngineHost("engine"),  # type: ignore[arg-type]
    lambda e: EngineHost(e, collector=object()),  # type: ignore[arg-type]
    lambda e: EngineHost(e, max_pending=0),
    lambda e: EngineHost(e, max_pending=True),
    lambda e: EngineHost(e).call(lambda x: 0, timeout_s=0),
    lambda e: EngineHost(e).call(lambda x: 0, timeout_s=float("nan")),
    lambda e: EngineHost(e).call(lambda x: 0, timeout_s="1"),  # type: ignore[arg-type]
    lambda e: EngineHost(e).pump(max_jobs=-1),
    lambda e: EngineHost(e).pump(max_jobs=1.5),  # type: ignore[arg-type]
])
def test_bad_arguments_are_input_invalid(make: Callable[[MemoryEngine], object]) -> None:
    engine = MemoryEngine(seed=0, embedder=None)
    with pytest.raises(InputInvalidError) as info:
        make(engine)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code


# ---------------------------------------------------------------- a host loop on its thread
TICKS = 40


def host_loop(readers: int, calls: list[tuple[int, int, int]], errors: list[BaseException],
              seen: dict[int, int]) -> list[str]:
    """Run a small host game loop on its own thread, with ``readers`` threads calling in.

    The loop ticks TICKS frames (ingest, tick, then ``host.pump()``); while readers are
    active every frame waits until it has answered at least one request, so reads and frames
    really interleave. Returns the state hash after each frame.
    """
    hashes: list[str] = []
    box: queue.Queue[EngineHost] = queue.Queue()
    loop_done = threading.Event()
    active = threading.Semaphore(0)
    readers_left = [readers]
    lock = threading.Lock()

    def loop() -> None:
        try:
            engine = MemoryEngine(MemoryConfig(episodic_max=64), seed=3, embedder=None)
            host = EngineHost(engine)
            box.put(host)
            for tick in range(TICKS):
                now = (tick + 1) * 100
                for i in range(3):
                    engine.ingest(f"npc-{(tick + i) % 4}", f"frame {tick} event {i} at the mill",
                                  importance=((tick * 7 + i) % 10) / 10, now=now)
                engine.tick(now, budget_ms=1.0)
                seen[now] = engine.count()
                hashes.append(engine.state_hash())
                served = host.pump()
                while served == 0 and readers_left[0] > 0:
                    active.acquire(timeout=0.01)
                    served = host.pump()
        except BaseException as exc:
            errors.append(exc)
        finally:
            loop_done.set()

    def reader(host: EngineHost) -> None:
        try:
            while not loop_done.is_set():
                active.release()
                try:
                    calls.append(host.call(
                        lambda e: (e.now, e.count(), sum(len(e.records(a)) for a in e.agents())),
                        timeout_s=WAIT))
                except HostBusyError:
                    break  # the loop ended and closed the host
        finally:
            with lock:
                readers_left[0] -= 1

    thread = threading.Thread(target=loop, name="host-loop")
    thread.start()
    host = box.get(timeout=WAIT)
    threads = [threading.Thread(target=reader, args=(host,)) for _ in range(readers)]
    for t in threads:
        t.start()
    thread.join(WAIT * 4)
    host.close()
    for t in threads:
        t.join(WAIT)
    return hashes


def test_reads_during_a_ticking_host_loop_are_consistent_and_change_nothing() -> None:
    calls: list[tuple[int, int, int]] = []
    errors: list[BaseException] = []
    seen: dict[int, int] = {}
    with_readers = host_loop(4, calls, errors, seen)
    assert [] == errors  # no owner-thread error
    assert len(calls) >= TICKS  # every frame answered at least one request
    for now, count, listed in calls:
        assert seen[now] == count == listed  # each answer is the state of one whole frame
    baseline_errors: list[BaseException] = []
    alone = host_loop(0, [], baseline_errors, {})
    assert [] == baseline_errors
    assert alone == with_readers  # reading changed no state hash, frame by frame
