"""ProcessEmbedder: any embedding provider, run in a child process of its own.

A real model embedding on a thread of the host's process (async mode's worker) shares the
host's interpreter: the model's Python code between torch kernels holds the GIL, so the
frame's own calls wait for it, and the model's objects (some 440,000 for MiniLM) are walked
by every full collection of the host's garbage collector. ``ProcessEmbedder`` builds the
provider in a child process instead and sends it the texts over a socket: the caller's
thread only waits on I/O (the GIL is free), and the model's memory lives elsewhere.
Measured on the 2-core machine, the 200-agent grid world in async mode with MiniLM: tick
wall p99 5.1 ms with the model on the engine's worker thread, 2.3 ms with it in a child
process (README, "Real embeddings").

The child is ``python -m f09_memory.embedding._child`` started with ``subprocess`` (not
``multiprocessing``: nothing re-imports the host's ``__main__``); it runs :func:`serve`,
which unpickles ``factory`` (a picklable callable: a class, a module-level function, or a
``functools.partial`` of one), calls it once, and answers each batch with the provider's
rows as float32 bytes.
Frames are a length and a pickle, both ways. The child sets its thread pools before the
factory imports anything (``threads``: ``OMP_NUM_THREADS`` and the BLAS variables, then
``torch.set_num_threads`` once torch is loaded), so the model keeps to its share of the
cores. The child exits when the parent closes the socket, or dies.

Determinism: the vectors are the provider's own, computed by the same library on the same
machine (bit-identical for ``HashingEmbedder``; within float rounding for a model whose
kernels depend on the thread count, which the engine's quantized scores absorb). Pickling a
``ProcessEmbedder`` (e.g. to a Ray shard) pickles its factory: each unpickled copy starts a
child of its own.
"""

from __future__ import annotations

import os
import pickle
import socket
import struct
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.embedding.batching import check_texts
from f09_memory.errors import (
    ConfigInvalidError,
    EmbeddingFailedError,
    EmbeddingUnavailableError,
)

__all__ = ["ProcessEmbedder", "serve"]

_HEADER = struct.Struct("!Q")
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                     "NUMEXPR_NUM_THREADS")


def _send(sock: socket.socket, message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if not k:
            raise EOFError("the other side closed the connection")
        got += k
    return bytes(buf)


def _recv(sock: socket.socket) -> Any:
    (n,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    return pickle.loads(_recv_exact(sock, n))


def _stop(proc: subprocess.Popen[bytes], sock: socket.socket) -> None:
    """Close the channel (the child exits on it) and reap the child (killed after 5 s)."""
    try:
        sock.close()
    finally:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class ProcessEmbedder:
    """Runs the provider ``factory()`` in a child process (implements ``EmbeddingProvider``).

    Example (a real model, off the host's interpreter)::

        from functools import partial
        from f09_memory import MemoryConfig, MemoryEngine
        from f09_memory.embedding import ProcessEmbedder, SentenceTransformerEmbedder

        embedder = ProcessEmbedder(partial(SentenceTransformerEmbedder, num_threads=1))
        engine = MemoryEngine(MemoryConfig(embedding_mode="async"), embedder=embedder)

    :attr:`dim`, :attr:`version`, :attr:`tick_cost_units` and :attr:`available` are the
    child's provider's (read once, at start). Calls are serialized: one batch at a time
    (a lock), whichever thread calls.

    Args:
        factory: A picklable callable returning the provider (``EmbeddingProvider``).
        threads: Threads the child's numerical libraries use (OpenMP, BLAS, torch);
            ``None`` leaves their defaults.
        start_timeout_s: How long the child may take to build the provider.
        timeout_s: How long one ``embed`` call may take; ``None``: no limit. A call past it
            stops the child (later calls fail).

    Raises:
        EmbeddingUnavailableError: Not a POSIX system (the child inherits a socket).
        ConfigInvalidError: ``factory`` is not picklable, or a bad number.
        EmbeddingFailedError: The child could not build the provider (the message carries
            the child's error), or did not answer within ``start_timeout_s``.
    """

    def __init__(self, factory: Callable[[], Any], *, threads: int | None = 1,
                 start_timeout_s: float = 300.0, timeout_s: float | None = None) -> None:
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                    or threads < 1):
            raise ConfigInvalidError(f"threads must be an int >= 1 or None, got {threads!r}",
                                     details={"field": "threads", "value": repr(threads)})
        for name, value in (("start_timeout_s", start_timeout_s), ("timeout_s", timeout_s)):
            if value is None and name == "timeout_s":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ConfigInvalidError(f"{name} must be a number > 0, got {value!r}",
                                         details={"field": name, "value": repr(value)})
        if os.name != "posix":
            raise EmbeddingUnavailableError(
                "ProcessEmbedder needs a POSIX system (Linux, macOS: the child inherits a "
                "socket); use the provider in this process, with embedding_mode='async'",
                details={"field": "factory", "os": os.name})
        try:
            spec = pickle.dumps(factory, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise ConfigInvalidError(
                f"factory must be picklable (a class, a module-level function or a "
                f"functools.partial of one), got {factory!r}: {type(exc).__name__}: {exc}",
                details={"field": "factory"}) from exc
        self._factory = factory
        self._threads = threads
        self._start_timeout_s = float(start_timeout_s)
        self._timeout_s = None if timeout_s is None else float(timeout_s)
        self._lock = threading.RLock()  # close() waits for a call in flight
        ours, theirs = socket.socketpair()
        env = dict(os.environ)  # the host's, and its import path (as multiprocessing does)
        env["PYTHONPATH"] = os.pathsep.join(entry or os.curdir for entry in sys.path)
        if threads is not None:
            env.update(dict.fromkeys(_THREAD_VARIABLES, str(threads)))
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "f09_memory.embedding._child", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL)
        except OSError as exc:
            ours.close()
            raise EmbeddingFailedError(f"could not start the embedding process: {exc}",
                                       details={"field": "factory"}) from exc
        finally:
            theirs.close()
        self._sock = ours
        self._finalizer = weakref.finalize(self, _stop, self._proc, ours)
        ours.settimeout(self._start_timeout_s)
        try:
            _send(ours, (spec, threads))
            reply = _recv(ours)
        except (OSError, EOFError) as exc:  # the child exited, or took too long
            self._proc.kill()
            self.close()
            raise EmbeddingFailedError(
                f"the embedding process exited or did not build the provider within "
                f"{self._start_timeout_s:g} s ({type(exc).__name__}: {exc}; its error, if "
                "any, is on stderr); check the factory in this process first, or raise "
                "start_timeout_s", details={"field": "factory"}) from exc
        if reply[0] != "ready":
            self.close()
            raise EmbeddingFailedError(
                f"the embedding process could not build the provider: {reply[1]}",
                details={"field": "factory"})
        _, self._dim, self._version, self._units, self._available = reply
        ours.settimeout(self._timeout_s)

    @property
    def dim(self) -> int:
        """Vector dimension (the child's provider's)."""
        return int(self._dim)

    @property
    def version(self) -> str:
        """The child's provider's ``version``."""
        return str(self._version)

    @property
    def tick_cost_units(self) -> int | None:
        """The child's provider's ``tick_cost_units`` (``None`` if it declares none)."""
        return None if self._units is None else int(self._units)

    @property
    def available(self) -> bool:
        """The child's provider's ``available`` (True if it declares none)."""
        return bool(self._available)

    @property
    def pid(self) -> int:
        """The child process's id."""
        return int(self._proc.pid)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """The child provider's rows for ``texts``, in order, as float32.

        Raises:
            EmbeddingFailedError: The provider raised in the child (its error's type and
                message are given), the child is gone, or the call ran past ``timeout_s``.
        """
        texts = check_texts(texts)
        with self._lock:
            if not self._finalizer.alive:
                raise EmbeddingFailedError(
                    "the embedding process is stopped (closed, timed out or exited); make "
                    "a new ProcessEmbedder", details={"pid": self._proc.pid})
            try:
                _send(self._sock, texts)
                reply = _recv(self._sock)
            except (OSError, EOFError) as exc:  # a time-out, or the child is gone
                code = self._proc.poll()
                self._proc.kill()  # a late answer would desynchronize the channel
                self.close()
                raise EmbeddingFailedError(
                    f"the embedding process stopped answering ({type(exc).__name__}: {exc}; "
                    f"exit code {code}); make a new ProcessEmbedder",
                    details={"pid": self._proc.pid}) from exc
        if reply[0] != "ok":
            raise EmbeddingFailedError(f"the provider failed in the embedding process: "
                                       f"{reply[1]}", details={"pid": self._proc.pid})
        _, data, rows, dim = reply
        return np.frombuffer(bytearray(data), dtype=np.float32).reshape(rows, dim)

    def close(self) -> None:
        """Stop the child once a call in flight is answered (idempotent); later calls fail."""
        with self._lock:
            self._finalizer()

    def __enter__(self) -> ProcessEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild, (self._factory, self._threads, self._start_timeout_s,
                          self._timeout_s)


def _rebuild(factory: Callable[[], Any], threads: int | None, start_timeout_s: float,
             timeout_s: float | None) -> ProcessEmbedder:
    """A new :class:`ProcessEmbedder` (with a child of its own) from a pickled one."""
    return ProcessEmbedder(factory, threads=threads, start_timeout_s=start_timeout_s,
                           timeout_s=timeout_s)


def serve(sock: socket.socket) -> None:
    """The child's side: build the provider, then answer batches until the parent leaves.

    Run by ``python -m f09_memory.embedding._child FD`` on the socket ``FD`` it inherits.
    """
    spec, threads = _recv(sock)
    try:
        provider = pickle.loads(spec)()
        if threads is not None and "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(threads)
        ready = ("ready", int(provider.dim), str(provider.version),
                 getattr(provider, "tick_cost_units", None),
                 getattr(provider, "available", True) is not False)
    except Exception as exc:
        _send(sock, ("error", f"{type(exc).__name__}: {exc}"))
        return
    _send(sock, ready)
    while True:
        try:
            texts = _recv(sock)
        except EOFError:
            return
        try:
            rows = np.ascontiguousarray(provider.embed(texts), dtype=np.float32)
            if rows.ndim != 2:
                raise ValueError(f"embed returned an array of shape {rows.shape}")
            reply: tuple[Any, ...] = ("ok", rows.tobytes(), rows.shape[0], rows.shape[1])
        except Exception as exc:
            reply = ("error", f"{type(exc).__name__}: {exc}")
        try:
            _send(sock, reply)
        except OSError:  # the parent closed the channel meanwhile
            return

