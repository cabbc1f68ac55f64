"""KeyedTable: rows of columns by key, an order-independent digest, snapshots, changes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from f09_memory.core.tables import KeyedTable

Q = 1_000_000_000


class Pairs(KeyedTable):
    NAME = "pairs"
    KEY_ARITY = 2
    FLOATS = ("score",)
    INTS = ("count",)

    def validate(self, columns: dict[str, Any]) -> None:
        if (columns["count"] < 0).any():
            raise ValueError("pairs: a count is negative")


def put(table: Pairs, key: tuple[str, str], score: float, count: int) -> None:
    slot = table.rows([key])
    table.column("score")[slot] = score
    table.column("count")[slot] = count


def test_the_digest_depends_on_the_rows_not_on_their_history() -> None:
    a, b = Pairs(initial_capacity=1), Pairs()
    assert a.digest(Q) is None  # never used: no part of the state hash
    put(a, ("x", "y"), 0.5, 1)
    put(a, ("x", "z"), 0.25, 2)
    put(a, ("x", "y"), 0.75, 3)
    put(b, ("x", "z"), 0.25, 2)
    put(b, ("x", "w"), 9.0, 9)
    b.digest(Q)
    put(b, ("x", "y"), 0.75, 3)
    b.delete([("x", "w"), ("absent", "key")])
    assert a.digest(Q) == b.digest(Q) and a.digest(Q).startswith("2:")
    put(b, ("x", "y"), 0.75 + 1e-6, 3)
    assert a.digest(Q) != b.digest(Q)
    a._check()
    b._check()


def test_a_snapshot_is_sorted_and_restores_the_same_digest() -> None:
    a = Pairs()
    for i in (3, 1, 2):
        put(a, ("n", str(i)), i / 7, i)
    meta, arrays = a.get_state()
    assert [["n", "1"], ["n", "2"], ["n", "3"]] == meta["keys"] and meta["used"]
    b = Pairs()
    b.set_state(meta, arrays)
    assert a.digest(Q) == b.digest(Q)
    np.testing.assert_array_equal([1, 2, 3], arrays["count"])
    b._check()


@pytest.mark.parametrize("bad", [
    lambda m, a: m.update(keys=[["only-one"]] * 3),
    lambda m, a: m.update(keys=[["n", "1"]] * 3),
    lambda m, a: a.update(count=np.array([1, 2], dtype=np.int64)),
    lambda m, a: a.update(score=np.array([0.0, np.nan, 1.0])),
    lambda m, a: a.update(count=np.array([1, -2, 3], dtype=np.int64)),  # the subclass' range
    lambda m, a: a.pop("score"),
], ids=["arity", "repeat", "shape", "nan", "range", "missing-column"])
def test_a_malformed_state_is_refused_and_changes_nothing(bad: Any) -> None:
    a = Pairs()
    for i in (1, 2, 3):
        put(a, ("n", str(i)), i / 7, i)
    meta, arrays = a.get_state()
    bad(meta, arrays)
    b = Pairs()
    put(b, ("keep", "me"), 1.0, 1)
    before = b.digest(Q)
    with pytest.raises(ValueError):
        b.set_state(meta, arrays)
    assert before == b.digest(Q) and 1 == len(b)


def test_changes_replayed_on_a_copy_give_the_same_table() -> None:
    live, copy = Pairs(), Pairs()
    live.tracking = True
    put(live, ("a", "b"), 0.5, 1)
    put(live, ("a", "c"), 0.5, 1)
    first = live.take_changes()
    assert first is not None and not live.has_changes()
    copy.apply_changes(*first)
    put(live, ("a", "b"), 0.125, 4)
    live.delete([("a", "c")])
    second = live.take_changes()
    assert second is not None and [["a", "c"]] == second[0]["deleted"]
    copy.apply_changes(*second)
    assert live.digest(Q) == copy.digest(Q) and live.take_changes() is None
    with pytest.raises(ValueError):
        copy.apply_changes({"keys": [], "deleted": "a"}, second[1] | {
            "score": np.zeros(0), "count": np.zeros(0, dtype=np.int64)})
