"""RequestGuard: the ASGI layer in front of every route (no web framework needed).

- **Host check** (DNS rebinding): a request whose ``Host`` is not one of the allowed names
  is refused with 400 before any route runs. By default only loopback names are allowed,
  so a web page on another site cannot reach a server bound to 127.0.0.1 through a domain
  it made resolve there. ``"*"`` allows any host (a server bound to a public address
  behind its own proxy).
- **Body limit**: a body above ``max_body_bytes`` is refused with 413, whether it announces
  its length or streams it.
- **Headers** on every answer: ``X-Content-Type-Options: nosniff``, ``Referrer-Policy:
  no-referrer``, ``X-Frame-Options: DENY``, a ``Content-Security-Policy`` that allows the
  page's own files only (no CDN, no inline script), and ``Cache-Control: no-store`` (memory
  is private and changes every frame).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from f09_memory.endpoints.problems import PROBLEM_MEDIA_TYPE, Problem

__all__ = ["CONTENT_SECURITY_POLICY", "LOOPBACK_HOSTS", "BodyTooLargeError", "RequestGuard"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")
"""Host names a loopback server answers to by default."""

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
"""The page may load its own files only: no inline script, no other origin."""

_HEADERS: list[tuple[bytes, bytes]] = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"cache-control", b"no-store"),
]


class BodyTooLargeError(Problem):
    """A request body above the limit (HTTP 413, ``HTTP_REQUEST_ENTITY_TOO_LARGE``)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, "HTTP_REQUEST_ENTITY_TOO_LARGE",
                         f"the request body is larger than {limit} bytes; send a smaller one")


def _host_name(value: str) -> str:
    """The name part of a ``Host`` header (``[::1]:8765`` -> ``::1``), lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else ""
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class RequestGuard:
    """ASGI middleware: host check, body limit and security headers (module docstring).

    Args:
        app: The wrapped ASGI app.
        allowed_hosts: Host names accepted in the ``Host`` header (``"*"``: any).
        max_body_bytes: The largest request body.
    """

    def __init__(self, app: ASGIApp, *, allowed_hosts: Iterable[str],
                 max_body_bytes: int) -> None:
        self.app = app
        hosts = {h.strip().lower().strip("[]") for h in allowed_hosts}
        self.any_host = "*" in hosts
        self.allowed_hosts = frozenset(hosts - {"*"})
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request, then run the app with the headers added to its answer."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in _HEADERS if k not in present]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        headers = dict(scope.get("headers") or [])
        if not self.any_host:
            host = _host_name(headers.get(b"host", b"").decode("latin-1"))
            if host not in self.allowed_hosts:
                await _answer(send_with_headers, Problem(
                    400, "HOST_NOT_ALLOWED",
                    "this server answers to its own host names only (see ServerSettings."
                    "allowed_hosts / f09-memory serve --allow-host)"))
                return
        length = headers.get(b"content-length")
        if length is not None:
            try:
                too_large = int(length) > self.max_body_bytes
            except ValueError:
                too_large = False  # the server rejects a malformed length itself
            if too_large:
                await _answer(send_with_headers, BodyTooLargeError(self.max_body_bytes))
                return
        limit = self.max_body_bytes
        received = 0

        async def receive_limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLargeError(limit)
            return message

        await self.app(scope, receive_limited, send_with_headers)


async def _answer(send: Send, problem: Problem) -> None:
    body = problem.content()
    await send({"type": "http.response.start", "status": problem.status, "headers": [
        (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
        (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
