"""An OpenAI-compatible ``/v1/embeddings`` server on loopback, with scripted faults.

For testing an endpoint embedder (``OpenAICompatibleEmbedder``, or a host's own) against a
real HTTP server without a network: the server runs in a thread (stdlib ``http.server``),
serves whatever ``embed`` function it is given (a real model or a deterministic double),
records every request, and answers each request with the next scripted :class:`Fault`
(none left: a correct answer).

- **Records.** ``bodies`` and ``headers``: every request in arrival order, retries
  included. ``answered``: the inputs of each request that got a correct answer, in order;
  a text that appears in two of them was embedded twice.
- **Slow models are not timeouts.** A correct answer's status and headers are sent at
  once, then one space every ``keepalive_s`` while the model runs (JSON allows leading
  whitespace), then the body without a length, closing the connection. So a client's read
  timeout only fires on an injected silence (``sleep``), never because a loaded machine
  ran the model slowly.
- **Gate.** ``gate`` is a set ``threading.Event``; clear it to hold every request after it
  is recorded until it is set again (to show that a call does not wait for the server).
- **Schedules.** :func:`fault_schedule` spreads a fraction of faults over a run's requests
  from a seed, so a fault run is the same in every process.

Nothing here imports the engine.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import InputInvalidError

if TYPE_CHECKING:
    from http.server import BaseHTTPRequestHandler

__all__ = ["DEFAULT_FAULTS", "EmbeddingServer", "Fault", "fault_schedule"]


class Fault(TypedDict, total=False):
    """How the server answers one request; an empty ``Fault`` is a correct answer.

    Attributes:
        status: Answer this HTTP status with ``body`` (and ``retry_after``), no embedding.
        retry_after: The ``Retry-After`` header sent with ``status``.
        body: The body sent with ``status`` (default: a JSON error object).
        sleep: Stay silent this many seconds (past the client's timeout), then send ``{}``.
        truncate: Send the first half of the correct body (truncated JSON).
        cut: Announce the full body's length, send half and hang up.
        dim: Add (or, negative, remove) this many numbers to every vector.
        count: Add (negative: drop) rows at the end of ``data`` (``+k`` repeats the last).
        drop: Remove this key (``"embedding"``, ``"index"``) from the first row.
        reverse: Send the rows in reverse order (correct: the client places them by index).
    """

    status: int
    retry_after: str
    body: str
    sleep: float
    truncate: bool
    cut: bool
    dim: int
    count: int
    drop: str
    reverse: bool


DEFAULT_FAULTS: tuple[Fault, ...] = (
    {"status": 500},
    {"status": 429, "retry_after": "1"},
    {"sleep": 1.5},
    {"truncate": True},
    {"status": 503},
    {"count": -1},
)
"""The mix :func:`fault_schedule` draws from: 5xx, 429 with ``Retry-After``, a silence
past a 1 s timeout, truncated JSON, a missing row."""


def fault_schedule(requests: int, *, rate: float = 0.1, seed: int = 0,
                   kinds: Sequence[Fault] = DEFAULT_FAULTS, max_run: int = 2) -> list[Fault]:
    """Return one :class:`Fault` per request, ``round(rate * requests)`` of them faulty.

    The faulty positions and their kinds are drawn from ``numpy.random.default_rng(seed)``;
    no more than ``max_run`` faults are adjacent, so a client retrying more than
    ``max_run`` times always gets through. Append the result to ``server.faults``: faults
    are consumed one per request received, so retries shift the rest of the schedule.

    Runtime complexity: ``O(requests)``.

    Args:
        requests: How many requests the run is expected to make without faults.
        rate: The fraction of them that fail, in ``[0, 1)``.
        seed: The schedule's seed.
        kinds: The faults drawn from, uniformly.
        max_run: The most adjacent faults, ``>= 1``.

    Returns:
        ``requests + faults`` entries (each fault delays the requests after it by one).

    Raises:
        InputInvalidError: An argument is out of range, or the draw could not place every
            fault under ``max_run`` (a rate near 1 with ``max_run=1``: try another seed).

    """
    if requests < 0 or not 0.0 <= rate < 1.0 or max_run < 1 or not kinds:
        raise InputInvalidError(
            "fault_schedule needs requests >= 0, 0 <= rate < 1, max_run >= 1 and kinds",
            details={"requests": requests, "rate": rate, "max_run": max_run})
    rng = np.random.default_rng(seed)
    wanted = round(rate * requests)
    total = requests + wanted
    faulty = np.zeros(total, dtype=np.bool_)
    placed = 0
    for position in rng.permutation(total).tolist():
        if placed == wanted:
            break
        low, high = max(0, position - max_run), min(total, position + max_run + 1)
        window = faulty[low:high].copy()
        window[position - low] = True
        run = longest = 0
        for bit in window.tolist():
            run = run + 1 if bit else 0
            longest = max(longest, run)
        if longest <= max_run:
            faulty[position] = True
            placed += 1
    if placed < wanted:
        raise InputInvalidError(f"cannot place {wanted} faults with at most {max_run} adjacent",
                                details={"requests": requests, "rate": rate})
    picks = rng.integers(0, len(kinds), size=total).tolist()
    return [kinds[pick].copy() if bad else Fault()
            for bad, pick in zip(faulty.tolist(), picks, strict=True)]


class EmbeddingServer:
    """An OpenAI-compatible embeddings server on ``host`` (loopback) with scripted faults.

    Example:
        >>> from f09_memory.testing import FakeEmbedder
        >>> with EmbeddingServer(FakeEmbedder(8).embed) as server:
        ...     server.faults.append({"status": 503})
        ...     server.base_url.startswith("http://127.0.0.1:")
        True

    Args:
        embed: Turns a list of texts into rows (one per text), run one call at a time.
        host: The address to listen on.
        port: The port (0: a free one).
        keepalive_s: Seconds between the spaces sent while ``embed`` runs.

    """

    def __init__(self, embed: Callable[[list[str]], NDArray[np.float32]], *,
                 host: str = "127.0.0.1", port: int = 0, keepalive_s: float = 0.05) -> None:
        self.embed = embed
        self.keepalive_s = keepalive_s
        self.faults: deque[Fault] = deque()
        """Answers for the next requests, one popped per request."""
        self.bodies: list[dict[str, Any]] = []
        """Every request's JSON body, in arrival order."""
        self.headers: list[dict[str, str]] = []
        """Every request's headers (names lower-cased), in arrival order."""
        self.answered: list[list[str]] = []
        """The inputs of each request answered correctly, in the order answered."""
        self.gate = threading.Event()
        """Set: requests are answered. Clear: each waits, once recorded, until it is set."""
        self.gate.set()
        self._lock = threading.Lock()
        self._model = threading.Lock()
        server = self
        # Imported here: the package is imported by every engine user, the server is not.
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                server._handle(self)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up (timeout) closed the socket: expected

        self.httpd = Server((host, port), Handler)
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True,
                                        name="f09-embedding-server")
        self._thread.start()

    @property
    def base_url(self) -> str:
        """``http://host:port``, the value to give an embedder's ``base_url``."""
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def inputs(self) -> list[str]:
        """Every text received, in order (retried requests included)."""
        return [text for body in self.bodies for text in body["input"]]

    def reset(self) -> None:
        """Forget the faults left and everything recorded; open the gate."""
        with self._lock:
            self.faults.clear()
            self.bodies.clear()
            self.headers.clear()
            self.answered.clear()
        self.gate.set()

    def close(self) -> None:
        """Stop serving and release the port."""
        self.gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> EmbeddingServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ answering
    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes,
              headers: dict[str, str] | None = None, length: int | None = None) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body) if length is None else length))
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:
            pass

    def _vectors(self, handler: BaseHTTPRequestHandler,
                 texts: list[str], stream: bool) -> NDArray[np.float32] | None:
        """Run the model; when streaming, send the headers first and spaces while it runs."""
        if not stream:
            with self._model:
                return np.asarray(self.embed(texts), dtype=np.float32)
        result: list[NDArray[np.float32]] = []

        def run() -> None:
            with self._model:
                result.append(np.asarray(self.embed(texts), dtype=np.float32))

        worker = threading.Thread(target=run, daemon=True)
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.wfile.flush()
            worker.start()
            while worker.is_alive():
                worker.join(self.keepalive_s)
                if worker.is_alive():
                    handler.wfile.write(b" ")
                    handler.wfile.flush()
        except OSError:
            worker.join()
            return None
        return result[0] if result else None

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        raw = handler.rfile.read(int(handler.headers.get("Content-Length", "0")))
        if handler.path != "/v1/embeddings":
            self._send(handler, 404, b'{"error": {"message": "no such route"}}')
            return
        body = json.loads(raw)
        with self._lock:
            self.bodies.append(body)
            self.headers.append({k.lower(): v for k, v in handler.headers.items()})
            fault: Fault = self.faults.popleft() if self.faults else {}
        self.gate.wait()
        if "sleep" in fault:
            time.sleep(fault["sleep"])  # past the client's timeout: it has gone
            self._send(handler, 200, b"{}")
            return
        if "status" in fault:
            headers = {"Retry-After": fault["retry_after"]} if "retry_after" in fault else {}
            text = fault.get("body", '{"error": {"message": "injected"}}')
            self._send(handler, fault["status"], text.encode(), headers)
            return
        texts: list[str] = body["input"]
        stream = not fault.get("cut")
        vectors = self._vectors(handler, texts, stream)
        if vectors is None:
            return
        payload = self._payload(vectors, body["model"], fault)
        if fault.get("cut"):  # announces the full body, sends half, hangs up
            self._send(handler, 200, payload[: len(payload) // 2], length=len(payload))
            return
        try:
            handler.wfile.write(payload[: len(payload) // 2] if fault.get("truncate")
                                else payload)
            handler.wfile.flush()
        except OSError:
            return
        if not fault or set(fault) == {"reverse"}:
            with self._lock:
                self.answered.append(list(texts))

    @staticmethod
    def _payload(vectors: NDArray[np.float32], model: str, fault: Fault) -> bytes:
        dim = int(vectors.shape[1])
        delta = fault.get("dim", 0)
        data: list[dict[str, Any]] = [
            {"object": "embedding", "index": i,
             "embedding": (row.tolist() + [0.5] * delta)[: dim + delta]}
            for i, row in enumerate(vectors)]
        count = fault.get("count", 0)
        data = data + [dict(data[-1])] * count if count > 0 else data[: len(data) + count]
        if fault.get("reverse"):
            data.reverse()
        if "drop" in fault:
            del data[0][fault["drop"]]
        return json.dumps({"object": "list", "data": data, "model": model}).encode()
