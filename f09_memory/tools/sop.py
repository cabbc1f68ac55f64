"""The memory SOP: the editable markdown policy injected at session start (seed 001, 4.8/4.9).

The SOP tells the model when to call ``memory_write`` and ``memory_search``. A copy ships
with the package (``f09_memory/tools/resources/memory_sop.md``); a deployment edits its own
file and points :func:`load_sop` at it, with no code change (seed 001, section 9.1).

Configuration (seed 001, section 6):

- ``MEMORY_SOP_PATH`` — the SOP file; default: the shipped resource.
- ``MEMORY_SOP_MAX_CHARS`` — injection budget in characters; default
  :data:`DEFAULT_SOP_MAX_CHARS` (8000).

Loading is fail-safe: it never raises. A file that is missing or unreadable gives ``""``
(as the seed's loader does); a malformed budget falls back to the default.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from importlib import resources
from typing import Final

__all__ = [
    "DEFAULT_SOP_MAX_CHARS",
    "SOP_MAX_CHARS_ENV",
    "SOP_PATH_ENV",
    "load_sop",
]

logger = logging.getLogger("f09_memory")

SOP_PATH_ENV: Final = "MEMORY_SOP_PATH"
"""Environment variable naming the SOP markdown file."""

SOP_MAX_CHARS_ENV: Final = "MEMORY_SOP_MAX_CHARS"
"""Environment variable holding the SOP character budget."""

DEFAULT_SOP_MAX_CHARS: Final = 8000
"""The seed's default SOP injection budget, in characters."""

_RESOURCE_PACKAGE: Final = "f09_memory.tools"
_RESOURCE_NAME: Final = "resources/memory_sop.md"


def _read_shipped() -> str:
    try:
        resource = resources.files(_RESOURCE_PACKAGE).joinpath(_RESOURCE_NAME)
        return resource.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ModuleNotFoundError) as exc:
        logger.warning("[MEM][SOP] shipped SOP unreadable (%s); injecting no SOP", exc)
        return ""


def _read_file(path: object) -> str:
    if not isinstance(path, str | os.PathLike):  # an int would open a file descriptor
        logger.warning("[MEM][SOP] SOP path %r is not a path; injecting no SOP", path)
        return ""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError, ValueError, TypeError) as exc:
        logger.warning("[MEM][SOP] SOP file %r unreadable (%s); injecting no SOP", path, exc)
        return ""


def _budget(max_chars: object, env: Mapping[str, str]) -> int:
    if max_chars is not None:
        if isinstance(max_chars, int) and not isinstance(max_chars, bool) and max_chars >= 0:
            return max_chars
        logger.warning(
            "[MEM][SOP] max_chars=%r is not an integer >= 0; using %d",
            max_chars,
            DEFAULT_SOP_MAX_CHARS,
        )
        return DEFAULT_SOP_MAX_CHARS
    raw = env.get(SOP_MAX_CHARS_ENV)
    if raw is None or not str(raw).strip():
        return DEFAULT_SOP_MAX_CHARS
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = -1
    if value < 0:
        logger.warning(
            "[MEM][SOP] %s=%r is not an integer >= 0; using %d",
            SOP_MAX_CHARS_ENV,
            raw,
            DEFAULT_SOP_MAX_CHARS,
        )
        return DEFAULT_SOP_MAX_CHARS
    return value


def load_sop(
    path: str | os.PathLike[str] | None = None,
    *,
    max_chars: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """Load the memory SOP markdown, clipped to a character budget. Never raises.

    Source: ``path`` if given, else ``$MEMORY_SOP_PATH`` if set and not blank, else the
    SOP shipped with the package. Budget: ``max_chars`` if given, else
    ``$MEMORY_SOP_MAX_CHARS``, else :data:`DEFAULT_SOP_MAX_CHARS`; ``0`` disables the SOP.
    The text is stripped of surrounding whitespace, then cut to the first ``budget``
    characters. Runtime complexity: ``O(file size)``.

    Args:
        path: An SOP markdown file to read instead of the configured one.
        max_chars: The character budget (an integer >= 0).
        environ: The environment to read ``MEMORY_SOP_*`` from; default ``os.environ``.

    Returns:
        The SOP text. ``""`` if the chosen file is missing, unreadable or not UTF-8 (the
        shipped SOP is not substituted for a file the operator asked for). A malformed
        ``max_chars`` or ``$MEMORY_SOP_MAX_CHARS`` falls back to the default budget. Each
        fallback is logged as a warning under ``[MEM][SOP]``.

    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    budget = _budget(max_chars, env)
    if path is None:
        env_path = env.get(SOP_PATH_ENV)
        if env_path is not None and str(env_path).strip():
            path = str(env_path).strip()
    text = _read_shipped() if path is None else _read_file(path)
    return text.strip()[:budget]
