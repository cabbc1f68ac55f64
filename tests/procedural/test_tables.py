"""The miner's tables: the agent index, cursors, and refusal of malformed loaded state."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from f09_memory.procedural.actions import canonical_pattern, pattern_id
from f09_memory.procedural.tables import CursorTable, PatternTable, parse_tail, tail_text

Q = 1_000_000_000


def pattern_key(agent: str, *actions: str) -> tuple[str, str, str]:
    text = canonical_pattern(actions, "")
    return agent, pattern_id(text), text


def filled() -> PatternTable:
    table = PatternTable()
    keys = [pattern_key("a", "x", "y"), pattern_key("a", "y", "x"), pattern_key("b", "x", "y")]
    slots = table.rows(keys)
    table.column("support")[slots] = [3, 2, 1]
    table.column("successes")[slots] = [1.5, 2.0, 0.0]
    table.column("record")[slots] = [4, -1, -1]
    return table


def test_the_agent_index_follows_rows_deletes_restores_and_replays() -> None:
    table = filled()
    table.tracking = True
    assert 2 == len(table.by_agent["a"])
    table.delete([pattern_key("b", "x", "y")])
    assert "b" not in table.by_agent
    table._check()
    copy = PatternTable()
    copy.set_state(*filled().get_state())
    copy._check()
    changes = table.take_changes()
    assert changes is not None
    generation = copy.generation
    copy.apply_changes(*changes)
    copy._check()
    assert copy.generation > generation
    assert table.digest(Q) == copy.digest(Q) and set(copy.by_agent) == {"a"}


@pytest.mark.parametrize(("column", "value"), [
    ("support", 0), ("successes", 9.0), ("successes", -1.0), ("record", -2),
    ("first_seen", 10**6)])
def test_out_of_range_counts_are_refused(column: str, value: Any) -> None:
    meta, arrays = filled().get_state()
    arrays[column] = arrays[column].copy()
    arrays[column][0] = value
    table = PatternTable()
    with pytest.raises(ValueError):
        table.set_state(meta, arrays)
    assert 0 == len(table)


def test_a_key_whose_id_does_not_match_its_pattern_is_refused() -> None:
    meta, arrays = filled().get_state()
    meta["keys"][0][1] = "0" * 16
    with pytest.raises(ValueError):
        PatternTable().set_state(meta, arrays)
    meta["keys"][0][2] = "not json"
    with pytest.raises(ValueError):
        PatternTable().set_state(meta, arrays)


def test_cursors_move_keep_one_row_per_agent_and_remember_where_to_resume() -> None:
    table = CursorTable()
    assert (None, 0) == table.cursor("a")
    table.move("a", None, tail_text([("eat", "", 5)]), 3)
    row, key = table.cursor("a")
    assert row is not None and 3 == key
    table.move("a", row, tail_text([("eat", "", 5), ("nap", "", 6)]), 7)
    assert 1 == len(table.by_agent["a"]) and 7 == table.cursor("a")[1]
    assert "" == table.resume_agent()
    table.set_resume("b")
    table.set_resume("c")
    assert "c" == table.resume_agent() and 1 == len(table.by_agent[""])
    table._check()


@pytest.mark.parametrize("tail", ["x", "{}", '[["eat",""]]', '[["", "", 1]]', '[["a","",true]]'])
def test_a_malformed_tail_is_refused(tail: str) -> None:
    with pytest.raises(ValueError):
        parse_tail(tail)
    meta = {"keys": [["a", tail]], "used": True}
    with pytest.raises(ValueError):
        CursorTable().set_state(meta, {"next_key": np.array([1], dtype=np.int64)})


def test_a_negative_cursor_or_two_cursors_of_one_agent_are_refused() -> None:
    with pytest.raises(ValueError):
        CursorTable().set_state({"keys": [["a", "[]"]]},
                                {"next_key": np.array([-1], dtype=np.int64)})
    with pytest.raises(ValueError):
        CursorTable().set_state({"keys": [["a", "[]"], ["a", '[["x","",1]]']]},
                                {"next_key": np.array([1, 2], dtype=np.int64)})
