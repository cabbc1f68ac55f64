"""OpenAICompatibleEmbedder: vectors from an OpenAI-compatible ``/v1/embeddings`` endpoint.

OpenAI, Ollama, vLLM, LM Studio and the llama.cpp server all serve the same request:
``POST {base}/v1/embeddings`` with ``{"model": ..., "input": [texts]}``, answered by
``{"data": [{"index": i, "embedding": [floats]}, ...]}``. Install the client with
``pip install 'f09-memory[openai]'`` (httpx, imported lazily when an embedder is built).

- **URL.** ``base_url`` is the server root (``http://localhost:11434``) or its API root
  ending in ``/v1`` (``https://api.openai.com/v1``); both post to ``.../v1/embeddings``.
  A URL already ending in ``/embeddings`` is used as is. See :func:`embeddings_url`.
- **Key.** ``api_key``, else the ``MEMORY_EMBEDDING_API_KEY`` environment variable, else
  ``OPENAI_API_KEY`` but only for ``api.openai.com`` (an OpenAI key is never sent to another
  host). Sent as ``Authorization: Bearer``; never logged, never in a message or ``repr``.
  ``api_key=""`` sends no key whatever the environment.
- **Batches and checks.** Texts go in requests of ``batch_size``; each answer must hold one
  finite vector per text (placed by ``index``) of the embedder's dimension: ``dim`` when
  given (a first answer of another size fails at once: ``dim`` does not fit the model),
  otherwise the first answer's, then fixed. Rows are returned L2-normalized float32.
  An empty text is not sent: it embeds to the zero vector (as with ``HashingEmbedder``).
- **Retries.** HTTP 408, 429 and 5xx, timeouts, connection errors and malformed bodies
  (not JSON, truncated, fields missing, wrong count or dimension) are retried up to
  ``max_retries`` times after ``min(max_backoff_s, backoff_s * 2**k)`` seconds (no jitter:
  the schedule is the same in every run), or after the server's ``Retry-After`` (seconds or
  an HTTP date) when it sends one; a ``Retry-After`` beyond ``max_backoff_s`` fails at once.
  Other 4xx (a wrong key, an unknown model, a rejected input) fail at once. Every failure
  is an :class:`~f09_memory.errors.EmbeddingFailedError` naming the status and the fix, so
  the engine keeps the record and re-embeds it in a later tick, and a query falls back to
  the non-semantic score path. A call blocks at most about
  ``(max_retries + 1) * timeout_s`` plus the waits.
- **Privacy.** With the engine's redaction mode ON, stored records are redacted at ingest
  and query texts are redacted before they reach any embedder, so no raw e-mail address or
  card number is sent.
- **Determinism.** A remote model's vectors are reproducible only as far as the server is;
  scores are quantized before ordering, and :attr:`~OpenAICompatibleEmbedder.version`
  (host, model, dimension) changes when the vectors would, so stored vectors re-embed.
"""

from __future__ import annotations

import email.utils
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np
from numpy.typing import NDArray

from f09_memory.embedding.batching import check_texts, l2_normalize_rows
from f09_memory.errors import ConfigInvalidError, EmbeddingFailedError, EmbeddingUnavailableError

if TYPE_CHECKING:
    import httpx

__all__ = ["API_KEY_ENV", "OPENAI_KEY_ENV", "OpenAICompatibleEmbedder", "embeddings_url"]

API_KEY_ENV = "MEMORY_EMBEDDING_API_KEY"
"""Environment variable read for the key when ``api_key`` is not given (any host)."""

OPENAI_KEY_ENV = "OPENAI_API_KEY"
"""Read after :data:`API_KEY_ENV`, and only when the host is ``api.openai.com``."""

_OPENAI_HOST = "api.openai.com"
_INSTALL_HINT = "pip install 'f09-memory[openai]'"
_PROBE_TEXT = "dimension probe"
_MAX_DIM = 65_536
_BODY_SNIPPET = 300
_RETRY_STATUSES = frozenset({408, 429})

logger = logging.getLogger("f09_memory")


def embeddings_url(base_url: str) -> str:
    """Return the embeddings endpoint for ``base_url``.

    Example:
        >>> embeddings_url("http://localhost:11434")
        'http://localhost:11434/v1/embeddings'
        >>> embeddings_url("https://api.openai.com/v1/")
        'https://api.openai.com/v1/embeddings'

    Args:
        base_url: An ``http(s)`` URL: the server root, an API root ending in ``/v1``, or
            the endpoint itself (ending in ``/embeddings``).

    Returns:
        The URL to post to.

    Raises:
        ConfigInvalidError: Not an ``http(s)`` URL with a host, or it carries a user name,
            password, query or fragment (pass the key as ``api_key``).

    """
    if not isinstance(base_url, str) or not base_url.strip():
        raise ConfigInvalidError(
            "base_url must be an http(s) URL such as 'http://localhost:11434' or "
            "'https://api.openai.com/v1'",
            details={"field": "base_url"},
        )
    parts = urlsplit(base_url.strip())
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        port_ok = False
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ConfigInvalidError(
            "base_url must start with http:// or https:// and name a host (and a valid "
            "port, if any), e.g. 'http://localhost:11434'",
            details={"field": "base_url"},
        )
    if parts.username is not None or parts.password is not None:
        raise ConfigInvalidError(
            "base_url must not carry credentials: pass the key as api_key= or set "
            f"{API_KEY_ENV}",
            details={"field": "base_url"},
        )
    if parts.query or parts.fragment:
        raise ConfigInvalidError(
            "base_url must not have a query or fragment; give the server or API root",
            details={"field": "base_url"},
        )
    path = parts.path.rstrip("/")
    if not path.endswith("/embeddings"):
        path = f"{path}/embeddings" if path.endswith("/v1") else f"{path}/v1/embeddings"
    return f"{parts.scheme}://{parts.netloc}{path}"


def _resolve_key(api_key: str | None, host: str) -> str | None:
    if api_key is not None:
        return api_key or None
    key = os.environ.get(API_KEY_ENV)
    if not key and host == _OPENAI_HOST:
        key = os.environ.get(OPENAI_KEY_ENV)
    return key or None


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delay-seconds or an HTTP date)."""
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


class _Retry(Exception):
    """One failed attempt that may succeed when repeated; ``wait`` overrides the schedule."""

    def __init__(self, problem: str, hint: str, wait: float | None = None,
                 cause: BaseException | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.hint = hint
        self.wait = wait
        self.cause = cause


def _check_int(name: str, value: object, low: int, high: int | None = None) -> int:
    if (isinstance(value, bool) or not isinstance(value, int) or value < low
            or (high is not None and value > high)):
        bound = f">= {low}" if high is None else f"in {low}..{high}"
        raise ConfigInvalidError(
            f"OpenAICompatibleEmbedder {name} must be an int {bound}, got {value!r}",
            details={"field": name, "value": repr(value)},
        )
    return value


def _check_seconds(name: str, value: object, *, allow_zero: bool) -> float:
    if not isinstance(value, bool) and isinstance(value, int | float):
        seconds = float(value)
        if math.isfinite(seconds) and (seconds >= 0.0 if allow_zero else seconds > 0.0):
            return seconds
    bound = ">= 0" if allow_zero else "> 0"
    raise ConfigInvalidError(
        f"OpenAICompatibleEmbedder {name} must be a finite number of seconds {bound}, "
        f"got {value!r}",
        details={"field": name, "value": repr(value)},
    )


class OpenAICompatibleEmbedder:
    """Embeds texts through an OpenAI-compatible HTTP endpoint (implements ``EmbeddingProvider``).

    See the module docstring for the URL forms, the key, retries and privacy.

    Example:
        >>> emb = OpenAICompatibleEmbedder(  # doctest: +SKIP
        ...     "http://localhost:11434", "nomic-embed-text", dim=768)
        >>> engine = MemoryEngine(embedder=emb)  # doctest: +SKIP

    Args:
        base_url: The server root or API root (``.../v1``); see :func:`embeddings_url`.
        model: The model name the server knows (``text-embedding-3-small``,
            ``nomic-embed-text``, ...).
        api_key: The key; ``None`` reads the environment (module docstring), ``""`` sends
            none. Local servers usually need none.
        dim: The model's vector dimension. ``None`` learns it from the first answer; reading
            :attr:`dim` or :attr:`version` before any embedding (the engine does when the
            embedder is set) then sends a one-text probe request.
        batch_size: Most texts per request (OpenAI accepts up to 2048).
        timeout_s: Per-request timeout (connect, read, write), seconds.
        max_retries: Retries per request after the first attempt (0: none).
        backoff_s: The first retry's wait; each next one doubles.
        max_backoff_s: The longest wait, for the schedule and for ``Retry-After``.
        sleep: Called with the seconds to wait between attempts (tests inject a recorder).

    Raises:
        ConfigInvalidError: A malformed URL, empty model, or an argument out of range
            (the message names it).
        EmbeddingUnavailableError: httpx is not installed (install the ``openai`` extra).

    """

    available = True
    """Always True once constructed (a failing server raises EmbeddingFailedError per call)."""
    tick_cost_units = 200_000
    """Work units ``tick`` charges per text it re-embeds: 1 ms, a round trip of a batch of 64
    spread over its texts. Measure yours with ``calibrate_embedder``; for ingest, prefer
    ``embedding_mode="async"`` so no frame waits for the network."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 64,
        timeout_s: float = 10.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        url = embeddings_url(base_url)
        if not isinstance(model, str) or not model.strip():
            raise ConfigInvalidError(
                "model must be the non-empty name of an embedding model the server serves "
                "(e.g. 'text-embedding-3-small', 'nomic-embed-text')",
                details={"field": "model"},
            )
        if api_key is not None and not isinstance(api_key, str):
            raise ConfigInvalidError(
                f"api_key must be a str or None, got {type(api_key).__name__}",
                details={"field": "api_key"},
            )
        if dim is not None:
            _check_int("dim", dim, 1, _MAX_DIM)
        _check_int("batch_size", batch_size, 1)
        _check_int("max_retries", max_retries, 0)
        timeout = _check_seconds("timeout_s", timeout_s, allow_zero=False)
        backoff = _check_seconds("backoff_s", backoff_s, allow_zero=True)
        backoff_max = _check_seconds("max_backoff_s", max_backoff_s, allow_zero=True)
        if not callable(sleep):
            raise ConfigInvalidError("sleep must be callable with the seconds to wait",
                                     details={"field": "sleep"})
        try:
            import httpx
        except ImportError as exc:
            raise EmbeddingUnavailableError(
                f"httpx is not installed: {_INSTALL_HINT}, or use HashingEmbedder (built in)",
                details={"missing": "httpx"},
            ) from exc
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        self._host = host if parts.port is None else f"{host}:{parts.port}"
        key = _resolve_key(api_key, host)
        headers = {"Accept": "application/json"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        self._secret = key
        self._httpx: Any = httpx
        self._client: httpx.Client = httpx.Client(
            timeout=httpx.Timeout(timeout), headers=headers, follow_redirects=False)
        self._url = url
        self._model = model
        self._dim: int | None = dim
        self._dim_seen = False  # an answer has confirmed the dimension
        self._batch_size = batch_size
        self._timeout = timeout
        self._max_retries = max_retries
        self._backoff = backoff
        self._backoff_max = backoff_max
        self._sleep = sleep
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        key = "set" if self._secret else "none"
        return (f"OpenAICompatibleEmbedder(url={self._url!r}, model={self._model!r}, "
                f"dim={self._dim!r}, api_key={key})")

    # ------------------------------------------------------------------ properties
    @property
    def url(self) -> str:
        """The endpoint posted to."""
        return self._url

    @property
    def model(self) -> str:
        """The model name sent with each request."""
        return self._model

    @property
    def dim(self) -> int:
        """Vector dimension: the given ``dim``, or learned (a probe request if needed).

        Raises:
            EmbeddingFailedError: ``dim`` was not given and the probe request failed.

        """
        if self._dim is None:
            self._post([_PROBE_TEXT])
        assert self._dim is not None
        return self._dim

    @property
    def version(self) -> str:
        """``openai-compat:{host[:port]}:{model}:d{dim}``; never includes the key."""
        return f"openai-compat:{self._host}:{self._model}:d{self.dim}"

    def close(self) -> None:
        """Close the HTTP connections (the embedder cannot be used afterwards)."""
        self._client.close()

    def __enter__(self) -> OpenAICompatibleEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ embedding
    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` in order, ``batch_size`` texts per request.

        Runtime complexity: ``ceil(non-empty texts / batch_size)`` requests (each retried as
        the module docstring says) plus ``O(n * dim)``.

        Args:
            texts: A sequence of str (not a bare str).

        Returns:
            Float32 array of shape ``(len(texts), dim)``, unit rows (zero rows for empty
            texts and for zero vectors the server returned).

        Raises:
            InputInvalidError: ``texts`` is not a sequence of str.
            EmbeddingFailedError: A request failed after its retries, or failed at once
                (a 4xx other than 408/429, a dimension other than the given ``dim``).

        """
        items = check_texts(texts)
        send = [i for i, text in enumerate(items) if text]
        rows: list[NDArray[np.float32]] = []
        for start in range(0, len(send), self._batch_size):
            chunk = send[start : start + self._batch_size]
            rows.append(self._post([items[i] for i in chunk]))
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        if send:
            out[np.asarray(send, dtype=np.intp)] = np.concatenate(rows)
        return l2_normalize_rows(out)

    def _fail(self, message: str, details: dict[str, Any]) -> EmbeddingFailedError:
        if self._secret:
            message = message.replace(self._secret, "***")
        return EmbeddingFailedError(message, details={"url": self._url, **details})

    def _post(self, texts: list[str]) -> NDArray[np.float32]:
        """One batch: the request with its retries. Returns ``(len(texts), dim)`` float32."""
        payload = {"model": self._model, "input": texts}
        attempts = self._max_retries + 1
        for attempt in range(attempts):
            try:
                return self._attempt(payload, len(texts))
            except _Retry as retry:
                wait = retry.wait
                if wait is None:
                    wait = min(self._backoff_max, self._backoff * 2.0**attempt)
                elif wait > self._backoff_max:
                    raise self._fail(
                        f"embedding endpoint {self._url} ({retry.problem}) asked to retry "
                        f"after {wait:g} s, more than max_backoff_s={self._backoff_max:g}; "
                        f"try later or raise max_backoff_s",
                        {"problem": retry.problem, "retry_after_s": wait},
                    ) from retry.cause
                if attempt + 1 == attempts:
                    raise self._fail(
                        f"embedding endpoint {self._url} failed {attempts} time(s), last: "
                        f"{retry.problem}; {retry.hint}",
                        {"problem": retry.problem, "attempts": attempts},
                    ) from retry.cause
                logger.warning("[MEM][EMBED] %s: %s; retry %d of %d in %.3g s", self._url,
                               retry.problem, attempt + 1, self._max_retries, wait)
                self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(self, payload: dict[str, Any], n: int) -> NDArray[np.float32]:
        httpx = self._httpx
        try:
            response = self._client.post(self._url, json=payload)
        except httpx.TimeoutException as exc:
            raise _Retry(f"no answer within timeout_s={self._timeout:g}",
                         "raise timeout_s or lower batch_size", cause=exc) from None
        except httpx.TransportError as exc:
            raise _Retry(f"could not connect ({type(exc).__name__})",
                         "check that the server is running and base_url is right",
                         cause=exc) from None
        status = response.status_code
        if 200 <= status < 300:
            return self._parse(response, n)
        if status in _RETRY_STATUSES or status >= 500:
            hint = ("the server is rate-limiting: lower the request rate or raise max_retries "
                    "/ backoff_s" if status == 429 else "check the server's logs and load")
            raise _Retry(f"HTTP {status}", hint,
                         _retry_after(response.headers.get("Retry-After")))
        raise self._fail(self._status_message(status, response.text), {"status": status})

    def _status_message(self, status: int, body: str) -> str:
        snippet = " ".join(body.split())[:_BODY_SNIPPET]
        if status in (401, 403):
            fix = (f"check the API key (api_key=, {API_KEY_ENV}, or {OPENAI_KEY_ENV} for "
                   f"{_OPENAI_HOST}) and its permissions")
        elif status == 404:
            fix = f"check base_url and that the server serves model {self._model!r}"
        elif 300 <= status < 400:
            fix = "the server redirected: give the final URL as base_url"
        else:
            fix = "the server rejected the request; check the model name and input sizes"
        return (f"embedding endpoint {self._url} answered HTTP {status} (not retried): {fix}"
                + (f"; server said: {snippet}" if snippet else ""))

    def _parse(self, response: httpx.Response, n: int) -> NDArray[np.float32]:
        """Check an answer's body; malformed bodies raise ``_Retry``."""
        hint = "the server sent a malformed answer; check that it speaks the OpenAI API"
        try:
            body = response.json()
        except ValueError as exc:
            raise _Retry("the body is not valid JSON (truncated?)", hint, cause=exc) from None
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise _Retry("the body has no 'data' list", hint)
        if len(data) != n:
            raise _Retry(f"{len(data)} embeddings for {n} inputs", hint)
        ordered: list[Any] = [None] * n
        for position, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
                raise _Retry(f"data[{position}] has no 'embedding' list", hint)
            index = item.get("index", position)
            if (isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n
                    or ordered[index] is not None):
                raise _Retry(f"data[{position}] has a bad or repeated index {index!r}", hint)
            ordered[index] = item["embedding"]
        try:
            matrix = np.asarray(ordered, dtype=np.float64)
        except (TypeError, ValueError):
            raise _Retry("the embeddings are not equal-length lists of numbers", hint) from None
        if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
            raise _Retry("the embeddings are empty or not finite", hint)
        got = int(matrix.shape[1])
        with self._lock:
            if self._dim is None:
                self._dim = got
            if got != self._dim:
                if not self._dim_seen:  # the given dim does not fit the model: a config error
                    raise self._fail(
                        f"model {self._model!r} at {self._url} returns {got}-dimensional "
                        f"vectors but dim={self._dim} was given: pass dim={got} (or dim=None)",
                        {"expected_dim": self._dim, "got_dim": got},
                    )
                raise _Retry(f"vectors of dimension {got}, expected {self._dim}", hint)
            self._dim_seen = True
        return matrix.astype(np.float32)
