"""The exact completion of a preselection gives the bundle of full scoring, on any input."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from f09_memory.canonical import quantize
from f09_memory.retrieval import completion
from f09_memory.retrieval.completion import Completion, entry_thresholds
from f09_memory.retrieval.ranking import rank_and_pack

QUANTUM = 1_000_000_000


def greedy(
    q: NDArray[np.int64],
    keys: NDArray[np.int64],
    tokens: NDArray[np.int64],
    budget: int,
    limit: int | None,
) -> list[int]:
    """The reference: sort everything, pack greedily, keep the first ``limit``."""
    taken: list[int] = []
    left = budget
    for i in np.lexsort((keys, -q)).tolist():
        if tokens[i] <= left:
            taken.append(int(keys[i]))
            left -= int(tokens[i])
    return taken if limit is None else taken[:limit]


def test_entry_thresholds_match_inserting_a_record_and_repacking() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 12))
        q = np.sort(rng.integers(0, 20, n))[::-1].astype(np.int64)
        tokens = rng.integers(1, 8, n).astype(np.int64)
        keys = np.arange(n, dtype=np.int64) + 1
        budget = int(rng.integers(1, 40))
        limit = None if rng.random() < 0.5 else int(rng.integers(1, 6))
        packed = greedy(q, keys, tokens, budget, limit)
        at = np.asarray(packed, dtype=np.intp) - 1
        costs = np.arange(10, dtype=np.int64)
        full = limit is not None and len(packed) >= limit
        entry = entry_thresholds(q[at], tokens[at], budget, full, costs)
        for cost in costs.tolist():
            for score in range(-1, 22):
                # a newcomer keyed 0 wins its ties: the most it could ever change
                with_it = greedy(
                    np.append(q, score), np.append(keys, 0), np.append(tokens, cost), budget, limit
                )
                changes = with_it != packed
                assert not changes or score >= entry[cost]


def synthetic(
    seed: int, n: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    rng = np.random.default_rng(seed)
    base = np.round(rng.random(n) * 0.6, 3)  # ties on purpose
    sims = np.round(np.clip(rng.normal(0.3, 0.15, n), 0.0, 1.0), 2)
    tokens = rng.integers(1, 30, n).astype(np.int64)
    keys = rng.permutation(n).astype(np.int64) * 7 + 3
    return base, sims, tokens, keys


@pytest.mark.parametrize("first_round", [True, False])
@pytest.mark.parametrize("seed", range(60))
def test_completion_equals_full_ranking(
    seed: int, first_round: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not first_round:  # the rounds alone must find everything
        monkeypatch.setattr(completion, "PREFIX_MIN", 0)
        monkeypatch.setattr(completion, "FIRST_ROUND", 0.0)
    rng = np.random.default_rng(1_000 + seed)
    n = int(rng.integers(50, 600))
    base, sims, tokens, keys = synthetic(seed, n)
    sw = float(rng.choice([0.0, 0.3, 0.65, 1.0]))
    budget = int(rng.choice([5, 40, 200, 900, 10**9]))
    limit = None if rng.random() < 0.6 else int(rng.integers(1, 40))
    q_all = quantize(base + sw * sims, QUANTUM)
    expected = greedy(q_all, keys, tokens, budget, limit)

    depth = int(rng.integers(1, 40))
    order = np.lexsort((np.arange(n), -sims))  # a perfect index: top-k by similarity

    def search(k: int) -> tuple[NDArray[np.intp], float]:
        near = np.sort(order[:k])
        return near, float(sims[order[k - 1]]) if k < n else 0.0

    near, bound = search(depth)
    left_out = np.ones(n, dtype=np.bool_)
    left_out[near] = False
    rest = np.flatnonzero(left_out)
    job = Completion(
        rest=rest,
        base=base[rest],
        rest_tokens=tokens[rest],
        keys=keys,
        sw=sw,
        bound=bound,
        depth=depth,
        quantum=QUANTUM,
    )
    slots, q, toks = job.run(
        near,
        quantize(base[near] + sw * sims[near], QUANTUM),
        tokens[near],
        budget=budget,
        limit=limit,
        allowance=n,
        depth_max=int(rng.choice([depth, 4 * depth, n])),
        similarities=lambda picked: sims[picked],
        search=search if rng.random() < 0.7 else None,
    )
    chosen, _, _ = rank_and_pack(q, keys[slots], toks, budget, limit)
    assert expected == keys[slots[chosen]].tolist()
    assert len(set(slots.tolist())) == slots.shape[0]  # nothing scored twice
