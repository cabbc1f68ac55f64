"""The app while a host loop ticks on its own thread: every answer is one whole frame, and
reading changes no state (the issue's thread-model check, through HTTP)."""

from __future__ import annotations

import queue
import threading
from typing import Any

import pytest

pytest.importorskip("fastapi")

from starlette.testclient import TestClient

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.endpoints.app import create_app
from f09_memory.endpoints.host import EngineHost
from f09_memory.endpoints.settings import ServerSettings
from f09_memory.observability import MetricsCollector

TICKS = 30
AGENTS = ("npc-0", "npc-1", "npc-2")


class Loop:
    """A small host game loop on its own thread: ingest, tick, log, ``host.pump()``.

    While readers are active each frame waits until it has answered a request, so frames
    and requests interleave. Logs every agent's record count and the state hash per frame.
    """

    def __init__(self, readers: int) -> None:
        self.readers = readers
        self.counts: dict[int, dict[str, int]] = {}
        self.hashes: list[str] = []
        self.errors: list[BaseException] = []
        self.done = threading.Event()
        self.box: queue.Queue[EngineHost] = queue.Queue()
        self.thread = threading.Thread(target=self.run, name="host-loop")

    def run(self) -> None:
        try:
            engine = MemoryEngine(MemoryConfig(episodic_max=40, redaction_mode=False), seed=9)
            host = EngineHost(engine, collector=MetricsCollector(engine))
            self.box.put(host)
            for tick in range(TICKS):
                now = (tick + 1) * 1_000
                engine.ingest_many(AGENTS[tick % 3], [
                    f"frame {tick}: saw {AGENTS[(tick + 1) % 3]} at the well",
                    {"content": f"frame {tick}: a fact", "layer": "semantic"}], now=now)
                engine.retrieve({"agentId": AGENTS[tick % 3], "purpose": "dialog",
                                 "maxTokens": 200}, now=now)
                engine.tick(now, budget_ms=1.0)
                self.counts[now] = {a: engine.count(a) for a in engine.agents()}
                self.hashes.append(engine.state_hash())
                served = host.pump()
                while served == 0 and self.readers > 0 and not self.done.is_set():
                    host.wait_for_jobs(0.01)
                    served = host.pump()
        except BaseException as exc:  # reported by the test
            self.errors.append(exc)
        finally:
            self.done.set()


def run(readers: int) -> tuple[Loop, list[dict[str, Any]]]:
    loop = Loop(readers)
    loop.thread.start()
    host = loop.box.get(timeout=30)
    client = TestClient(create_app(host, ServerSettings(job_timeout_s=30)),
                        base_url="http://127.0.0.1")
    answers: list[dict[str, Any]] = []
    lock = threading.Lock()

    def reader(k: int) -> None:
        i = 0
        while not loop.done.is_set():
            agent = AGENTS[(k + i) % 3]
            i += 1
            url = (f"/api/agents/{agent}/snapshot" if i % 3 else "/api/agents")
            response = client.get(url)
            if response.status_code == 503:  # the loop ended and closed the host
                break
            with lock:
                answers.append({"url": url, "status": response.status_code,
                                "body": response.json()})

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(readers)]
    for t in threads:
        t.start()
    loop.thread.join(120)
    host.close()
    for t in threads:
        t.join(30)
    return loop, answers


def test_requests_during_a_ticking_host_loop_see_whole_frames() -> None:
    loop, answers = run(readers=3)
    assert [] == loop.errors
    assert len(answers) >= TICKS
    snapshots = 0
    for answer in answers:
        body = answer["body"]
        if answer["status"] == 404:  # an agent asked for before its first record
            assert answer["url"].endswith("/snapshot")
            continue
        assert 200 == answer["status"], answer
        if "records" in body:
            snapshots += 1
            frame = loop.counts[body["now"]]
            assert frame[body["agentId"]] == body["total"] == len(body["records"])
        else:
            frame = loop.counts[body["now"]]
            assert frame == {a["agentId"]: a["records"] for a in body["agents"]}
    assert snapshots > 0
    alone, _ = run(readers=0)
    assert [] == alone.errors
    assert alone.hashes == loop.hashes  # reading over HTTP changed no state hash
