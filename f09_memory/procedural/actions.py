"""The action-record convention and the canonical form of a pattern.

An **action record** is a live record of any layer but procedural whose
``metadata.attributes`` hold ``action`` (a non-empty string), optionally ``outcome`` and
``context``; a host writes one today with::

    engine.ingest("npc-1", "ate the bread", now=t,
                  metadata={"attributes": {"action": "eat", "outcome": "success",
                                           "context": "hungry"}})

and the engine-event ingestion makes the same records from events of kind ``action``
(payload ``action`` / ``outcome`` / ``context``). A record without the ``action``
attribute whose ``source_event`` is ``action:<name>`` is an action too; its outcome comes
from its tags ``success`` / ``failure``.

- ``outcome``: ``"success"`` (1) or ``"failure"`` (0), a bool, or a number in 0..1 (a
  success score). Anything else (another string, a number outside 0..1) is an unknown
  outcome, which counts as 0: "what usually works" only counts what is known to work.
- ``context``: a string naming the situation (``"hungry"``); absent or empty: no context.

Malformed action attributes (``action`` not a string, or empty after stripping) make the
record a plain record: the miner skips it, never raises (mining runs in ticks, long after
the ingest that could have refused it). Every string read here is the stored one, already
redacted by the write path.

A pattern is a tuple of action names and a context; its canonical text is the compact JSON
``[[actions...], context]`` and its ``pattern_id`` the first 16 hex digits of the sha256 of
that text.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import NamedTuple

from f09_memory.schema.enums import MemoryLayer
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import RecordExtra

__all__ = ["ActionStep", "action_at", "canonical_pattern", "may_be_action", "parse_pattern",
           "pattern_id"]

_PROCEDURAL = MemoryLayer.PROCEDURAL.code
_SOURCE_PREFIX = "action:"


class ActionStep(NamedTuple):
    """One action read from a record: name, context (``""``: none), time, success score."""

    action: str
    context: str
    time: int
    success: float


_OUTCOMES = {"success": 1.0, "failure": 0.0}


def _outcome(value: object) -> float:
    """The success score of an ``outcome`` attribute (unknown: 0)."""
    if isinstance(value, str):
        score = _OUTCOMES.get(value)
        return score if score is not None else _OUTCOMES.get(value.strip().casefold(), 0.0)
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float) and math.isfinite(value) and 0.0 <= value <= 1.0:
        return round(float(value), 6)
    return 0.0


def may_be_action(extra: RecordExtra | None, source_event: str | None) -> bool:
    """Whether a record may be an action: an ``action`` attribute or an ``action:`` source.

    The cheap test that decides which records the miner reads; :func:`action_at` parses.
    """
    return (extra is not None and "action" in extra.attributes) or (
        source_event is not None and source_event.startswith(_SOURCE_PREFIX))


def action_at(am: AgentMemory, key: int, slot: int) -> ActionStep | None:
    """The action of the live record ``key`` (at ``slot``), or ``None`` for a plain record.

    Runtime complexity: O(1) (two dict lookups; the tags only for a ``source_event``
    action).
    """
    if am.layer.item(slot) == _PROCEDURAL:
        return None
    extra = am.extras.get(key)
    attrs = extra.attributes if extra is not None else None
    name = attrs.get("action") if attrs else None
    time: int = am.created.item(slot)
    if name is not None:
        if not isinstance(name, str) or not (name := name.strip()):
            return None
        assert attrs is not None
        context = attrs.get("context")
        return ActionStep(name, context.strip() if isinstance(context, str) else "",
                          time, _outcome(attrs.get("outcome")))
    source = am.source_event.get(key) if am.source_event else None
    if source is None or not source.startswith(_SOURCE_PREFIX):
        return None
    name = source[len(_SOURCE_PREFIX):].strip()
    if not name:
        return None
    tags = am.tags_of(slot)
    success = 1.0 if "success" in tags and "failure" not in tags else 0.0
    context = attrs.get("context") if attrs else None
    return ActionStep(name, context.strip() if isinstance(context, str) else "", time,
                      success)


def canonical_pattern(actions: tuple[str, ...], context: str) -> str:
    """The canonical text of a pattern: compact JSON ``[[actions...], context]``."""
    return json.dumps([list(actions), context], ensure_ascii=False, separators=(",", ":"))


def parse_pattern(text: str) -> tuple[tuple[str, ...], str]:
    """Inverse of :func:`canonical_pattern`.

    Raises:
        ValueError: Not a canonical pattern text.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError("a pattern text is not JSON") from exc
    if (not isinstance(data, list) or len(data) != 2 or not isinstance(data[0], list)
            or len(data[0]) < 2 or not all(isinstance(a, str) and a for a in data[0])
            or not isinstance(data[1], str)):
        raise ValueError("a pattern text is not [[actions...], context]")
    return tuple(data[0]), data[1]


def pattern_id(canonical: str) -> str:
    """The stable id of a pattern: sha256 of its canonical text, first 16 hex digits."""
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]
