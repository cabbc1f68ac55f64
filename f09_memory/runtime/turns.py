"""Conversation turns, their validation, and the canonical forms the runtime helpers hash.

A host hands the runtime helpers (:func:`~f09_memory.runtime.heartbeat_store`,
:func:`~f09_memory.runtime.pre_compaction_dump`) its conversation as a list of turns, each
a :class:`Turn` or a mapping ``{"role", "content", "timestamp"?}`` as in seed 000. A turn's
index in that list is its position in the conversation (what ``last_stored_index`` counts).

This module also holds the two pure building blocks of the helpers' idempotency:
:func:`normalize_text` (the dedupe form of a takeaway: casefolded, whitespace collapsed) and
:func:`runtime_key` (a stable fingerprint of canonical parts, stored in the record
attribute :data:`RUNTIME_KEY_ATTRIBUTE` and looked up through ``engine.records()``), and the
argument checks the helpers share (:func:`check_label`, :func:`check_count`,
:func:`check_now`), each raising ``MEMORY_INPUT_INVALID`` before anything is stored.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

from f09_memory.errors import InputInvalidError

__all__ = [
    "PROVENANCE_BY_ROLE",
    "RUNTIME_KEY_ATTRIBUTE",
    "TURN_ROLES",
    "Turn",
    "TurnLike",
    "TurnRole",
    "check_count",
    "check_label",
    "check_now",
    "normalize_text",
    "normalize_turns",
    "runtime_key",
]

TurnRole = Literal["user", "assistant", "tool", "system"]
"""Who produced a turn."""

TURN_ROLES: Final[tuple[str, ...]] = ("user", "assistant", "tool", "system")
"""The accepted turn roles (seed 000 names ``user``, ``assistant`` and ``tool``)."""

PROVENANCE_BY_ROLE: Final[Mapping[str, str]] = MappingProxyType(
    {"user": "user_explicit", "assistant": "system", "tool": "tool_output", "system": "system"}
)
"""Provenance source stored for a moment, by the role of its turn.

Seed 000: ``user_explicit`` for the user, ``system`` otherwise; PRD section 5.1 adds
``tool_output`` for tool turns (which detect no moment under the default triggers)."""

RUNTIME_KEY_ATTRIBUTE: Final[str] = "runtimeKey"
"""The record attribute holding the dedupe fingerprint written by the runtime helpers."""

_TURN_KEYS: Final[frozenset[str]] = frozenset({"role", "content", "timestamp"})
# sha256 hex digits 0-f mapped to the letters a-p: a fingerprint then holds no digit, "@" or
# "-", so no built-in redaction pattern (EMAIL, UUID, NUMSEQ16) can ever rewrite it.
_HEX_TO_LETTERS: Final = str.maketrans("0123456789abcdef", "abcdefghijklmnop")
_KEY_LETTERS: Final[int] = 32  # 128 bits


@dataclass(frozen=True, slots=True)
class Turn:
    """One conversation turn.

    Attributes:
        role: Who produced it: ``user``, ``assistant``, ``tool`` or ``system``.
        content: The message text (may be empty).

    Raises:
        InputInvalidError: On construction, if ``role`` is unknown or ``content`` is not a
            string.

    """

    role: TurnRole
    content: str

    def __post_init__(self) -> None:
        if self.role not in TURN_ROLES:
            raise InputInvalidError(
                f"unknown turn role; use one of {list(TURN_ROLES)}",
                details={"field": "role", "value": repr(self.role)[:80]},
            )
        if not isinstance(self.content, str):
            raise InputInvalidError(
                f"turn content must be a string, got {type(self.content).__name__}",
                details={"field": "content"},
            )


TurnLike = Turn | Mapping[str, object]
"""A :class:`Turn` or a seed-style mapping ``{"role", "content", "timestamp"?}``."""


def _turn_from(raw: object, index: int) -> Turn:
    if isinstance(raw, Turn):
        return raw
    if not isinstance(raw, Mapping):
        raise InputInvalidError(
            f"turns[{index}] is {type(raw).__name__}; pass a Turn or a mapping "
            "{'role': ..., 'content': ...}",
            details={"field": "turns", "index": index},
        )
    unknown = sorted(str(k) for k in raw if k not in _TURN_KEYS)
    if unknown:
        raise InputInvalidError(
            f"turns[{index}] has unknown keys {unknown}; a turn has 'role', 'content' and "
            "optionally 'timestamp'",
            details={"field": "turns", "index": index},
        )
    if "role" not in raw or "content" not in raw:
        raise InputInvalidError(
            f"turns[{index}] must have 'role' and 'content' (and optionally 'timestamp')",
            details={"field": "turns", "index": index},
        )
    role, content = raw["role"], raw["content"]
    if not isinstance(role, str) or role not in TURN_ROLES:
        raise InputInvalidError(
            f"turns[{index}].role is unknown; use one of {list(TURN_ROLES)}",
            details={"field": "turns", "index": index},
        )
    if not isinstance(content, str):
        raise InputInvalidError(
            f"turns[{index}].content must be a string, got {type(content).__name__}",
            details={"field": "turns", "index": index},
        )
    return Turn(role, content)  # type: ignore[arg-type]  # role checked against TURN_ROLES


def normalize_turns(turns: Sequence[TurnLike]) -> tuple[Turn, ...]:
    """Validate a conversation and return it as :class:`Turn` objects, in order.

    A mapping's ``timestamp`` is accepted and ignored: the helpers take logical time from
    their ``now`` argument, never from turns. Runtime complexity: ``O(len(turns))``.

    Args:
        turns: The conversation, oldest first.

    Returns:
        The turns as :class:`Turn` objects.

    Raises:
        InputInvalidError: ``turns`` is not a list, or a turn is malformed (the message
            gives its index).

    Example:
        >>> normalize_turns([{"role": "user", "content": "hi"}])
        (Turn(role='user', content='hi'),)

    """
    if isinstance(turns, str | bytes | Mapping) or not isinstance(turns, Sequence):
        raise InputInvalidError(
            f"turns must be a list of turns, got {type(turns).__name__}",
            details={"field": "turns"},
        )
    return tuple(_turn_from(raw, i) for i, raw in enumerate(turns))


def normalize_text(text: str) -> str:
    """Return the dedupe form of a takeaway: casefolded, whitespace runs collapsed, trimmed.

    Seed 000 dedupes moments by "lowercase trim"; collapsing inner whitespace as well makes
    ``"Ship  it"`` and ``"ship it"`` one takeaway. Runtime complexity: ``O(len(text))``.

    Args:
        text: Any text.

    Returns:
        The normalized text.

    Example:
        >>> normalize_text("  Decision:   use  Supabase ")
        'decision: use supabase'

    """
    return " ".join(text.casefold().split())


def runtime_key(*parts: str) -> str:
    """A stable fingerprint of ``parts``: sha256 of their canonical JSON array.

    The digest is written with the letters ``a``-``p`` instead of hex digits (128 bits, 32
    letters, prefixed ``rk``), so no redaction pattern alters it when it is stored as an
    attribute. Never uses the builtin ``hash()``: equal in every process.
    Runtime complexity: ``O(total length)``.

    Args:
        parts: The strings that identify what was stored (a kind, a normalized text, ...).

    Returns:
        The fingerprint, e.g. ``"rkmb..."``.

    """
    payload = json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()[:_KEY_LETTERS]
    return "rk" + digest.translate(_HEX_TO_LETTERS)


def check_label(value: object, field: str) -> str | None:
    """Return an optional label argument (a session id, topic or project slug), stripped.

    Args:
        value: ``None`` or a non-blank string.
        field: The argument's name, for the message.

    Returns:
        ``None`` or the stripped string.

    Raises:
        InputInvalidError: ``value`` is neither ``None`` nor a non-blank string.

    """
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputInvalidError(
            f"{field} must be a non-blank string or None, got a {type(value).__name__}",
            details={"field": field},
        )
    return value.strip()


def check_count(value: object, field: str, minimum: int) -> int:
    """Return an integer argument that must be at least ``minimum``.

    Args:
        value: The argument.
        field: The argument's name, for the message.
        minimum: The smallest accepted value.

    Returns:
        ``value`` as an ``int``.

    Raises:
        InputInvalidError: ``value`` is a bool, not an int, or below ``minimum``.

    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputInvalidError(
            f"{field} must be an integer >= {minimum}, got {value!r:.40}",
            details={"field": field, "minimum": minimum},
        )
    return value


def check_now(now: object) -> int | None:
    """Return an optional logical time: ``None`` (the engine clock) or an int >= 0.

    Args:
        now: The ``now`` argument of a helper.

    Returns:
        ``now`` unchanged.

    Raises:
        InputInvalidError: ``now`` is neither ``None`` nor a non-negative integer.

    """
    if now is None:
        return None
    return check_count(now, "now", 0)
