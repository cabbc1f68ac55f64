"""create_app: the FastAPI app of one hosted engine (the optional ``[server]`` extra).

Routes (JSON bodies are the introspection / metrics models, camelCase):

- ``GET /`` the Memory Viewer page; ``GET /static/{name}`` its files (``endpoints.static``).
- ``GET /api/agents``, ``GET /api/agents/{agent_id}/snapshot?layer=&limit=&offset=``,
  ``GET /api/agents/{agent_id}/diff?since=``, ``POST /api/agents/{agent_id}/explain``
  (a ``RetrievalRequest``), ``GET /api/memory?limit=&offset=&agentId=``,
  ``GET /api/memory/search?q=&limit=&agentId=`` (seed 001).
- ``GET /api/metrics`` (JSON for the page), ``GET /metrics`` (Prometheus text),
  ``GET /debug/memory`` (spec section 20: stats and metrics, no text).
- ``GET /api/redaction``; ``POST /api/redaction`` with ``Authorization: Bearer <token>``.
- ``GET /openapi.json`` (no ``/docs``: it would load a script from a CDN).

Every engine read is a job run by the engine's owner thread (:class:`EngineHost`). The
redaction view mode starts ON; while it is ON every route passes ``redact=True`` to the
introspection calls. Errors are ``application/problem+json`` (``endpoints.problems``).
No route takes a file path, and none writes to the engine: ``POST /api/redaction`` changes
this app's view flag only.

FastAPI is imported when :func:`create_app` runs, so ``f09_memory.endpoints`` imports
without the extra.
"""

# No ``from __future__ import annotations``: FastAPI reads the route functions' annotations,
# which name classes imported inside create_app.

import hmac
import importlib.util
import threading
from collections.abc import Callable
from importlib import metadata
from typing import TYPE_CHECKING, Annotated, Any

from f09_memory.endpoints import views
from f09_memory.endpoints.guard import RequestGuard
from f09_memory.endpoints.host import EngineHost, HostBusyError
from f09_memory.endpoints.models import (
    AgentList,
    DebugMemory,
    ExplainRequest,
    MetricsPage,
    RedactionMode,
    SearchResults,
)
from f09_memory.endpoints.problems import (
    HOST_BUSY,
    PROBLEM_MEDIA_TYPE,
    Problem,
    http_code,
    problem_from_engine_error,
    problem_from_validation,
)
from f09_memory.endpoints.settings import ServerSettings
from f09_memory.endpoints.static import static_file
from f09_memory.engine import MemoryEngine
from f09_memory.errors import ConfigInvalidError, MemoryEngineError
from f09_memory.introspection import Explanation, MemoryDiff, MemorySnapshot
from f09_memory.json_types import JsonValue
from f09_memory.observability import MetricsCollector, render_prometheus
from f09_memory.schema.base import BoundaryModel, field_names
from f09_memory.schema.enums import MemoryLayer

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.responses import Response

__all__ = ["INSTALL_HINT", "ViewState", "create_app", "server_available"]

INSTALL_HINT = "pip install 'f09-memory[server]'"
"""What to run when FastAPI or uvicorn is missing."""

_MAX_OFFSET = 2**31
_MAX_VERSION = 2**62
_PROBLEM: dict[str, Any] = {"content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "problem+json: type, title, status, detail, code"}


_APP_PACKAGES = ("fastapi", "orjson")
"""What :func:`create_app` needs (the app, its JSON writer)."""
_SERVER_PACKAGES = (*_APP_PACKAGES, "uvicorn")


def server_available() -> bool:
    """Whether the ``[server]`` extra (FastAPI, uvicorn, orjson) is installed."""
    return all(importlib.util.find_spec(name) is not None for name in _SERVER_PACKAGES)


class ViewState:
    """The app's view flag: whether responses are redacted (starts ON). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._redaction = True

    @property
    def redaction(self) -> bool:
        """Whether every response passes ``redact=True`` (the default)."""
        return self._redaction

    def set(self, value: bool) -> None:
        """Switch redaction ON (``True``) or OFF."""
        with self._lock:
            self._redaction = bool(value)


def _version() -> str:
    try:
        return metadata.version("f09-memory")
    except metadata.PackageNotFoundError:
        return "unknown"


def create_app(host: EngineHost, settings: ServerSettings | None = None) -> "FastAPI":
    """Build the HTTP app serving ``host``'s engine.

    The app holds its view flag (``app.state.view``, a :class:`ViewState`) and settings
    (``app.state.settings``); the engine is reached through ``host`` only. The owner of the
    engine must pump ``host`` (a host loop's ``host.pump()``, or ``host.serve_forever``)
    for requests to be answered.

    Args:
        host: The engine host (the thread model).
        settings: Options; default ``ServerSettings()`` (reads ``MEMORY_SERVER_*``).

    Returns:
        The FastAPI application (an ASGI app: run it with uvicorn, or test it with
        ``starlette.testclient.TestClient``).

    Raises:
        ConfigInvalidError: FastAPI or orjson is not installed (install the ``[server]``
            extra), or ``host`` / ``settings`` is not what is expected.
    """
    for name in _APP_PACKAGES:
        if importlib.util.find_spec(name) is None:
            raise ConfigInvalidError(f"the HTTP app needs {name}: {INSTALL_HINT}",
                                     details={"field": name})
    if not isinstance(host, EngineHost):
        raise ConfigInvalidError("host must be an EngineHost", details={"field": "host"})
    settings = ServerSettings() if settings is None else settings
    if not isinstance(settings, ServerSettings):
        raise ConfigInvalidError("settings must be a ServerSettings",
                                 details={"field": "settings"})
    from fastapi import FastAPI

    app = FastAPI(title="f09-memory", version=_version(), docs_url=None, redoc_url=None,
                  description="Memory Viewer API of one f09-memory engine (read-only).")
    view = ViewState()
    app.state.view = view
    app.state.settings = settings
    app.state.host = host
    _install_errors(app)
    _add_page_routes(app)
    _add_api_routes(app, host, view, settings)
    _add_metrics_routes(app, host, settings)
    _add_redaction_routes(app, view, settings)
    app.add_middleware(RequestGuard, allowed_hosts=settings.allowed_hosts,
                       max_body_bytes=settings.max_body_bytes)
    return app


def _json(model: BoundaryModel) -> "Response":
    from starlette.responses import Response

    return Response(model.model_dump_json(by_alias=True), media_type="application/json")


def _json_data(data: dict[str, JsonValue]) -> "Response":
    """A model's JSON form already built (``Introspector.snapshot_data``), as an answer.

    orjson writes what the model's ``model_dump_json(by_alias=True)`` would, byte for byte
    (a test checks it), some six times faster over thousands of records.
    """
    import orjson
    from starlette.responses import Response

    return Response(orjson.dumps(data), media_type="application/json")


def _problem_response(problem: Problem) -> "Response":
    from starlette.responses import Response

    return Response(problem.content(), status_code=problem.status,
                    media_type=PROBLEM_MEDIA_TYPE, headers=problem.headers)


_NOT_FOUND_DETAIL = ("nothing here: GET / is the viewer, GET /openapi.json lists the API, "
                     "GET /api/agents lists the agents")


def _install_errors(app: "FastAPI") -> None:
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException

    known = field_names(ExplainRequest) | {
        "agent_id", "layer", "limit", "offset", "since", "q", "agentId", "redaction"}

    async def on_problem(_: Request, exc: Exception) -> "Response":
        assert isinstance(exc, Problem)
        return _problem_response(exc)

    async def on_engine_error(_: Request, exc: Exception) -> "Response":
        assert isinstance(exc, MemoryEngineError)
        return _problem_response(problem_from_engine_error(exc))

    async def on_busy(_: Request, exc: Exception) -> "Response":
        return _problem_response(Problem(
            503, HOST_BUSY, str(exc),
            headers={"Retry-After": "1"}))

    async def on_unknown_agent(_: Request, exc: Exception) -> "Response":
        return _problem_response(Problem(404, http_code(404), str(exc)))

    async def on_validation(_: Request, exc: Exception) -> "Response":
        assert isinstance(exc, RequestValidationError)
        return _problem_response(problem_from_validation(exc.errors(), known))

    async def on_http(_: Request, exc: Exception) -> "Response":
        assert isinstance(exc, HTTPException)
        if isinstance(exc.__cause__, Problem):  # raised while FastAPI read the body (413)
            return _problem_response(exc.__cause__)
        detail = _NOT_FOUND_DETAIL if exc.status_code == 404 else "the request was refused"
        if exc.status_code == 405:
            detail = "this route does not take that method (GET /openapi.json lists them)"
        return _problem_response(Problem(exc.status_code, http_code(exc.status_code), detail,
                                         headers=dict(exc.headers or {})))

    async def on_crash(_: Request, exc: Exception) -> "Response":  # never shows the error
        return _problem_response(Problem(500, http_code(500),
                                         "the server failed to answer; see its log"))

    app.add_exception_handler(Problem, on_problem)
    app.add_exception_handler(MemoryEngineError, on_engine_error)
    app.add_exception_handler(HostBusyError, on_busy)
    app.add_exception_handler(views.UnknownAgentError, on_unknown_agent)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(Exception, on_crash)


def _add_page_routes(app: "FastAPI") -> None:
    from starlette.responses import Response

    def serve(name: str) -> Response:
        found = static_file(name)
        if found is None:
            raise Problem(404, http_code(404), "no such file in the viewer's static folder")
        return Response(found.content, media_type=found.media_type)

    @app.get("/", include_in_schema=False)
    def page() -> Response:
        return serve("index.html")

    @app.get("/static/{name}", include_in_schema=False)
    def asset(name: str) -> Response:
        return serve(name)


def _add_api_routes(app: "FastAPI", host: EngineHost, view: ViewState,
                    settings: ServerSettings) -> None:
    from fastapi import Path, Query
    from starlette.responses import Response

    timeout = settings.job_timeout_s
    errors: dict[int | str, dict[str, Any]] = {404: _PROBLEM, 422: _PROBLEM, 503: _PROBLEM}

    def run(job: Callable[[MemoryEngine], BoundaryModel]) -> Response:
        return _json(host.call(job, timeout_s=timeout))

    def run_data(job: Callable[[MemoryEngine], dict[str, JsonValue]]) -> Response:
        return _json_data(host.call(job, timeout_s=timeout))

    agent_path = Annotated[str, Path(min_length=1, max_length=4_096,
                                     description="the agent's id")]
    agent_query = Annotated[str | None, Query(alias="agentId", min_length=1,
                                              max_length=4_096)]
    offset_query = Annotated[int, Query(ge=0, le=_MAX_OFFSET)]

    @app.get("/api/agents", response_model=None, tags=["agents"],
             responses={200: {"model": AgentList}, **errors})
    def agents() -> Response:
        """Every agent with its record counts (sorted by agent id), the clock, the version."""
        return run(views.list_agents)

    @app.get("/api/agents/{agent_id}/snapshot", response_model=None, tags=["agents"],
             responses={200: {"model": MemorySnapshot}, **errors})
    def snapshot(agent_id: agent_path, layer: MemoryLayer | None = None,
                 limit: Annotated[int | None, Query(ge=1, le=settings.max_page_limit)] = None,
                 offset: offset_query = 0) -> Response:
        """One agent's records, newest first; a capture that ``diff`` can start from."""
        redact = view.redaction
        return run_data(lambda e: views.agent_snapshot(e, agent_id, layer=layer, limit=limit,
                                                       offset=offset, redact=redact))

    @app.get("/api/agents/{agent_id}/diff", response_model=None, tags=["agents"],
             responses={200: {"model": MemoryDiff}, **errors})
    def diff(agent_id: agent_path,
             since: Annotated[int, Query(ge=0, le=_MAX_VERSION)]) -> Response:
        """Records added, removed and changed since the capture ``since`` (a version)."""
        redact = view.redaction
        return run(lambda e: views.agent_diff(e, agent_id, since=since, redact=redact))

    @app.post("/api/agents/{agent_id}/explain", response_model=None, tags=["agents"],
              responses={200: {"model": Explanation}, **errors})
    def explain(agent_id: agent_path, body: ExplainRequest) -> Response:
        """How a retrieval of this request would rank each candidate now (read-only)."""
        redact = view.redaction
        return run(lambda e: views.agent_explain(e, agent_id, body, redact=redact))

    @app.get("/api/memory", response_model=None, tags=["memory"],
             responses={200: {"model": MemorySnapshot}, **errors})
    def memory(limit: Annotated[int, Query(ge=1, le=settings.max_page_limit)] = (
                   settings.page_limit),
               offset: offset_query = 0, agent_id: agent_query = None) -> Response:
        """A page of every agent's records (or one agent's), newest first per agent."""
        redact = view.redaction
        return run_data(lambda e: views.memory_page(e, agent_id=agent_id, limit=limit,
                                                    offset=offset, redact=redact))

    @app.get("/api/memory/search", response_model=None, tags=["memory"],
             responses={200: {"model": SearchResults}, **errors})
    def search(q: Annotated[str, Query(min_length=1, max_length=1_000)],
               limit: Annotated[int, Query(ge=1, le=settings.max_search_limit)] = 20,
               agent_id: agent_query = None) -> Response:
        """Records by lexical overlap with ``q`` (seed 001), best first, ties by id."""
        redact = view.redaction
        return run(lambda e: views.search_memory(e, q, limit=limit, agent_id=agent_id,
                                                 redact=redact))

    @app.get("/debug/memory", response_model=None, tags=["debug"],
             responses={200: {"model": DebugMemory}, 503: _PROBLEM})
    def debug() -> Response:
        """Sanitized engine stats and metrics (spec section 20): counts only, no text."""
        collector = host.collector
        return run(lambda e: views.debug_memory(e, collector))


def _add_metrics_routes(app: "FastAPI", host: EngineHost, settings: ServerSettings) -> None:
    from starlette.responses import Response

    timeout = settings.job_timeout_s

    def collector_or_503() -> MetricsCollector:
        if host.collector is None:
            raise Problem(503, http_code(503), "this server was started without a metrics "
                          "collector: pass EngineHost(engine, collector=MetricsCollector("
                          "engine))")
        return host.collector

    @app.get("/api/metrics", response_model=None, tags=["metrics"],
             responses={200: {"model": MetricsPage}, 503: _PROBLEM})
    def metrics_json() -> Response:
        """The metrics now and their per-tick history (JSON, for the viewer's plot)."""
        collector = collector_or_503()
        return _json(host.call(lambda _e: views.metrics_page(collector), timeout_s=timeout))

    @app.get("/metrics", response_model=None, tags=["metrics"],
             responses={200: {"content": {"text/plain": {}},
                              "description": "Prometheus text exposition"}, 501: _PROBLEM,
                        503: _PROBLEM})
    def metrics_text() -> Response:
        """The metrics in the Prometheus text format (``prometheus_client``)."""
        collector = collector_or_503()
        snapshot = host.call(lambda _e: collector.snapshot(), timeout_s=timeout)
        try:  # rendered here, off the engine's thread
            body, content_type = render_prometheus(snapshot)
        except ConfigInvalidError as exc:  # prometheus_client (the [metrics] extra) missing
            raise Problem(501, exc.code.value, exc.message) from None
        return Response(body, media_type=content_type)


def _add_redaction_routes(app: "FastAPI", view: ViewState, settings: ServerSettings) -> None:
    from fastapi import Depends, Request
    from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
    from pydantic import ValidationError
    from starlette.responses import Response

    bearer = HTTPBearer(auto_error=False, scheme_name="token",
                        description="MEMORY_SERVER_TOKEN (ServerSettings.token)")
    token = settings.token

    def authorize(credentials: HTTPAuthorizationCredentials | None) -> None:
        if token is None:
            raise Problem(403, http_code(403), "the redaction toggle is disabled: start the "
                          "server with a token (MEMORY_SERVER_TOKEN or --token-env)")
        if credentials is None:
            raise Problem(401, http_code(401), "send Authorization: Bearer <token>",
                          headers={"WWW-Authenticate": "Bearer"})
        given = credentials.credentials.encode("utf-8", "surrogatepass")
        if not hmac.compare_digest(given, token.get_secret_value().encode("utf-8")):
            raise Problem(403, http_code(403), "the bearer token is not this server's token")

    @app.get("/api/redaction", response_model=None, tags=["redaction"],
             responses={200: {"model": RedactionMode}})
    def get_redaction() -> Response:
        """Whether responses are redacted now (the view mode; ON at start)."""
        return _json(RedactionMode(redaction=view.redaction))

    body_schema = {"$ref": "#/components/schemas/RedactionMode"}

    @app.post("/api/redaction", response_model=None, tags=["redaction"],
              responses={200: {"model": RedactionMode}, 401: _PROBLEM, 403: _PROBLEM,
                         422: _PROBLEM},
              openapi_extra={"requestBody": {"required": True, "content": {
                  "application/json": {"schema": body_schema}}}})
    async def set_redaction(
            request: Request,
            credentials: Annotated[HTTPAuthorizationCredentials | None,
                                   Depends(bearer)]) -> Response:
        """Switch the view mode (needs the bearer token). Changes no engine state."""
        authorize(credentials)  # before the body is even read
        raw = await request.body()
        try:
            wanted = RedactionMode.model_validate_json(raw)
        except ValidationError as exc:
            raise problem_from_validation(
                [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_input=False)],
                {"redaction"}) from None
        view.set(wanted.redaction)
        return _json(RedactionMode(redaction=view.redaction))
