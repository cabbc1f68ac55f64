"""The Memory Viewer's files, read from the package (``f09_memory/endpoints/static/``).

:func:`static_file` answers ``GET /`` (``index.html``) and ``GET /static/{name}``. Only a
plain file name directly inside the package's ``static`` folder can be served: one path
segment of letters, digits, ``.``, ``_`` and ``-``, not starting with a dot, with a known
extension. Anything else (``..``, a slash or backslash, an encoded separator, a NUL, a
hidden file, a sub-folder) is simply not found, so no request can read a file outside that
folder. The files are read through :mod:`importlib.resources`, so the page is served from
a wheel, a zip or a source tree alike; a missing file (a package built without the page) is
not found either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

__all__ = ["MEDIA_TYPES", "StaticFile", "safe_name", "static_file"]

MEDIA_TYPES: dict[str, str] = {
    "html": "text/html; charset=utf-8",
    "js": "text/javascript; charset=utf-8",
    "mjs": "text/javascript; charset=utf-8",
    "css": "text/css; charset=utf-8",
    "json": "application/json",
    "svg": "image/svg+xml",
    "png": "image/png",
    "ico": "image/x-icon",
    "txt": "text/plain; charset=utf-8",
    "map": "application/json",
    "woff2": "font/woff2",
}
"""The extensions that can be served and their media types; any other is not found."""

_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
_PACKAGE = "f09_memory.endpoints"
_FOLDER = "static"


@dataclass(frozen=True)
class StaticFile:
    """One served file: its bytes and media type."""

    name: str
    content: bytes
    media_type: str


def safe_name(name: str) -> bool:
    """Whether ``name`` may be looked up in the static folder (see the module docstring)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        return False
    _, dot, ext = name.rpartition(".")
    return bool(dot) and ext.lower() in MEDIA_TYPES


def static_file(name: str) -> StaticFile | None:
    """The packaged file ``static/<name>``, or ``None`` when there is none to serve.

    Args:
        name: A plain file name (``index.html``, ``viewer.js``).

    Returns:
        The file, or ``None`` for an unsafe name, an unknown extension or a missing file.
    """
    if not safe_name(name):
        return None
    try:
        folder = resources.files(_PACKAGE).joinpath(_FOLDER)
        item = folder.joinpath(name)
        if not item.is_file():
            return None
        content = item.read_bytes()
    except (OSError, ValueError):
        return None
    ext = name.rpartition(".")[2].lower()
    return StaticFile(name, content, MEDIA_TYPES[ext])
