"""Errors as ``application/problem+json`` (RFC 9457) carrying the engine's taxonomy code.

Every error answer of the HTTP app has the body ``{"type", "title", "status", "detail",
"code"}``: ``code`` is the :class:`~f09_memory.errors.ErrorCode` of a
:class:`~f09_memory.errors.MemoryEngineError` (``MEMORY_INPUT_INVALID`` ...), or
``HTTP_<REASON>`` (``HTTP_NOT_FOUND``, ``HTTP_METHOD_NOT_ALLOWED``, ...) for a protocol error,
or ``HOST_BUSY`` when the engine's owner thread did not answer in time. ``detail`` says what
to do; it never contains the request's own values (a query string, a body or a path may hold
private text): a request validation error names the parameter and the rule only.

This module needs no web framework: it builds the bodies; ``endpoints.app`` installs them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from http import HTTPStatus
from typing import Any

from f09_memory.errors import ErrorCode, MemoryEngineError

__all__ = [
    "HOST_BUSY",
    "PROBLEM_MEDIA_TYPE",
    "Problem",
    "http_code",
    "problem_from_engine_error",
    "problem_from_validation",
    "status_of",
]

PROBLEM_MEDIA_TYPE = "application/problem+json"
"""The media type of every error answer."""
HOST_BUSY = "HOST_BUSY"
"""``code`` of a 503: the engine's owner thread did not run the request in time."""

_STATUS: dict[ErrorCode, int] = {
    ErrorCode.MEMORY_INPUT_INVALID: 422,
    ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED: 422,
    ErrorCode.MEMORY_REDACTION_PATTERN_INVALID: 422,
    ErrorCode.MEMORY_RECORD_NOT_FOUND: 404,
    ErrorCode.MEMORY_RETRIEVAL_EMPTY: 404,
    ErrorCode.MEMORY_CAPACITY_EXCEEDED: 409,
    ErrorCode.MEMORY_SUMMARY_LOCKED: 409,
    ErrorCode.MEMORY_RETENTION_VIOLATION: 409,
    ErrorCode.MEMORY_SUMMARY_FAILED: 502,
    ErrorCode.MEMORY_EMBEDDING_FAILED: 502,
    ErrorCode.MEMORY_EMBEDDING_UNAVAILABLE: 503,
    ErrorCode.MEMORY_STORAGE_FAILED: 503,
    ErrorCode.MEMORY_CONFIG_INVALID: 500,
    ErrorCode.MEMORY_SNAPSHOT_INVALID: 500,
}
"""HTTP status of each taxonomy code: a caller's mistake is a 4xx, the server's a 5xx."""


def status_of(code: ErrorCode) -> int:
    """The HTTP status answered for a :class:`MemoryEngineError` of ``code``."""
    return _STATUS.get(code, 400)


def http_code(status: int) -> str:
    """``HTTP_<REASON>`` of an HTTP status (``404`` -> ``HTTP_NOT_FOUND``)."""
    try:
        return f"HTTP_{HTTPStatus(status).name}"
    except ValueError:
        return f"HTTP_{status}"


class Problem(Exception):
    """An error answer: raise it from a route, or build one for a handler.

    Args:
        status: The HTTP status.
        code: The taxonomy code, ``HTTP_<REASON>`` or :data:`HOST_BUSY`.
        detail: What went wrong and what to do (never the request's own values).
        title: A short summary (default: the status's reason phrase).
        headers: Extra response headers (``WWW-Authenticate`` for a 401, ``Retry-After``).
    """

    def __init__(self, status: int, code: str, detail: str, *, title: str | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.title = title or _reason(status)
        self.headers: dict[str, str] = dict(headers or {})

    def body(self) -> dict[str, Any]:
        """The ``application/problem+json`` body."""
        return {"type": f"urn:f09-memory:problem:{self.code}", "title": self.title,
                "status": self.status, "detail": self.detail, "code": self.code}

    def content(self) -> bytes:
        """The body as UTF-8 JSON bytes."""
        return json.dumps(self.body(), ensure_ascii=False, separators=(",", ":")).encode()


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def problem_from_engine_error(exc: MemoryEngineError) -> Problem:
    """The answer for a :class:`MemoryEngineError` raised while serving a request.

    The engine's messages never echo raw input (a project rule), so ``detail`` is the
    error's message; the title names the code.
    """
    return Problem(status_of(exc.code), exc.code.value, exc.message,
                   title=exc.code.value.removeprefix("MEMORY_").replace("_", " ").lower())


def _loc_part(part: object, known: frozenset[str]) -> str:
    if isinstance(part, int):
        return str(part)
    text = str(part)
    return text if text in known else "<key>"


def problem_from_validation(errors: Sequence[Mapping[str, Any]],
                            known: Iterable[str] = ()) -> Problem:
    """The 422 answer for a request that failed validation (FastAPI's error list).

    Each problem is named by its location (``query.limit``, ``body.maxTokens``) and the rule
    broken; a location part that is not a declared name (a body's own key, which may be
    private text) is shown as ``<key>``; the offending values are never shown.

    Args:
        errors: ``RequestValidationError.errors()``.
        known: Declared parameter and field names (shown as they are).

    Returns:
        A 422 :class:`Problem` with code ``MEMORY_INPUT_INVALID``, or the model's own code
        when every problem is one a model raised (``maxTokens`` ->
        ``MEMORY_TOKEN_BUDGET_UNDEFINED``).
    """
    names = frozenset(known) | {"query", "path", "body", "header", "cookie"}
    parts = []
    codes: set[ErrorCode] = set()
    for err in list(errors)[:20]:
        loc = ".".join(_loc_part(p, names) for p in err.get("loc", ())) or "request"
        msg = str(err.get("msg", "invalid value"))
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, MemoryEngineError):  # a model's own check, already safe
            msg = cause.message
            codes.add(cause.code)
        else:
            codes.add(ErrorCode.MEMORY_INPUT_INVALID)
        if err.get("type") == "json_invalid":
            msg = "the body is not valid JSON"
        parts.append(f"{loc}: {msg[:300]}")
    code = codes.pop() if len(codes) == 1 else ErrorCode.MEMORY_INPUT_INVALID
    detail = "invalid request: " + "; ".join(parts) + " (fix these and send it again)"
    return Problem(422, code.value, detail, title="input invalid")
