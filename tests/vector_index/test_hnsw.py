import numpy as np
import pytest

from f09_memory.errors import ConfigInvalidError, InputInvalidError, RecordNotFoundError
from f09_memory.protocols import VectorIndex
from f09_memory.vector_index import ExactIndex, HnswIndex, make_index, recall_at_k


def _clustered(n, dim, clusters, seed, spread=0.35):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, dim)).astype(np.float32)
    labels = rng.integers(0, clusters, size=n)
    points = centers[labels] + spread * rng.standard_normal((n, dim)).astype(np.float32)
    return points.astype(np.float32), rng


@pytest.fixture(scope="module")
def clustered_5000():
    points, rng = _clustered(5000, 64, 50, seed=0)
    keys = np.arange(5000, dtype=np.int64)
    hnsw = HnswIndex(64, m=16, ef_construction=200, ef=64, seed=1, initial_capacity=256)
    hnsw.add(keys, points)
    exact = ExactIndex(64)
    exact.add(keys, points)
    picks = rng.integers(0, 5000, size=100)
    queries = points[picks] + 0.1 * rng.standard_normal((100, 64)).astype(np.float32)
    return hnsw, exact, keys, points, queries


def _small(n=300, dim=16, seed=3, **kwargs):
    points, rng = _clustered(n, dim, 10, seed)
    keys = np.arange(n, dtype=np.int64) * 2 + 1
    index = HnswIndex(dim, seed=5, **kwargs)
    index.add(keys, points)
    index._check()
    return index, keys, points, rng


def test_is_a_vector_index():
    assert isinstance(HnswIndex(8), VectorIndex)


def test_recall_at_10_against_exact_is_at_least_095(clustered_5000):
    hnsw, exact, _, _, queries = clustered_5000
    recalls = [recall_at_k(hnsw.search(q, 10)[0], exact.search(q, 10)[0]) for q in queries]
    assert float(np.mean(recalls)) >= 0.95


def test_results_are_ordered_by_similarity_then_key_and_sims_match_exact(clustered_5000):
    hnsw, exact, _, _, queries = clustered_5000
    for query in queries[:20]:
        keys, sims = hnsw.search(query, 10)
        assert np.all(np.diff(sims) <= 1e-6)
        assert np.int64 == keys.dtype
        assert np.float32 == sims.dtype
        exact_sims = exact.search(query, 10, allowed=keys)
        assert np.allclose(np.sort(exact_sims[1]), np.sort(sims), atol=1e-5)


def test_two_builds_with_the_same_seed_give_identical_results():
    points, rng = _clustered(1500, 32, 15, seed=9)
    keys = rng.permutation(1500).astype(np.int64)
    builds = []
    for _ in range(2):
        index = HnswIndex(32, m=8, ef_construction=64, ef=32, seed=42, initial_capacity=64)
        for chunk in range(0, 1500, 500):  # same call sequence, shuffled keys within calls
            index.add(keys[chunk : chunk + 500], points[chunk : chunk + 500])
        builds.append(index)
    queries = rng.standard_normal((30, 32)).astype(np.float32)
    for query in queries:
        a_keys, a_sims = builds[0].search(query, 10)
        b_keys, b_sims = builds[1].search(query, 10)
        assert a_keys.tolist() == b_keys.tolist()
        assert a_sims.tobytes() == b_sims.tobytes()
    graph_a = builds[0].get_state()["graph"]
    graph_b = builds[1].get_state()["graph"]
    assert graph_a["link_lists"].tobytes() == graph_b["link_lists"].tobytes()
    assert graph_a["data_level0"].tobytes() == graph_b["data_level0"].tobytes()


def test_deleted_keys_are_never_returned():
    index, keys, points, rng = _small(n=600)
    removed = keys[::3]
    index.remove(removed)
    index._check()
    assert len(index) == 400
    assert index.deleted_count == 200
    removed_set = set(removed.tolist())
    for query in points[rng.integers(0, 600, size=30)]:
        found, _ = index.search(query, 50)
        assert len(found) == 50
        assert not removed_set & set(found.tolist())
    everything, _ = index.search(points[0], 1000)
    assert len(everything) == 400
    assert not removed_set & set(everything.tolist())


def test_removing_unknown_or_already_removed_keys_is_ignored():
    index, keys, _, _ = _small(n=50)
    index.remove(keys[:5])
    index.remove(np.concatenate([keys[:5], [10_000_000]]))
    index._check()
    assert len(index) == 45


def test_a_removed_key_added_again_is_live_with_its_new_vector():
    index, keys, points, _ = _small(n=200)
    key = int(keys[10])
    index.remove(np.array([key]))
    assert key not in index
    new_vector = -points[150:151]
    index.add(np.array([key]), new_vector)
    index._check()
    assert key in index
    assert index.deleted_count == 0
    assert len(index) == 200
    assert np.allclose(new_vector / np.linalg.norm(new_vector), index.vectors_for(np.array([key])))
    top, sims = index.search(new_vector[0], 1)
    assert [key] == top.tolist()
    assert abs(1.0 - float(sims[0])) < 1e-5


def test_adding_a_live_key_again_replaces_its_vector():
    index, keys, points, _ = _small(n=100)
    key = int(keys[0])
    index.add(np.array([key, key]), np.stack([points[5], points[60]]))
    index._check()
    assert len(index) == 100
    stored = index.vectors_for(np.array([key]))[0]
    assert np.allclose(points[60] / np.linalg.norm(points[60]), stored, atol=1e-6)


def test_capacity_doubles_as_the_index_grows():
    index = HnswIndex(8, initial_capacity=8, seed=0)
    rng = np.random.default_rng(4)
    for start in range(0, 100, 7):
        keys = np.arange(start, min(start + 7, 100), dtype=np.int64)
        index.add(keys, rng.standard_normal((len(keys), 8)).astype(np.float32))
        index._check()
    assert len(index) == 100
    assert index.capacity == 128
    found, _ = index.search(rng.standard_normal(8).astype(np.float32), 100)
    assert list(range(100)) == sorted(found.tolist())


def test_allowed_filter_is_respected_on_exact_and_graph_paths():
    for exact_filter_max in (1024, 0):
        index, keys, points, rng = _small(n=800, exact_filter_max=exact_filter_max)
        exact = ExactIndex(16)
        exact.add(keys, points)
        for allowed in (keys[:5], keys[::4], np.concatenate([keys[:3], [-7, 999_999]])):
            query = rng.standard_normal(16).astype(np.float32)
            got, _ = index.search(query, 5, allowed=allowed)
            assert set(got.tolist()) <= set(allowed.tolist())
            want, _ = exact.search(query, 5, allowed=allowed)
            assert recall_at_k(got, want) >= 0.8
            assert min(5, len([k for k in allowed.tolist() if k in index])) == len(got)


def test_filter_that_leaves_few_keys_matches_exact_search():
    index, keys, points, rng = _small(n=800, exact_filter_max=0)
    exact = ExactIndex(16)
    exact.add(keys, points)
    allowed = keys[[3, 100, 400, 650, 799]]
    query = rng.standard_normal(16).astype(np.float32)
    got, _ = index.search(query, 5, allowed=allowed)
    want, _ = exact.search(query, 5, allowed=allowed)
    assert want.tolist() == got.tolist()


def test_k_larger_than_live_count_returns_all_live_and_empty_index_returns_nothing():
    index, keys, _, rng = _small(n=20)
    index.remove(keys[:5])
    query = rng.standard_normal(16).astype(np.float32)
    assert len(index.search(query, 100)[0]) == 15
    assert len(index.search(query, 0)[0]) == 0
    assert len(HnswIndex(16).search(query, 3)[0]) == 0


def test_ef_is_settable_and_validated():
    index, _, _, _ = _small(n=50)
    index.ef = 200
    assert index.ef == 200
    with pytest.raises(ConfigInvalidError):
        index.ef = 0


@pytest.mark.parametrize(
    ("keys", "vectors"),
    [
        (np.array([-1]), np.ones((1, 16), dtype=np.float32)),  # hnswlib labels are unsigned
        (np.array([1]), np.ones((1, 15), dtype=np.float32)),
        (np.array([1]), np.full((1, 16), np.nan, dtype=np.float32)),
        (np.array([1, 2]), np.ones((1, 16), dtype=np.float32)),
    ],
)
def test_bad_add_raises_input_invalid_and_changes_nothing(keys, vectors):
    index, _, _, _ = _small(n=30)
    before = index.keys().tolist()
    with pytest.raises(InputInvalidError):
        index.add(keys, vectors)
    index._check()
    assert before == index.keys().tolist()


def test_bad_query_raises_input_invalid():
    index, _, _, _ = _small(n=30)
    with pytest.raises(InputInvalidError):
        index.search(np.ones(15, dtype=np.float32), 3)
    with pytest.raises(InputInvalidError):
        index.search(np.full(16, np.inf, dtype=np.float32), 3)
    with pytest.raises(InputInvalidError):
        index.search(np.ones(16, dtype=np.float32), -2)


def test_vectors_for_rejects_deleted_keys():
    index, keys, _, _ = _small(n=30)
    index.remove(keys[:1])
    with pytest.raises(RecordNotFoundError):
        index.vectors_for(keys[:1])


def test_state_round_trip_answers_identically_and_keeps_growing():
    index, keys, _, rng = _small(n=400)
    index.remove(keys[::5])
    restored = HnswIndex(16)
    restored.set_state(index.get_state())
    restored._check()
    assert len(index) == len(restored)
    assert index.deleted_count == restored.deleted_count
    for query in rng.standard_normal((20, 16)).astype(np.float32):
        a_keys, a_sims = index.search(query, 10)
        b_keys, b_sims = restored.search(query, 10)
        assert a_keys.tolist() == b_keys.tolist()
        assert a_sims.tobytes() == b_sims.tobytes()
    extra = rng.standard_normal((500, 16)).astype(np.float32)
    restored.add(np.arange(10_000, 10_500, dtype=np.int64), extra)
    restored._check()
    assert len(index) + 500 == len(restored)


def test_set_state_rejects_foreign_states():
    index, _, _, _ = _small(n=10)
    for bad in ({}, ExactIndex(16).get_state(), HnswIndex(8).get_state()):
        with pytest.raises(InputInvalidError):
            index.set_state(bad)
    assert len(index) == 10


def test_make_index_picks_exact_up_to_exact_max_and_hnsw_above():
    small = make_index(100, 8, exact_max=100, m=8, ef_construction=32, ef=16, seed=0)
    large = make_index(101, 8, exact_max=100, m=8, ef_construction=32, ef=16, seed=0)
    assert isinstance(small, ExactIndex)
    assert isinstance(large, HnswIndex)
    assert large.m == 8
    assert large.ef == 16
    with pytest.raises(ConfigInvalidError):
        make_index(-1, 8, exact_max=100, m=8, ef_construction=32, ef=16, seed=0)


def test_recall_at_k_counts_shared_keys():
    assert recall_at_k(np.array([1, 2, 3]), np.array([3, 2, 1])) == 1.0
    assert recall_at_k(np.array([1, 9]), np.array([1, 2])) == 0.5
    assert recall_at_k(np.array([], dtype=np.int64), np.array([], dtype=np.int64)) == 1.0


class _RaisingGraph:
    """Wraps the hnswlib index; knn_query raises the given RuntimeError."""

    def __init__(self, inner, message):
        self._inner = inner
        self._message = message

    def knn_query(self, *args, **kwargs):
        raise RuntimeError(self._message)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_too_few_neighbours_from_hnswlib_falls_back_to_exact_scan():
    index, keys, points, rng = _small(n=300)
    exact = ExactIndex(16)
    exact.add(keys, points)
    index._index = _RaisingGraph(
        index._index,
        "Cannot return the results in a contiguous 2D array. Probably ef or M is too small",
    )
    query = rng.standard_normal(16).astype(np.float32)
    got_keys, got_sims = index.search(query, 10)
    want_keys, want_sims = exact.search(query, 10)
    assert want_keys.tolist() == got_keys.tolist()
    assert np.allclose(want_sims, got_sims, atol=1e-5)


def test_other_hnswlib_errors_become_input_invalid_with_cause():
    index, _, _, rng = _small(n=50)
    index._index = _RaisingGraph(index._index, "something else broke")
    with pytest.raises(InputInvalidError) as info:
        index.search(rng.standard_normal(16).astype(np.float32), 3)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_a_restored_index_grows_the_same_graph_as_one_never_saved():
    """The level generator resumes where it stood: save/load mid-run changes nothing."""
    rng = np.random.default_rng(9)
    vectors = rng.standard_normal((1_500, 16)).astype(np.float32)
    keys = np.arange(1_500, dtype=np.int64)
    for seed in (0, 7, 2**40 + 5):
        straight = HnswIndex(16, seed=seed)
        resumed = HnswIndex(16, seed=seed)
        for index in (straight, resumed):
            index.add(keys[:600], vectors[:600])
            index.remove(keys[:50])
        for step in ((600, 1_000), (1_000, 1_500)):  # two save/load round trips
            restored = HnswIndex(16, seed=seed)
            restored.set_state(resumed.get_state())
            resumed = restored
            for index in (straight, resumed):
                index.add(keys[step[0]:step[1]], vectors[step[0]:step[1]])
                index.add(keys[:10], vectors[step[0]:step[0] + 10])  # removed keys come back
        a, b = straight.get_state()["graph"], resumed.get_state()["graph"]
        for name in ("element_levels", "link_lists", "data_level0"):
            assert a[name].tobytes() == b[name].tobytes(), name
        assert (a["enterpoint_node"], a["max_level"], a["seed"]) == (
            b["enterpoint_node"], b["max_level"], b["seed"])
        for query in rng.standard_normal((20, 16)).astype(np.float32):
            assert straight.search(query, 10)[0].tolist() == resumed.search(query, 10)[0].tolist()
