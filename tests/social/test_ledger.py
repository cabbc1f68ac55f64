"""SocialLedger: batches equal one-by-one application, rollback, loading checks, the index."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.social.ledger import LedgerBatch, LedgerRules, SocialLedger

Q = 1_000_000_000
RULES = LedgerRules(0.5, -0.5, 0.0, 0.05)
PEOPLE = ["ann", "bob", "cid", "dee"]


def batch_of(ledger: SocialLedger, items: list[tuple[str, str, float, float, bool, int]]
             ) -> LedgerBatch:
    slots = ledger.rows([(a, o) for a, o, *_ in items])
    w = np.array([it[3] for it in items])
    return LedgerBatch(
        slots=slots, sentiment=np.array([it[2] for it in items]),
        sentiment_rate=np.minimum(0.3 * w, 1.0), trust_rate=np.minimum(0.1 * w, 1.0),
        weight=w, hearsay=np.zeros(len(items), dtype=np.bool_),
        betrayal_kind=np.array([it[4] for it in items], dtype=np.bool_),
        times=np.array([it[5] for it in items], dtype=np.int64))


def values(ledger: SocialLedger) -> dict[tuple[str, ...], tuple[float | int, ...]]:
    meta, cols = ledger.get_state()
    names = sorted(cols)
    return {tuple(k): tuple(cols[n][i].item() for n in names)
            for i, k in enumerate(meta["keys"])}


items_strategy = st.lists(
    st.tuples(st.sampled_from(PEOPLE), st.sampled_from(PEOPLE),
              st.floats(-1.0, 1.0, allow_nan=False), st.floats(0.1, 5.0),
              st.booleans(), st.integers(0, 1_000)).filter(lambda t: t[0] != t[1]),
    max_size=60)


@settings(max_examples=60, deadline=None)
@given(items_strategy)
def test_a_batch_equals_applying_its_items_one_by_one(
        items: list[tuple[str, str, float, float, bool, int]]) -> None:
    whole, single = SocialLedger(), SocialLedger()
    out = whole.apply(batch_of(whole, items), RULES)
    befores = []
    for item in items:
        one = single.apply(batch_of(single, [item]), RULES)
        befores.append((one.trust_before[0], one.trust_after[0], one.betrayal[0], one.flip[0]))
    assert values(whole) == values(single)  # bit for bit
    assert befores == list(zip(out.trust_before.tolist(), out.trust_after.tolist(),
                               out.betrayal.tolist(), out.flip.tolist(), strict=True))
    assert whole.digest(Q) == single.digest(Q)
    whole._check()


def test_rounds_and_the_scalar_tail_agree_with_one_by_one() -> None:
    # 40 distinct pairs once (a large round), then one pair 50 times (the scalar tail).
    items = [(f"a{i}", "z", 0.5, 1.0, False, i) for i in range(40)]
    items += [("a0", "z", (-1.0) ** i * 0.9, 2.0, i == 7, 100 + i) for i in range(50)]
    whole, single = SocialLedger(), SocialLedger()
    whole.apply(batch_of(whole, items), RULES)
    for item in items:
        single.apply(batch_of(single, [item]), RULES)
    assert values(whole) == values(single)
    assert int(whole.column("count")[whole.slot(("a0", "z"))]) == 51
    assert int(whole.column("first_at")[whole.slot(("a0", "z"))]) == 0
    assert int(whole.column("last_at")[whole.slot(("a0", "z"))]) == 149


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PEOPLE), st.sampled_from(PEOPLE),
                          st.floats(-1.0, 1.0, allow_nan=False),
                          st.sampled_from(["interaction", "gift", "betrayal", "help"])),
                max_size=30))
def test_engine_batches_equal_single_calls(items: list[tuple[str, str, float, str]]) -> None:
    items = [it for it in items if it[0] != it[1]]
    batch, single = MemoryEngine(MemoryConfig()), MemoryEngine(MemoryConfig())
    changes = batch.interact_many([(a, o, s, 5, k) for a, o, s, k in items])
    singles = [c for a, o, s, k in items for c in single.interact(a, o, s, kind=k, now=5)]
    assert batch.state_hash() == single.state_hash()
    assert [(c.agent_id, c.change) for c in changes] == [(c.agent_id, c.change)
                                                          for c in singles]
    batch._check()


def test_restore_undoes_values_new_rows_and_the_used_flag() -> None:
    ledger = SocialLedger()
    assert ledger.digest(Q) is None
    slots, saved = ledger.rows_saved([("a", "b")])
    ledger.apply(batch_of(ledger, [("a", "b", 1.0, 1.0, False, 3)]), RULES)
    ledger.restore(saved)
    assert len(ledger) == 0 and ledger.digest(Q) is None and ledger.others("a") == {}
    ledger.apply(batch_of(ledger, [("a", "b", 1.0, 1.0, False, 3)]), RULES)
    before, digest = values(ledger), ledger.digest(Q)
    slots, saved = ledger.rows_saved([("a", "b"), ("a", "c")])
    ledger.apply(LedgerBatch(slots, np.array([-1.0, -1.0]), np.ones(2), np.ones(2),
                             np.ones(2), np.zeros(2, bool), np.zeros(2, bool),
                             np.array([9, 9])), RULES)
    ledger.restore(saved)
    assert values(ledger) == before and ledger.digest(Q) == digest
    assert list(ledger.others("a")) == ["b"]
    ledger._check()


@pytest.mark.parametrize(("column", "value"), [
    ("sentiment", 1.5), ("trust", -1.01), ("count", -1), ("direct_weight", -0.1),
    ("first_at", 10), ("betrayals", 5), ("stance", 2)])
def test_loading_refuses_out_of_range_values(column: str, value: float) -> None:
    ledger = SocialLedger()
    ledger.apply(batch_of(ledger, [("a", "b", 0.5, 1.0, False, 3)]), RULES)
    meta, cols = ledger.get_state()
    cols[column] = cols[column].copy()
    cols[column][0] = value
    other = SocialLedger()
    with pytest.raises(ValueError, match=column):
        other.set_state(meta, cols)
    assert len(other) == 0
    ledger.set_state(*ledger.get_state())  # a valid state loads
    ledger._check()


def test_the_per_agent_index_follows_rows_deletes_and_resets() -> None:
    ledger = SocialLedger()
    ledger.rows([("a", "b"), ("a", "c"), ("d", "a")])
    assert sorted(ledger.others("a")) == ["b", "c"]
    ledger.delete([("a", "b"), ("x", "y")])
    assert sorted(ledger.others("a")) == ["c"]
    ledger._check()
    state = ledger.get_state()
    copy = SocialLedger()
    copy.set_state(*state)
    assert sorted(copy.others("d")) == ["a"] and copy.others("zz") == {}
    copy.reset()
    assert copy.others("d") == {}
