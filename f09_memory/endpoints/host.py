"""EngineHost: HTTP requests are marshalled to the thread that owns the engine.

The engine belongs to one thread (``f09_memory._owner``) and takes no lock. A web server
answers on its own threads, so every request that needs the engine is a *job*: a function
of the engine, queued by :meth:`EngineHost.call` from the server thread, run by the owner
thread in :meth:`EngineHost.pump` between two frames, and handed back. A job therefore sees
the engine between frames, never half way through a tick, and the engine is never touched
by two threads (the thread model chosen over copying a read snapshot: no copy of the state,
answers always of the current frame).

A host game loop adds one line to its frame, after ``engine.tick(...)``::

    host.pump()            # answer the HTTP requests that arrived during the frame

With no host loop (``f09-memory serve --db``), the owner thread runs
:meth:`EngineHost.serve_forever` instead.

A job that is not picked up in time (the owner is busy with a long frame, or stopped) is
cancelled: :meth:`EngineHost.call` raises :class:`HostBusyError` (HTTP 503) and the owner
skips the job if it had not started it, so it never runs later with a stale effect. A job
that the owner had already started when the caller gave up finishes, and its result is
dropped. The queue is bounded (``max_pending``): past it, a call is refused at once.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from f09_memory.engine import MemoryEngine
from f09_memory.errors import InputInvalidError
from f09_memory.observability import MetricsCollector

__all__ = ["EngineHost", "HostBusyError"]

T = TypeVar("T")

_PENDING, _RUNNING, _DONE, _CANCELLED = range(4)
_IDLE_WAIT_S = 0.05
"""How long :meth:`EngineHost.serve_forever` sleeps when no job is queued (stop latency)."""


class HostBusyError(TimeoutError):
    """The owner thread did not run a job in time, is stopped, or its queue is full.

    The HTTP app answers 503 (``code`` ``HOST_BUSY``); the job did not run and never will.
    """


class _Job(Generic[T]):
    __slots__ = ("done", "error", "fn", "result", "state")

    def __init__(self, fn: Callable[[MemoryEngine], T]) -> None:
        self.fn = fn
        self.state = _PENDING
        self.result: T | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()


class EngineHost:
    """Runs functions of one engine on the engine's owner thread, for other threads.

    ``call`` may be used from any thread; ``pump`` and ``serve_forever`` only from the thread
    that owns the engine (the one that created it, opened it or bound it last). The host
    itself is thread-safe (one lock around its queue); the engine is only ever used by
    its owner.

    Args:
        engine: The engine (owned by the thread that will pump).
        collector: The metrics collector of ``engine``, for the metrics routes (``None``:
            the app builds none; ``/metrics`` then reports the engine without history).
        max_pending: The most jobs waiting at once; a call beyond it is refused with
            :class:`HostBusyError` (a flood of requests cannot grow the queue without bound).

    Example:
        >>> import threading
        >>> engine = MemoryEngine(seed=0)
        >>> host = EngineHost(engine)
        >>> out = []
        >>> t = threading.Thread(target=lambda: out.append(host.call(lambda e: e.count())))
        >>> t.start()
        >>> while t.is_alive():
        ...     _ = host.pump()
        >>> out
        [0]
    """

    def __init__(self, engine: MemoryEngine, *, collector: MetricsCollector | None = None,
                 max_pending: int = 1024) -> None:
        if not isinstance(engine, MemoryEngine):
            raise InputInvalidError("engine must be a MemoryEngine",
                                    details={"field": "engine"})
        if collector is not None and not isinstance(collector, MetricsCollector):
            raise InputInvalidError("collector must be a MetricsCollector or None",
                                    details={"field": "collector"})
        if isinstance(max_pending, bool) or not isinstance(max_pending, int) or max_pending < 1:
            raise InputInvalidError("max_pending must be a positive integer",
                                    details={"field": "max_pending"})
        self.engine = engine
        """The hosted engine: use it on its owner thread only (jobs receive it)."""
        self.collector = collector
        """The metrics collector given at construction, or ``None``."""
        self.max_pending = max_pending
        self._lock = threading.Lock()
        self._jobs: deque[_Job[Any]] = deque()
        self._wake = threading.Event()
        self._closed = False
        self._pumping: int | None = None  # ident of the thread inside pump()

    # ------------------------------------------------------------------ any thread
    def call(self, fn: Callable[[MemoryEngine], T], *, timeout_s: float = 5.0) -> T:
        """Run ``fn(engine)`` on the owner thread and return its result.

        From the owner thread itself (inside a job, or a single-threaded host) ``fn`` runs at
        once. From any other thread the job is queued and this call waits until the owner
        runs it (its next :meth:`pump`) or ``timeout_s`` passes.

        Args:
            fn: A function of the engine. Meant for reads: it runs between two frames of
                the host, so it sees a consistent engine.
            timeout_s: The most seconds to wait (> 0).

        Returns:
            What ``fn`` returned.

        Raises:
            HostBusyError: The owner did not start the job within ``timeout_s`` (the job is
                cancelled and never runs), the queue is full, or the host is closed.
            InputInvalidError: ``timeout_s`` is not a positive finite number.
            Exception: Whatever ``fn`` raised, re-raised here.
        """
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not (
                0 < timeout_s < float("inf")):
            raise InputInvalidError("timeout_s must be a positive number of seconds",
                                    details={"field": "timeout_s"})
        me = threading.get_ident()
        if me == self._pumping or me == self.engine._owner.ident:
            return fn(self.engine)
        job: _Job[T] = _Job(fn)
        with self._lock:
            if self._closed:
                raise HostBusyError("the engine host is closed: the owner thread has stopped")
            if len(self._jobs) >= self.max_pending:
                raise HostBusyError(f"the engine host has {self.max_pending} jobs waiting; "
                                    "retry later")
            self._jobs.append(job)
        self._wake.set()
        if not job.done.wait(timeout_s):
            with self._lock:
                if job.state == _PENDING:  # never started: the owner will skip it
                    job.state = _CANCELLED
                    raise HostBusyError(
                        f"the engine's owner thread did not answer within {timeout_s} s "
                        "(a long frame, or no pump): retry later")
                cancelled_late = job.state == _RUNNING
                if cancelled_late:
                    job.state = _CANCELLED  # running: let it finish, drop its result
            if cancelled_late:
                raise HostBusyError(
                    f"the engine's owner thread did not finish the request within {timeout_s} "
                    "s: retry later")
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]

    def pending(self) -> int:
        """How many jobs wait for the owner (cancelled ones included until skipped)."""
        with self._lock:
            return len(self._jobs)

    def close(self) -> None:
        """Refuse every later call, and fail the waiting ones with :class:`HostBusyError`.

        Any thread may close the host (e.g. when the owner loop ends). Idempotent.
        """
        with self._lock:
            self._closed = True
            left = list(self._jobs)
            self._jobs.clear()
            for job in left:
                if job.state == _PENDING:
                    job.state = _CANCELLED
                    job.error = HostBusyError("the engine host closed before the request ran")
        for job in left:
            job.done.set()
        self._wake.set()

    def wait_for_jobs(self, timeout_s: float) -> bool:
        """Block up to ``timeout_s`` until a job is queued (for a paced owner loop).

        Any thread may wait; the owner then calls :meth:`pump`. Returns at once when the
        host is closed.

        Returns:
            Whether a job may be waiting (``True`` may be spurious; ``pump`` tells).
        """
        return self._wake.wait(timeout_s)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    # ------------------------------------------------------------------ owner thread
    def pump(self, *, max_jobs: int | None = None) -> int:
        """Run the queued jobs, on the owner thread (between two frames of the host).

        Only the jobs already queued when ``pump`` starts are run (a request arriving
        meanwhile waits for the next pump), so one pump is bounded. Each job's result or
        exception goes back to its caller; an exception of a job never propagates here.
        Runtime complexity: O(jobs run) plus their own cost.

        Args:
            max_jobs: Run at most this many (``None``: every job queued at the start).

        Returns:
            The number of jobs run (cancelled ones are skipped and not counted).

        Raises:
            InputInvalidError: Not called on the engine's owner thread (the engine's own
                check, ``details["field"] == "thread"``), or ``max_jobs`` is not a
                non-negative integer.
        """
        if max_jobs is not None and (isinstance(max_jobs, bool) or not isinstance(
                max_jobs, int) or max_jobs < 0):
            raise InputInvalidError("max_jobs must be a non-negative integer or None",
                                    details={"field": "max_jobs"})
        _ = self.engine.now  # the engine's owner check: raises off the owner thread
        with self._lock:
            n = len(self._jobs) if max_jobs is None else min(max_jobs, len(self._jobs))
            batch = [self._jobs.popleft() for _ in range(n)]
            if not self._jobs:
                self._wake.clear()
        ran = 0
        self._pumping = threading.get_ident()
        try:
            for job in batch:
                with self._lock:
                    if job.state != _PENDING:
                        continue
                    job.state = _RUNNING
                ran += 1
                try:
                    job.result = job.fn(self.engine)
                except Exception as exc:  # handed to the caller, re-raised there
                    job.error = exc
                finally:
                    with self._lock:
                        if job.state == _RUNNING:
                            job.state = _DONE
                    job.done.set()
        finally:
            self._pumping = None
        return ran

    def serve_forever(self, stop: threading.Event) -> None:
        """Owner loop for an engine with no host game loop: pump until ``stop`` is set.

        Waits for jobs (no busy loop); returns within about 50 ms of ``stop.set()`` and then
        closes the host (waiting calls fail with :class:`HostBusyError`).

        Args:
            stop: Set it (from any thread) to end the loop.

        Raises:
            InputInvalidError: Not called on the engine's owner thread.
        """
        _ = self.engine.now  # owner check before anything else
        try:
            while not stop.is_set():
                if self.wait_for_jobs(_IDLE_WAIT_S):
                    self.pump()
        finally:
            self.close()
