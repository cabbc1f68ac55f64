"""Fixtures of the endpoint tests: an engine served by an owner thread, and its TestClient."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.endpoints.host import EngineHost

TOKEN = "test-token-0123456789"
EMAIL = "alice.secret@example.com"
CARD = "4111 1111 1111 1111"
MARKERS = (EMAIL, CARD, CARD.replace(" ", ""), "alice.secret")
"""Raw secrets stored by the ``secret_engine``: no response may ever contain one while
redaction is ON."""


def secret_engine() -> MemoryEngine:
    """An engine storing raw text (redaction_mode OFF) with an e-mail and a card number."""
    engine = MemoryEngine(MemoryConfig(redaction_mode=False), seed=1)
    engine.ingest("npc-1", f"Alice wrote from {EMAIL} about the debt", importance=0.9,
                  tags=["debt", f"mail {EMAIL}"], now=1_000)
    engine.ingest("npc-1", f"Paid the smith with card {CARD} at the market", now=2_000,
                  metadata={"attributes": {"card": CARD}})
    engine.ingest("npc-1", "Saw the smith at the well", importance=0.4, now=3_000)
    engine.ingest("npc-2", "The well is dry this summer", layer="semantic", now=3_500)
    engine.ingest("npc-2", f"Bob said {EMAIL} is Alice's address", now=4_000)
    engine.tick(5_000)
    return engine


@contextmanager
def owner_thread(engine: MemoryEngine | Callable[[], MemoryEngine], *,
                 collector: bool = True) -> Iterator[EngineHost]:
    """Serve ``EngineHost`` jobs on a new owner thread until the block ends.

    ``engine`` is handed to that thread (``bind_thread``), or, given a factory, built there
    (a durable engine must be opened on its owner thread); its host and metrics collector
    are built there too. A handed-over engine comes back to the calling thread at the end.
    """
    from f09_memory.observability import MetricsCollector

    stop = threading.Event()
    box: queue.Queue[EngineHost | BaseException] = queue.Queue()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            if isinstance(engine, MemoryEngine):
                engine.bind_thread()
                mine = engine
            else:
                mine = engine()
            host = EngineHost(mine, collector=MetricsCollector(mine) if collector else None)
        except BaseException as exc:  # reported by the fixture
            box.put(exc)
            return
        box.put(host)
        try:
            host.serve_forever(stop)
        except BaseException as exc:
            errors.append(exc)
        finally:
            if host.collector is not None:
                host.collector.close()
            if not isinstance(engine, MemoryEngine):
                mine.close()

    thread = threading.Thread(target=run, name="test-owner")
    thread.start()
    item = box.get(timeout=30)
    if isinstance(item, BaseException):
        raise item
    try:
        yield item
    finally:
        stop.set()
        thread.join(30)
        if isinstance(engine, MemoryEngine):
            engine.bind_thread()  # back to the test thread
    assert [] == errors


@pytest.fixture
def serve() -> Iterator[Callable[..., Any]]:
    """``serve(engine, **settings)`` -> a TestClient of the app, its engine on an owner thread."""
    pytest.importorskip("fastapi")
    from starlette.testclient import TestClient

    from f09_memory.endpoints.app import create_app
    from f09_memory.endpoints.settings import ServerSettings

    stack: list[Any] = []

    def make(engine: MemoryEngine | Callable[[], MemoryEngine], *, collector: bool = True,
             **settings: Any) -> Any:
        ctx = owner_thread(engine, collector=collector)
        host = ctx.__enter__()
        stack.append(ctx)
        app = create_app(host, ServerSettings(**{"token": TOKEN, **settings}))
        return TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=True)

    yield make
    for item in reversed(stack):
        item.__exit__(None, None, None)
