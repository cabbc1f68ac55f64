"""Captures: the columns of a scope's records at one version, kept in a bounded ring.

A capture is what ``snapshot`` and ``diff`` compare: per agent, for every live record
ordered by key, the record's digest (the 16 bytes the state hash sums, as two ``uint64``
columns) and the fields a :class:`~f09_memory.introspection.models.RecordChange` reports,
as numpy columns copied from the store, plus the text references (strings are immutable:
a capture shares them with the store, it does not copy them) and the tag table's ids
(the store's table only grows, so an id keeps its meaning).

An agent whose memory did not change since the last capture (same ``AgentMemory``
object, same ``next_rev``, which moves with every change of a record) reuses the previous
:class:`AgentCapture`: repeated captures of a quiet agent cost O(1) and share memory.

:class:`CaptureRing` keeps the last :data:`CAPTURES_KEPT` captures; versions count up from
1 (a deterministic counter, no clock). A capture costs about 80 bytes per record of its
scope that changed since the previous capture.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.errors import InputInvalidError
from f09_memory.store.agent import AgentMemory
from f09_memory.store.digests import refresh_digest
from f09_memory.store.tags import TagTable

__all__ = ["CAPTURES_KEPT", "AgentCapture", "Capture", "CaptureRing", "capture_agent"]

CAPTURES_KEPT = 16
"""Captures a ring keeps: ``diff(since=v)`` works while ``v`` is among the last 16."""

_COLUMNS = ("layer", "importance", "created", "anchor", "deadline", "status", "tokens",
            "redacted", "tagset", "digest_hi", "digest_lo")


@dataclass(frozen=True, slots=True)
class AgentCapture:
    """One agent's live records at a capture, ordered by key (rows)."""

    agent_id: str
    key: NDArray[np.int64]
    layer: NDArray[np.int8]
    importance: NDArray[np.float64]
    created: NDArray[np.int64]
    anchor: NDArray[np.int64]
    deadline: NDArray[np.int64]
    status: NDArray[np.int8]
    tokens: NDArray[np.int32]
    redacted: NDArray[np.bool_]
    tagset: NDArray[np.int32]
    digest_hi: NDArray[np.uint64]
    digest_lo: NDArray[np.uint64]
    content: list[str]
    """Text by row."""
    source_event: dict[int, str]
    """Source events by key (only records that have one)."""
    tags: TagTable
    """The store's tag table (``tagset`` ids index it)."""

    @property
    def size(self) -> int:
        """Records captured."""
        return int(self.key.shape[0])


def capture_agent(am: AgentMemory, quantum: int,
                  slots: NDArray[np.intp] | None = None) -> AgentCapture:
    """Capture ``am``'s live records (or only ``slots``, live ones) ordered by key.

    Digests are brought up to date first (``refresh_digest``, as ``state_hash`` does: a
    cache of derived values, O(records changed since)).

    Runtime complexity: O(n log n) numpy for n records, plus O(n) text references.
    """
    refresh_digest(am, quantum)
    if slots is None:
        slots = np.flatnonzero(am.alive[:am.hi])
    slots = slots[np.argsort(am.key[slots], kind="stable")]
    columns: dict[str, Any] = {name: getattr(am, name)[slots] for name in _COLUMNS}
    keys = am.key[slots]
    n = int(slots.shape[0])
    slot_list = slots.tolist()
    content: list[str] = (list(itemgetter(*slot_list)(am.content)) if n > 1
                          else [am.content[s] or "" for s in slot_list])
    source: dict[int, str] = {}
    if am.source_event:
        events = am.source_event
        if len(events) * 4 < n:  # a few: look them up by key
            wanted = set(keys.tolist())
            source = {k: v for k, v in events.items() if k in wanted}
        else:
            source = {k: events[k] for k in keys.tolist() if k in events}
    return AgentCapture(am.agent_id, keys, content=content, source_event=source,
                        tags=am.tags, **columns)


@dataclass(frozen=True, slots=True)
class Capture:
    """A scope's records at one version."""

    version: int
    agent_id: str | None
    """The scope: one agent, or ``None`` for all agents."""
    now: int
    agents: dict[str, AgentCapture]
    """Captured agents by id (agents with live records, in id order)."""

    def for_agent(self, agent_id: str | None) -> dict[str, AgentCapture]:
        """The captured agents within the scope ``agent_id`` (``None``: all)."""
        if agent_id is None:
            return self.agents
        found = self.agents.get(agent_id)
        return {} if found is None else {agent_id: found}


class CaptureRing:
    """The last ``size`` captures, and the reusable captures of unchanged agents.

    Args:
        size: Captures kept (:data:`CAPTURES_KEPT`).
    """

    def __init__(self, size: int = CAPTURES_KEPT) -> None:
        self._ring: deque[Capture] = deque(maxlen=size)
        self._version = 0
        self._last: dict[str, tuple[AgentMemory, int, AgentCapture]] = {}
        """Per agent: the memory object and its ``next_rev`` at its last capture."""

    @property
    def version(self) -> int:
        """The latest capture's version (0 before any)."""
        return self._version

    def agent(self, am: AgentMemory, quantum: int) -> AgentCapture:
        """``am``'s capture, reused when ``am`` did not change since its last one."""
        last = self._last.get(am.agent_id)
        if last is not None and last[0] is am and last[1] == am.next_rev:
            return last[2]
        captured = capture_agent(am, quantum)
        self._last[am.agent_id] = (am, am.next_rev, captured)
        return captured

    def add(self, agent_id: str | None, now: int, agents: dict[str, AgentCapture]) -> Capture:
        """Keep a new capture of scope ``agent_id`` under the next version."""
        self._version += 1
        capture = Capture(self._version, agent_id, now, agents)
        self._ring.append(capture)
        if self._version % CAPTURES_KEPT == 0:  # now and then: forget agents no capture holds
            kept = {a for c in self._ring for a in c.agents}
            for gone in [a for a in self._last if a not in kept]:
                del self._last[gone]
        return capture

    def find(self, version: object, agent_id: str | None) -> Capture:
        """The capture ``version``, usable for a diff of scope ``agent_id``.

        A capture of all agents serves any scope; one agent's serves only that agent.

        Raises:
            InputInvalidError: ``version`` is not an int, was never made, is older than the
                kept history, or is of another scope (``details["field"] == "since"``).
        """
        if isinstance(version, bool) or not isinstance(version, int):
            raise InputInvalidError("since must be an int: a version returned by snapshot() "
                                    "or diff()", details={"field": "since"})
        for capture in self._ring:
            if capture.version == version:
                if capture.agent_id is None or capture.agent_id == agent_id:
                    return capture
                break
        raise InputInvalidError(
            f"since is not a capture this introspector keeps for this scope (unknown, of "
            f"another agent, or older than the last {self._ring.maxlen} captures): take a "
            "new snapshot() of the same scope and diff from its version",
            details={"field": "since", "kept": self._ring.maxlen})
