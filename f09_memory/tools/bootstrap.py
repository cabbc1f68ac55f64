"""New-session bootstrap: the SOP and the newest memories as system messages (seed 001, 4.1).

When a session starts, the host puts :func:`bootstrap_messages` in front of the recent
history: the memory SOP (:func:`~f09_memory.tools.sop.load_sop`), then the agent's newest
``memory_write`` entries (:func:`~f09_memory.tools.execute.memory_entries`) within two
budgets (seed 001, section 6):

- ``MEMORY_BOOTSTRAP_MAX_ENTRIES`` — most entries injected; default
  :data:`DEFAULT_BOOTSTRAP_MAX_ENTRIES` (10).
- ``MEMORY_BOOTSTRAP_MAX_CHARS`` — total characters of the entry lines; default
  :data:`DEFAULT_BOOTSTRAP_MAX_CHARS` (2400).

An explicit argument wins over the environment. A malformed environment value falls back
to the default with a ``[MEM][BOOTSTRAP]`` warning (operator configuration is fail-safe, as
the SOP loader is); a malformed argument raises ``MEMORY_INPUT_INVALID`` (a caller's bug).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Final

from f09_memory.engine import MemoryEngine
from f09_memory.errors import InputInvalidError
from f09_memory.tools.execute import MemoryEntry, memory_entries
from f09_memory.tools.sop import load_sop

__all__ = [
    "BOOTSTRAP_HEADER",
    "BOOTSTRAP_MAX_CHARS_ENV",
    "BOOTSTRAP_MAX_ENTRIES_ENV",
    "DEFAULT_BOOTSTRAP_MAX_CHARS",
    "DEFAULT_BOOTSTRAP_MAX_ENTRIES",
    "bootstrap_entries",
    "bootstrap_messages",
    "format_entry",
]

logger = logging.getLogger("f09_memory")

BOOTSTRAP_MAX_ENTRIES_ENV: Final = "MEMORY_BOOTSTRAP_MAX_ENTRIES"
"""Environment variable holding the most entries injected at session start."""

BOOTSTRAP_MAX_CHARS_ENV: Final = "MEMORY_BOOTSTRAP_MAX_CHARS"
"""Environment variable holding the character budget of the injected entries."""

DEFAULT_BOOTSTRAP_MAX_ENTRIES: Final = 10
"""The seed's default number of bootstrap entries."""

DEFAULT_BOOTSTRAP_MAX_CHARS: Final = 2400
"""The seed's default character budget of the bootstrap entries."""

BOOTSTRAP_HEADER: Final = (
    "Long-term memory entries (newest first; call memory_search for anything not listed):"
)
"""First line of the memory message; not counted in the character budget."""


def _limit(value: object, name: str, env_name: str, default: int, env: Mapping[str, str]) -> int:
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InputInvalidError(
                f"{name} must be an integer >= 0 (0 injects no entries), got "
                f"{value if type(value) is int else type(value).__name__}",
                details={"field": name},
            )
        return value
    raw = env.get(env_name)
    if raw is None or not str(raw).strip():
        return default
    try:
        parsed = int(str(raw).strip())
    except ValueError:
        parsed = -1
    if parsed < 0:
        logger.warning(
            "[MEM][BOOTSTRAP] %s=%r is not an integer >= 0; using %d", env_name, raw, default
        )
        return default
    return parsed


def format_entry(entry: MemoryEntry) -> str:
    """Render one entry as a bootstrap line: ``- <content> [keywords: a, b]``.

    Args:
        entry: The entry.

    Returns:
        The line, without a trailing newline; the keyword part only when there are keywords.
    """
    line = f"- {entry.content}"
    if entry.keywords:
        line += f" [keywords: {', '.join(entry.keywords)}]"
    return line


def bootstrap_entries(
    engine: MemoryEngine,
    agent_id: str,
    *,
    max_entries: int | None = None,
    max_chars: int | None = None,
    environ: Mapping[str, str] | None = None,
    now: int | None = None,
) -> list[MemoryEntry]:
    """Pick the entries to inject at session start (seed 001 ``getBootstrapEntries``).

    Walks the entries newest first and keeps each whose :func:`format_entry` line still
    fits the character budget (a long entry is skipped, a shorter later one may still fit),
    until ``max_entries`` are kept. Ordering guarantee: newest first, as
    :func:`~f09_memory.tools.execute.memory_entries`. Runtime complexity: ``O(n log n)``.

    Args:
        engine: The engine.
        agent_id: The agent.
        max_entries: Most entries; default ``$MEMORY_BOOTSTRAP_MAX_ENTRIES`` or 10.
        max_chars: Character budget of the lines; default ``$MEMORY_BOOTSTRAP_MAX_CHARS``
            or 2400.
        environ: The environment to read; default ``os.environ``.
        now: Logical time; entries whose TTL ran out by then are skipped.

    Returns:
        The chosen entries.

    Raises:
        InputInvalidError: ``max_entries``/``max_chars`` is not an integer >= 0, or
            ``agent_id`` is invalid.
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    most = _limit(max_entries, "max_entries", BOOTSTRAP_MAX_ENTRIES_ENV,
                  DEFAULT_BOOTSTRAP_MAX_ENTRIES, env)
    budget = _limit(max_chars, "max_chars", BOOTSTRAP_MAX_CHARS_ENV,
                    DEFAULT_BOOTSTRAP_MAX_CHARS, env)
    chosen: list[MemoryEntry] = []
    used = 0
    for entry in memory_entries(engine, agent_id, now=now):
        if len(chosen) >= most:
            break
        size = len(format_entry(entry))
        if used + size <= budget:
            chosen.append(entry)
            used += size
    return chosen


def bootstrap_messages(
    engine: MemoryEngine,
    agent_id: str,
    *,
    sop_path: str | os.PathLike[str] | None = None,
    max_entries: int | None = None,
    max_chars: int | None = None,
    environ: Mapping[str, str] | None = None,
    now: int | None = None,
) -> list[dict[str, str]]:
    """Build the system seed messages of a new session (seed 001, 4.1 ``buildPromptMessages``).

    Returns up to two ``{"role": "system", "content": ...}`` messages, in this order: the
    SOP text (``load_sop(sop_path, environ=environ)``; left out when empty), then
    :data:`BOOTSTRAP_HEADER` followed by one :func:`format_entry` line per entry of
    :func:`bootstrap_entries` (left out when there is none). Deterministic: the same state
    and arguments give the same messages. The result is JSON-serializable.

    Args:
        engine: The engine.
        agent_id: The agent starting a session.
        sop_path: SOP file to use instead of ``$MEMORY_SOP_PATH`` / the shipped SOP.
        max_entries: Most entries; default ``$MEMORY_BOOTSTRAP_MAX_ENTRIES`` or 10.
        max_chars: Character budget of the entry lines; default
            ``$MEMORY_BOOTSTRAP_MAX_CHARS`` or 2400 (the SOP has its own,
            ``$MEMORY_SOP_MAX_CHARS``).
        environ: The environment to read ``MEMORY_*`` from; default ``os.environ``.
        now: Logical time; entries whose TTL ran out by then are skipped.

    Returns:
        The messages (possibly empty).

    Raises:
        InputInvalidError: ``max_entries``/``max_chars`` is not an integer >= 0, or
            ``agent_id`` is invalid.
    """
    entries = bootstrap_entries(engine, agent_id, max_entries=max_entries,
                                max_chars=max_chars, environ=environ, now=now)
    messages: list[dict[str, str]] = []
    sop = load_sop(sop_path, environ=environ)
    if sop:
        messages.append({"role": "system", "content": sop})
    if entries:
        lines = "\n".join(format_entry(e) for e in entries)
        messages.append({"role": "system", "content": f"{BOOTSTRAP_HEADER}\n{lines}"})
    return messages
