"""``f09-memory serve``: one engine on its owner thread, the HTTP app under uvicorn.

The engine is created (``--demo``) or opened (``--db``: ``MemoryEngine.open``, whose SQLite
connection belongs to the opening thread) ON a dedicated owner thread, together with its
metrics collector and :class:`EngineHost`. That thread then runs the demo village
(:func:`~f09_memory.endpoints.demo.run_demo`) or, for a store, just answers requests
(:meth:`EngineHost.serve_forever`). Uvicorn runs on the calling thread; its request threads
reach the engine only through the host. When uvicorn stops (Ctrl+C, SIGTERM), the owner
loop is stopped and the engine closed on its own thread (a durable store is checkpointed).

Binding: 127.0.0.1 unless told otherwise; any other address prints a warning. The app
answers only to loopback host names plus the bound address and ``--allow-host`` names
(DNS rebinding). Uvicorn's access log is off: a query string may hold private text.
"""

from __future__ import annotations

import ipaddress
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from f09_memory.endpoints.app import create_app
from f09_memory.endpoints.demo import demo_engine, run_demo
from f09_memory.endpoints.guard import LOOPBACK_HOSTS
from f09_memory.endpoints.host import EngineHost
from f09_memory.endpoints.settings import ServerSettings
from f09_memory.engine import MemoryEngine
from f09_memory.observability import MetricsCollector

__all__ = ["OwnerThread", "allowed_hosts_for", "is_loopback", "serve", "url_for"]

_JOIN_S = 30.0
_CONCURRENCY = 64
"""Uvicorn's ``limit_concurrency``: connections beyond it get a 503 at once."""


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine (``localhost``, 127/8, ::1)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts_for(bind: str, extra: list[str] | tuple[str, ...] = ()) -> tuple[str, ...]:
    """Host names the app answers to when bound to ``bind``.

    The loopback names, ``bind`` itself (unless it is a wildcard address) and ``extra``,
    lower case, without duplicates, in that order.
    """
    names = [*LOOPBACK_HOSTS]
    if bind not in ("0.0.0.0", "::", ""):
        names.append(bind.strip("[]"))
    names.extend(extra)
    return tuple(dict.fromkeys(n.lower() for n in names))


def url_for(host: str, port: int) -> str:
    """The viewer's address (``http://127.0.0.1:8765/``; an IPv6 host in brackets)."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}/"


class OwnerThread:
    """The engine's owner thread: builds the engine there, then runs ``loop`` until stopped.

    Args:
        make_engine: Builds (or opens) the engine; runs on the owner thread.
        loop: The owner loop, given the host and the stop event (``run_demo``,
            ``EngineHost.serve_forever``).
    """

    def __init__(self, make_engine: Callable[[], MemoryEngine],
                 loop: Callable[[EngineHost, threading.Event], object]) -> None:
        self.stop = threading.Event()
        """Set to end the owner loop."""
        self.error: BaseException | None = None
        """What the owner loop raised, if anything."""
        self._make = make_engine
        self._loop = loop
        self._ready: queue.Queue[EngineHost | BaseException] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="f09-memory-owner",
                                        daemon=True)

    def start(self) -> EngineHost:
        """Start the thread and wait until the engine is ready.

        Returns:
            The engine's host.

        Raises:
            Exception: What building the engine raised (e.g. ``SnapshotInvalidError``).
        """
        self._thread.start()
        item = self._ready.get()
        if isinstance(item, BaseException):
            self._thread.join(_JOIN_S)
            raise item
        return item

    def join(self, timeout_s: float = _JOIN_S) -> None:
        """Stop the owner loop and wait for the thread (which closes the engine)."""
        self.stop.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            engine = self._make()
        except BaseException as exc:
            self._ready.put(exc)
            return
        collector = None
        host = None
        try:
            collector = MetricsCollector(engine)
            host = EngineHost(engine, collector=collector)
            self._ready.put(host)
            self._loop(host, self.stop)
        except BaseException as exc:
            self.error = exc
            if host is None:
                self._ready.put(exc)
        finally:
            if host is not None:
                host.close()
            if collector is not None:
                collector.close()
            engine.close()


@contextmanager
def _quiet_signals() -> Iterator[None]:
    """Let a Ctrl+C or SIGTERM that uvicorn handled end the run cleanly.

    Uvicorn shuts down on SIGINT / SIGTERM, then raises the signal again for the previous
    handler; these no-op handlers take it, so the owner thread still closes the engine
    and the exit code is 0. Only on the main thread (where signals are delivered).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {sig: signal.signal(sig, _ignore) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _ignore(_sig: int, _frame: object) -> None:
    """A signal handler that does nothing (see :func:`_quiet_signals`)."""


def serve(*, bind: str, port: int, db: str | None = None, demo: bool = False,
          settings: ServerSettings | None = None, agents: int = 12, seed: int = 42,
          interval_s: float = 0.2, err: TextIO | None = None) -> int:
    """Serve one engine until uvicorn stops; the body of ``f09-memory serve``.

    Args:
        bind: Address to bind.
        port: Port to listen on.
        db: Serve the durable store at this path (``MemoryEngine.open``).
        demo: Serve the demo village instead (``db`` must be ``None``).
        settings: The app's settings (default ``ServerSettings()``).
        agents: Demo villagers.
        seed: Demo seed.
        interval_s: Demo wall-clock seconds per tick.
        err: Where notes and warnings go (default stderr).

    Returns:
        The exit code (0 after a clean stop).
    """
    import uvicorn

    out = sys.stderr if err is None else err
    if db is not None:
        path = db
        owner = OwnerThread(lambda: MemoryEngine.open(path),
                            lambda host, stop: host.serve_forever(stop))
    else:
        owner = OwnerThread(lambda: demo_engine(seed),
                            lambda host, stop: run_demo(host, stop, agents=agents, seed=seed,
                                                        interval_s=interval_s))
    host = owner.start()
    try:
        app = create_app(host, settings)
        config = uvicorn.Config(app, host=bind, port=port, log_level="warning",
                                access_log=False, server_header=False, lifespan="off",
                                limit_concurrency=_CONCURRENCY)
        print(f"f09-memory: serving {'the demo village' if demo else db} at "
              f"{url_for(bind, port)} (Ctrl+C to stop)", file=out, flush=True)
        with _quiet_signals():
            uvicorn.Server(config).run()
    finally:
        owner.join()
    if owner.error is not None:
        print(f"f09-memory: the engine's owner thread failed: {owner.error}", file=out)
        return 1
    return 0
