"""ProcessEmbedder: a provider run in a child process, as a host uses it."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.embedding import HashingEmbedder, ProcessEmbedder
from f09_memory.errors import (
    ConfigInvalidError,
    EmbeddingFailedError,
    EmbeddingUnavailableError,
    ErrorCode,
    InputInvalidError,
)
from f09_memory.testing import FailingEmbedder, FakeEmbedder

DIM = 32
TEXTS = ["Saw agent-0012 by the well at (3,4).", "Traded flint with Bram.", "", "a b c"]


@pytest.fixture(scope="module")
def hashing_child() -> Iterator[ProcessEmbedder]:
    with ProcessEmbedder(partial(HashingEmbedder, DIM, seed=5)) as embedder:
        yield embedder


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().partition("=")[::2] for item in raw if item)


def test_vectors_and_attributes_are_the_providers_own(hashing_child: ProcessEmbedder) -> None:
    local = HashingEmbedder(DIM, seed=5)
    assert local.version == hashing_child.version
    assert DIM == hashing_child.dim
    assert local.tick_cost_units == hashing_child.tick_cost_units
    assert hashing_child.available is True
    got = hashing_child.embed(TEXTS)
    assert got.dtype == np.float32 and got.flags.writeable
    assert np.array_equal(local.embed(TEXTS), got)
    assert (0, DIM) == hashing_child.embed([]).shape
    assert hashing_child.pid != os.getpid()


def test_an_engine_on_a_child_provider_hashes_as_with_the_provider_itself(
        hashing_child: ProcessEmbedder) -> None:
    items = [f"note {i}: the forge at ({i % 7},{i % 5})" for i in range(40)]
    hashes = []
    for embedder in (HashingEmbedder(DIM, seed=5), hashing_child):
        for mode in ("sync", "async"):
            config = MemoryConfig(embedding_dim=DIM, embedding_mode=mode,
                                  embedding_latency_ms=10)
            engine = MemoryEngine(config, seed=3, embedder=embedder)
            engine.ingest_many("a", items, now=1)
            engine.tick(100)
            bundle = engine.retrieve({"agent_id": "a", "purpose": "reasoning", "query": "the forge",
                                      "max_tokens": 200}, now=100)
            hashes.append((mode, engine.state_hash(), [r.id for r in bundle.records]))
    assert hashes[:2] == hashes[2:]


def test_threads_are_set_in_the_child_before_any_library_loads() -> None:
    with ProcessEmbedder(partial(HashingEmbedder, DIM), threads=1) as one:
        env = _environ(one.pid)
        assert "1" == env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"]
    before = os.environ.get("OMP_NUM_THREADS")
    with ProcessEmbedder(partial(HashingEmbedder, DIM), threads=None) as default:
        assert before == _environ(default.pid).get("OMP_NUM_THREADS")


def test_a_failing_call_raises_and_the_child_keeps_serving() -> None:
    with ProcessEmbedder(partial(FailingEmbedder, DIM, failures=1)) as embedder:
        with pytest.raises(EmbeddingFailedError, match="scripted embedding failure") as info:
            embedder.embed(["x"])
        assert ErrorCode.MEMORY_EMBEDDING_FAILED == info.value.code
        assert np.array_equal(FakeEmbedder(DIM).embed(["x"]), embedder.embed(["x"]))


def test_a_factory_that_raises_is_reported_and_no_child_is_left() -> None:
    with pytest.raises(EmbeddingFailedError, match="HashingEmbedder dim must be an int >= 2"):
        ProcessEmbedder(partial(HashingEmbedder, 1))


def test_an_unpicklable_factory_or_bad_settings_are_refused() -> None:
    with pytest.raises(ConfigInvalidError, match="factory must be picklable") as info:
        ProcessEmbedder(lambda: HashingEmbedder(DIM))
    assert "factory" == info.value.details["field"]
    for kwargs, field in (({"threads": 0}, "threads"), ({"threads": True}, "threads"),
                          ({"timeout_s": 0}, "timeout_s"),
                          ({"start_timeout_s": -1.0}, "start_timeout_s")):
        with pytest.raises(ConfigInvalidError) as info:
            ProcessEmbedder(partial(HashingEmbedder, DIM), **kwargs)  # type: ignore[arg-type]
        assert field == info.value.details["field"]


def test_bad_texts_are_refused_before_anything_is_sent(hashing_child: ProcessEmbedder) -> None:
    with pytest.raises(InputInvalidError) as info:
        hashing_child.embed("not a list")  # type: ignore[arg-type]
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert np.array_equal(HashingEmbedder(DIM, seed=5).embed(["ok"]), hashing_child.embed(["ok"]))


def test_a_call_past_its_time_limit_stops_the_child() -> None:
    embedder = ProcessEmbedder(partial(FakeEmbedder, DIM, delay_s=30.0), timeout_s=0.3)
    with pytest.raises(EmbeddingFailedError, match="stopped answering"):
        embedder.embed(["slow"])
    assert embedder._proc.poll() is not None  # killed, not left computing
    with pytest.raises(EmbeddingFailedError, match="make a new ProcessEmbedder"):
        embedder.embed(["again"])


def test_a_child_that_dies_fails_the_call_with_what_to_do() -> None:
    embedder = ProcessEmbedder(partial(HashingEmbedder, DIM))
    os.kill(embedder.pid, signal.SIGKILL)
    embedder._proc.wait()
    with pytest.raises(EmbeddingFailedError, match=r"stopped answering.*make a new"):
        embedder.embed(["x"])
    embedder.close()  # idempotent
    embedder.close()


def test_close_stops_the_child() -> None:
    embedder = ProcessEmbedder(partial(HashingEmbedder, DIM))
    proc = embedder._proc
    embedder.close()
    assert 0 == proc.returncode
    with pytest.raises(EmbeddingFailedError, match="stopped"):
        embedder.embed(["x"])


def test_a_pickled_copy_starts_a_child_of_its_own(hashing_child: ProcessEmbedder) -> None:
    with pickle.loads(pickle.dumps(hashing_child)) as copy:
        assert copy.pid != hashing_child.pid
        assert hashing_child.version == copy.version
        assert np.array_equal(hashing_child.embed(TEXTS), copy.embed(TEXTS))


def test_a_child_that_exits_while_starting_is_reported() -> None:
    with pytest.raises(EmbeddingFailedError, match="exited or did not build the provider"):
        ProcessEmbedder(partial(os._exit, 3))


def test_a_child_too_slow_to_start_is_stopped() -> None:
    started = time.perf_counter()
    with pytest.raises(EmbeddingFailedError, match="within 1 s"):
        ProcessEmbedder(partial(time.sleep, 60), start_timeout_s=1.0)
    assert time.perf_counter() - started < 30  # killed, not waited for


def test_close_from_another_thread_lets_the_call_in_flight_finish() -> None:
    embedder = ProcessEmbedder(partial(FakeEmbedder, DIM, delay_s=0.5))
    got: list[np.ndarray] = []
    caller = threading.Thread(target=lambda: got.append(embedder.embed(["x"])))
    caller.start()
    while embedder._lock.acquire(blocking=False):  # until the caller holds it (in flight)
        embedder._lock.release()
        time.sleep(0.005)
    embedder.close()
    caller.join()
    assert np.array_equal(FakeEmbedder(DIM).embed(["x"]), got[0])
    with pytest.raises(EmbeddingFailedError, match="stopped"):
        embedder.embed(["x"])


def test_a_system_without_posix_sockets_is_told_what_to_use(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import f09_memory.embedding.process as process

    monkeypatch.setattr(process.os, "name", "nt")
    with pytest.raises(EmbeddingUnavailableError, match="POSIX") as info:
        ProcessEmbedder(partial(HashingEmbedder, DIM))
    assert ErrorCode.MEMORY_EMBEDDING_UNAVAILABLE == info.value.code
