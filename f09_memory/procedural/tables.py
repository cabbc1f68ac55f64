"""The miner's state tables: pattern counts and per-agent cursors (``core.tables``).

Both are :class:`~f09_memory.core.tables.KeyedTable` subclasses, so snapshots, the state
hash, the durable journal and ``_check`` cover them with no code here. A table holds only
numbers, so the strings a row needs live in its key:

- :class:`PatternTable` ``procedural.patterns``, key ``(agent_id, pattern_id, canonical)``:
  the canonical text (``actions.canonical_pattern``) rides in the key, so a pattern's
  actions and context come back from the row itself, in snapshots and journal effects
  alike, with no side mapping to keep in step. ``pattern_id`` is derived from it, and kept
  in the key so rows sort by it.
- :class:`CursorTable` ``procedural.cursors``, key ``(agent_id, tail)``: ``next_key`` (the
  first record key not yet read) and ``tail``, the JSON of the agent's last ``max_n - 1``
  actions ``[[action, context, time], ...]`` so a chain continues across slices whatever
  happened to those records since. A new tail is a new key (delete, then create): one row
  per agent either way. One more row, ``("", agent_id)``, names the agent the next slice
  starts from (agent ids are never empty).

Each table keeps a derived index of its keys by agent (rebuilt with the rows on a restore
or a replay, never saved).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from numpy.typing import NDArray

from f09_memory.core.tables import KeyedTable
from f09_memory.procedural.actions import parse_pattern, pattern_id

__all__ = ["CursorTable", "PatternTable", "parse_tail", "tail_text"]


class _ByAgent(KeyedTable):
    """A table whose keys are indexed by their agent part (position ``AGENT``)."""

    AGENT: ClassVar[int] = 0

    def reset(self) -> None:
        super().reset()
        self.by_agent: dict[str, set[tuple[str, ...]]] = {}
        self.generation = getattr(self, "generation", 0) + 1
        """Bumped by every restore and replay: caches derived from the rows check it."""

    def apply_changes(self, meta: dict[str, Any], arrays: dict[str, NDArray[Any]]) -> None:
        super().apply_changes(meta, arrays)
        self.generation += 1

    def _new_row(self, key: tuple[str, ...]) -> int:
        slot = super()._new_row(key)
        self.by_agent.setdefault(key[self.AGENT], set()).add(key)
        return slot

    def delete(self, keys: Iterable[tuple[str, ...]]) -> int:
        gone = 0
        for key in keys:
            if super().delete((key,)):
                gone += 1
                mine = self.by_agent[key[self.AGENT]]
                mine.discard(key)
                if not mine:
                    del self.by_agent[key[self.AGENT]]
        return gone

    def _check(self) -> None:
        super()._check()
        indexed = sorted(k for keys in self.by_agent.values() for k in keys)
        assert indexed == sorted(self.keys()), "the agent index disagrees with the rows"


class PatternTable(_ByAgent):
    """Counts per ``(agent_id, pattern_id, canonical)``.

    Columns: ``support`` (occurrences), ``first_seen`` / ``last_seen`` (logical time of the
    occurrences' last action), ``record`` (key of the pattern's procedural record, -1:
    none) and ``successes`` (the sum of the occurrences' success scores, 0..support).
    """

    NAME = "procedural.patterns"
    KEY_ARITY = 3
    FLOATS = ("successes",)
    INTS = ("support", "first_seen", "last_seen", "record")

    def _import(self, meta: dict[str, Any], arrays: dict[str, NDArray[Any]]
                ) -> tuple[list[tuple[str, ...]], dict[str, NDArray[Any]]]:
        keys, cols = super()._import(meta, arrays)
        for key in keys:
            parse_pattern(key[2])
            if pattern_id(key[2]) != key[1]:
                raise ValueError(f"{self.NAME}: a pattern id does not match its pattern")
        return keys, cols

    def validate(self, columns: dict[str, NDArray[Any]]) -> None:
        """Refuse counts no mining could produce.

        Raises:
            ValueError: support < 1, successes outside 0..support, times reversed, or a
                record key below -1.
        """
        support = columns["support"]
        successes = columns["successes"]
        if (support < 1).any() or (successes < 0).any() or (successes > support).any():
            raise ValueError(f"{self.NAME}: support or successes out of range")
        if (columns["first_seen"] > columns["last_seen"]).any() or (
                columns["first_seen"] < 0).any():
            raise ValueError(f"{self.NAME}: first_seen after last_seen or negative")
        if (columns["record"] < -1).any():
            raise ValueError(f"{self.NAME}: record key below -1")


def parse_tail(text: str) -> list[tuple[str, str, int]]:
    """The actions of a cursor's ``tail`` key: ``[(action, context, time), ...]``.

    Raises:
        ValueError: Not a tail's JSON.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError("a cursor tail is not JSON") from exc
    if not isinstance(data, list):
        raise ValueError("a cursor tail is not a list")
    out: list[tuple[str, str, int]] = []
    for item in data:
        if (not isinstance(item, list) or len(item) != 3 or not isinstance(item[0], str)
                or not item[0] or not isinstance(item[1], str)
                or isinstance(item[2], bool) or not isinstance(item[2], int)):
            raise ValueError("a cursor tail item is not [action, context, time]")
        out.append((item[0], item[1], item[2]))
    return out


def tail_text(tail: Sequence[tuple[str, str, int]]) -> str:
    """The canonical JSON of a tail (inverse of :func:`parse_tail`)."""
    return json.dumps([list(t) for t in tail], ensure_ascii=False, separators=(",", ":"))


class CursorTable(_ByAgent):
    """Where each agent's mining resumes: ``(agent_id, tail)`` -> ``next_key``.

    The row ``("", agent_id)`` (column ``next_key`` unused, 0) names the agent the next
    tick's slice starts from.
    """

    NAME = "procedural.cursors"
    KEY_ARITY = 2
    INTS = ("next_key",)

    def _import(self, meta: dict[str, Any], arrays: dict[str, NDArray[Any]]
                ) -> tuple[list[tuple[str, ...]], dict[str, NDArray[Any]]]:
        keys, cols = super()._import(meta, arrays)
        agents = [k[0] for k in keys]
        if len(set(agents)) != len(agents):
            raise ValueError(f"{self.NAME}: an agent has two cursors")
        for key in keys:
            if key[0]:
                parse_tail(key[1])
        return keys, cols

    def validate(self, columns: dict[str, NDArray[Any]]) -> None:
        """Refuse a negative cursor.

        Raises:
            ValueError: ``next_key`` below 0.
        """
        if (columns["next_key"] < 0).any():
            raise ValueError(f"{self.NAME}: next_key below 0")

    def cursor(self, agent_id: str) -> tuple[tuple[str, ...] | None, int]:
        """The agent's row key (``None``: never mined) and ``next_key``."""
        keys = self.by_agent.get(agent_id)
        if not keys:
            return None, 0
        (key,) = keys
        slot = self.slot(key)
        assert slot is not None
        return key, int(self.column("next_key")[slot])

    def move(self, agent_id: str, old: tuple[str, ...] | None, tail: str,
             next_key: int) -> None:
        """Set the agent's cursor to ``next_key`` and ``tail`` (a new key when it changed)."""
        key = (agent_id, tail)
        if old is not None and old != key:
            self.delete((old,))
        slots = self.rows([key])
        self.column("next_key")[slots] = next_key

    def move_many(self, moves: Sequence[tuple[str, tuple[str, ...] | None, str, int]]
                  ) -> None:
        """:meth:`move` for several agents, with one ``rows`` call.

        Args:
            moves: ``(agent_id, old row, tail, next_key)`` per agent.
        """
        self.delete([old for agent_id, old, tail, _ in moves
                     if old is not None and old != (agent_id, tail)])
        slots = self.rows([(agent_id, tail) for agent_id, _, tail, _ in moves])
        self.column("next_key")[slots] = [next_key for *_, next_key in moves]

    def resume_agent(self) -> str:
        """The agent the next slice starts from (``""``: the first)."""
        keys = self.by_agent.get("")
        return next(iter(keys))[1] if keys else ""

    def set_resume(self, agent_id: str) -> None:
        """Remember the agent the next slice starts from."""
        old = self.by_agent.get("")
        key = ("", agent_id)
        if old and key in old:
            return
        if old:
            self.delete(sorted(old))
        self.rows([key])
