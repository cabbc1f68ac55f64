"""HTTP endpoints (index 18): the Memory Viewer's API over one engine, and its thread model.

Parts: ``host`` (EngineHost: each request is a job marshalled to the engine's owner thread,
which runs it between two frames: ``host.pump()`` in a host loop, ``serve_forever``
without one), ``settings`` (ServerSettings, ``MEMORY_SERVER_*``), ``app`` (create_app: the
FastAPI app, the optional ``[server]`` extra, imported only when an app is built),
``views`` (what each route reads, run on the owner thread), ``models`` (the app's own JSON
bodies), ``problems`` (errors as ``application/problem+json`` with the taxonomy code),
``guard`` (RequestGuard: Host check, body limit, security headers), ``static`` (the
Memory Viewer's files from ``static/``), ``serve`` and ``demo`` (``f09-memory serve``: the
owner thread, uvicorn, the live village).
"""

from f09_memory.endpoints.app import INSTALL_HINT, ViewState, create_app, server_available
from f09_memory.endpoints.host import EngineHost, HostBusyError
from f09_memory.endpoints.settings import ServerSettings

__all__ = [
    "INSTALL_HINT",
    "EngineHost",
    "HostBusyError",
    "ServerSettings",
    "ViewState",
    "create_app",
    "server_available",
]
