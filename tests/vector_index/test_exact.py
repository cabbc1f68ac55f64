import numpy as np
import pytest

from f09_memory.errors import ConfigInvalidError, InputInvalidError, RecordNotFoundError
from f09_memory.protocols import VectorIndex
from f09_memory.vector_index import ExactIndex, quantize

QUANTUM = 1_000_000_000


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = rows.astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _brute_force(keys, vectors, query, k):
    sims = _unit(vectors) @ (query / np.linalg.norm(query)).astype(np.float32)
    q = quantize(sims, QUANTUM)
    order = np.lexsort((keys, -q))[:k]
    return keys[order], sims[order]


def _filled(n=500, dim=32, seed=0):
    rng = np.random.default_rng(seed)
    keys = rng.permutation(np.arange(10_000, 10_000 + 3 * n, 3, dtype=np.int64))
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    index = ExactIndex(dim, initial_capacity=4)
    index.add(keys, vectors)
    index._check()
    return index, keys, vectors, rng


def test_is_a_vector_index():
    assert isinstance(ExactIndex(8), VectorIndex)


def test_top_k_equals_brute_force():
    index, keys, vectors, rng = _filled()
    for _ in range(20):
        query = rng.standard_normal(32).astype(np.float32)
        got_keys, got_sims = index.search(query, 10)
        want_keys, want_sims = _brute_force(keys, vectors, query, 10)
        assert want_keys.tolist() == got_keys.tolist()
        assert np.allclose(want_sims, got_sims, atol=1e-6)
        assert np.int64 == got_keys.dtype
        assert np.float32 == got_sims.dtype


def test_ties_are_ordered_by_key_and_cut_by_key():
    index = ExactIndex(3)
    same = np.tile(np.array([[1.0, 1.0, 0.0]], dtype=np.float32), (5, 1))
    index.add(np.array([50, 10, 40, 20, 30]), same)
    index.add(np.array([99]), np.array([[1.0, 0.0, 0.0]], dtype=np.float32))
    keys, sims = index.search(np.array([1.0, 1.0, 0.0], dtype=np.float32), 3)
    assert keys.tolist() == [10, 20, 30]
    assert np.allclose(1.0, sims)
    keys, _ = index.search(np.array([1.0, 1.0, 0.0], dtype=np.float32), 10)
    assert keys.tolist() == [10, 20, 30, 40, 50, 99]


def test_zero_query_scores_everything_zero_in_key_order():
    index, keys, _, _ = _filled(n=20, dim=4)
    got_keys, got_sims = index.search(np.zeros(4, dtype=np.float32), 5)
    assert np.sort(keys)[:5].tolist() == got_keys.tolist()
    assert np.all(got_sims == 0.0)


def test_swap_delete_keeps_the_others_searchable():
    index, keys, vectors, _ = _filled(n=50, dim=16)
    removed = keys[[0, 7, 25, 49]]
    index.remove(removed)
    index._check()
    assert len(index) == 46
    for key in removed.tolist():
        assert key not in index
    for key, vector in zip(keys.tolist(), vectors, strict=True):
        if key in removed:
            continue
        top, _ = index.search(vector, 1)
        assert [key] == top.tolist()
    found, _ = index.search(vectors[0], 50)
    assert not set(found.tolist()) & set(removed.tolist())
    assert len(found) == 46


def test_removing_unknown_keys_is_ignored():
    index, _, _, _ = _filled(n=10, dim=4)
    index.remove(np.array([-5, 123456789]))
    index._check()
    assert len(index) == 10


def test_allowed_filter_is_respected_on_both_paths():
    index, keys, vectors, rng = _filled(n=400, dim=16)
    query = rng.standard_normal(16).astype(np.float32)
    few = keys[:10]  # gathered row by row
    many = keys[::2]  # masked with isin
    for allowed in (few, many, np.concatenate([few, [-1, -2]])):
        got, _ = index.search(query, 8, allowed=allowed)
        live = np.array([key for key in allowed.tolist() if key in index], dtype=np.int64)
        mask = np.isin(keys, live)
        want, _ = _brute_force(keys[mask], vectors[mask], query, 8)
        assert want.tolist() == got.tolist()
        assert set(got.tolist()) <= set(allowed.tolist())
    empty, _ = index.search(query, 5, allowed=np.array([], dtype=np.int64))
    assert len(empty) == 0


def test_adding_an_existing_key_replaces_its_vector():
    index = ExactIndex(2)
    index.add(np.array([1, 2]), np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32))
    index.add(np.array([1]), np.array([[0.0, 5.0]], dtype=np.float32))
    index._check()
    assert len(index) == 2
    assert np.allclose([[0.0, 1.0]], index.vectors_for(np.array([1])))


def test_repeated_key_within_one_add_keeps_the_last_vector():
    index = ExactIndex(2)
    index.add(np.array([4, 4]), np.array([[1.0, 0.0], [0.0, 2.0]], dtype=np.float32))
    index._check()
    assert len(index) == 1
    assert np.allclose([[0.0, 1.0]], index.vectors_for(np.array([4])))


def test_capacity_doubles_as_vectors_are_added_one_by_one():
    index = ExactIndex(4, initial_capacity=2)
    rng = np.random.default_rng(1)
    for key in range(100):
        index.add(np.array([key]), rng.standard_normal((1, 4)).astype(np.float32))
    index._check()
    assert len(index) == 100
    assert index.capacity == 128
    assert np.arange(100).tolist() == index.keys().tolist()


def test_k_larger_than_live_count_returns_everything_and_k_zero_nothing():
    index, _, _, rng = _filled(n=7, dim=4)
    query = rng.standard_normal(4).astype(np.float32)
    assert len(index.search(query, 100)[0]) == 7
    assert len(index.search(query, 0)[0]) == 0
    assert len(ExactIndex(4).search(query, 3)[0]) == 0


@pytest.mark.parametrize(
    ("keys", "vectors"),
    [
        (np.array([1, 2]), np.zeros((2, 5), dtype=np.float32)),  # wrong dim
        (np.array([1, 2]), np.zeros((3, 4), dtype=np.float32)),  # row count
        (np.array([1]), np.array([[np.nan, 0, 0, 0]], dtype=np.float32)),
        (np.array([1]), np.array([[np.inf, 0, 0, 0]], dtype=np.float32)),
        (np.array([1.5]), np.zeros((1, 4), dtype=np.float32)),  # float keys
        (np.array([[1]]), np.zeros((1, 4), dtype=np.float32)),  # 2-D keys
        (np.array([True]), np.zeros((1, 4), dtype=np.float32)),
        (np.array([1]), np.array([["a", "b", "c", "d"]])),
    ],
)
def test_bad_add_raises_input_invalid_and_changes_nothing(keys, vectors):
    index, _, _, _ = _filled(n=10, dim=4)
    before = index.get_state()
    with pytest.raises(InputInvalidError):
        index.add(keys, vectors)
    after = index.get_state()
    assert before["keys"].tolist() == after["keys"].tolist()
    assert before["vectors"].tobytes() == after["vectors"].tobytes()


@pytest.mark.parametrize(
    ("query", "k"),
    [
        (np.zeros(5, dtype=np.float32), 3),
        (np.zeros((2, 4), dtype=np.float32), 3),
        (np.array([np.nan, 0, 0, 0], dtype=np.float32), 3),
        (np.zeros(4, dtype=np.float32), -1),
        (np.zeros(4, dtype=np.float32), 2.5),
    ],
)
def test_bad_search_raises_input_invalid(query, k):
    index, _, _, _ = _filled(n=10, dim=4)
    with pytest.raises(InputInvalidError):
        index.search(query, k)


def test_bad_settings_raise_config_invalid():
    for kwargs in ({"dim": 0}, {"dim": 4, "initial_capacity": 0}, {"dim": 4, "quantum": 0}):
        with pytest.raises(ConfigInvalidError):
            ExactIndex(**kwargs)


def test_vectors_for_returns_unit_rows_and_rejects_unknown_keys():
    index, keys, vectors, _ = _filled(n=10, dim=4)
    got = index.vectors_for(keys[[3, 1]])
    assert np.allclose(_unit(vectors[[3, 1]]), got, atol=1e-6)
    with pytest.raises(RecordNotFoundError):
        index.vectors_for(np.array([-42]))


def test_state_round_trip_gives_identical_results():
    index, keys, _, rng = _filled(n=200, dim=16)
    index.remove(keys[:30])
    restored = ExactIndex(16)
    restored.set_state(index.get_state())
    restored._check()
    assert len(index) == len(restored)
    for _ in range(10):
        query = rng.standard_normal(16).astype(np.float32)
        a_keys, a_sims = index.search(query, 10)
        b_keys, b_sims = restored.search(query, 10)
        assert a_keys.tolist() == b_keys.tolist()
        assert a_sims.tobytes() == b_sims.tobytes()


def test_set_state_rejects_foreign_states_and_changes_nothing():
    index, _, _, _ = _filled(n=5, dim=4)
    for bad in ({}, {"kind": "hnsw"}, ExactIndex(8).get_state()):
        with pytest.raises(InputInvalidError):
            index.set_state(bad)
    assert len(index) == 5


def _with(state, **changes):
    return {**state, **changes}


def test_set_state_rejects_damaged_states_and_changes_nothing():
    index, _, _, _ = _filled(n=5, dim=4)
    state = index.get_state()
    for bad in (_with(state, vectors=state["vectors"] * 3.0),
                _with(state, vectors=np.full((5, 4), np.nan, np.float32)),
                _with(state, kind=np.array(["exact", "exact"])),
                _with(state, dim=np.array([4, 4])),
                _with(state, keys=np.array([1, 1, 2, 3, 4])),
                _with(state, keys=state["keys"][:4])):
        with pytest.raises(InputInvalidError):
            index.set_state(bad)
    assert len(index) == 5
    zero = _with(state, vectors=np.zeros((5, 4), np.float32))
    index.set_state(zero)  # all-zero rows are what the normalization leaves for zero input
    index._check()


def test_seeded_stress_matches_a_dict_model():
    rng = np.random.default_rng(1234)
    dim = 8
    index = ExactIndex(dim, initial_capacity=1)
    model: dict[int, np.ndarray] = {}
    for _ in range(300):
        op = rng.integers(0, 3)
        if op < 2:
            keys = rng.integers(0, 60, size=int(rng.integers(1, 6)))
            vectors = rng.standard_normal((len(keys), dim)).astype(np.float32)
            index.add(keys, vectors)
            for key, vector in zip(keys.tolist(), _unit(vectors), strict=True):
                model[key] = vector
        else:
            keys = rng.integers(0, 60, size=int(rng.integers(1, 4)))
            index.remove(keys)
            for key in keys.tolist():
                model.pop(key, None)
        index._check()
        assert sorted(model) == index.keys().tolist()
        if model:
            query = rng.standard_normal(dim).astype(np.float32)
            model_keys = np.array(sorted(model), dtype=np.int64)
            model_vectors = np.stack([model[key] for key in model_keys.tolist()])
            want, _ = _brute_force(model_keys, model_vectors, query, 5)
            got, _ = index.search(query, 5)
            assert want.tolist() == got.tolist()
