"""Exact completion of a preselection: the bundle full scoring gives, scoring a fraction.

A large agent's retrieval scores only a preselection exactly: the candidates among the
index's top K by similarity. Every other candidate has a *bound*: its exact non-semantic
score (cheap for all of them at once: importance, recency and layer are columns) plus the
semantic weight times the preselection's similarity bound (the K-th similarity: no record
outside the top K is more similar). Its quantized score is at most its quantized bound.

Packing is greedy in score order, and the room left only shrinks down the order. So a
left-out candidate can change the bundle only if its token cost fits the room left just
before its score's position, which is at most the room before its bound's position. For
each token cost ``t`` that gives an *entry threshold*: the lowest bound at which a record of
``t`` tokens could still enter (:func:`entry_thresholds`). The completion runs in rounds:

1. the best bounds, about twice what the budget packs, are scored (the records that
   importance, recency and layer alone put first);
2. pack what is scored; the left-out candidates whose bound reaches their entry threshold
   are *needed*;
3. when many are needed (the bound is loose: many records about as similar as the K-th),
   the index search is deepened while a deeper search costs less than scoring them;
4. the needed are scored exactly (for those below every packed record, only the best
   bounds of the round: the best of them packs next and shrinks the room); repeat from 2.

It stops when none is needed: the bundle is then exactly the one full scoring gives,
whenever the similarity bound holds (always with an exact index; HNSW may miss a neighbour,
which deepening makes rarer). ``allowance`` caps the left-out candidates scored, highest
bound first. Every score is computed as :func:`~f09_memory.retrieval.scoring.compute_scores`
computes it (the same float operations in the same order), so the quantized scores, the
order (quantized score desc, key asc) and the bundle are the full path's, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from f09_memory.canonical import quantize
from f09_memory.retrieval.ranking import PREFIX_MIN, rank_and_pack

__all__ = ["Completion", "entry_thresholds"]

DEEPEN = 2
"""A loose preselection's index search is deepened by this factor at a time."""
ROWS_PER_RESULT = 16
"""One index result costs about as much as scoring this many left-out rows exactly: on the
2-core machine HNSW takes 2.4-4 µs per result at k = 1,024 on 100k x 384 (a graph walk,
slowed most when the other core is busy) and a gathered exact row 0.25-0.35 µs; 16 gave
the lowest CPU time per retrieval there, 8 to 24 within 5%."""
FIRST_ROUND = 2.0
"""The first round scores this many best bounds per record the budget packs."""
TAIL_ROUND = 64
"""Needed records below every packed one scored per round, best bound first."""

_NEVER = np.iinfo(np.int64).max
_ALWAYS = np.iinfo(np.int64).min
_TABLE_MAX = 1 << 16


def entry_thresholds(
    packed_q: NDArray[np.int64],
    packed_tokens: NDArray[np.int64],
    budget: int,
    full: bool,
    costs: NDArray[np.int64],
) -> NDArray[np.int64]:
    """The lowest quantized score at which a record of each cost in ``costs`` could enter.

    A record scored ``s`` lands after the packed records scored above ``s``; greedy packing
    takes it iff its cost fits the budget less their tokens. Ties with a packed score may
    land either side (the key decides), so they count as below it: the thresholds are the
    loosest the order allows.

    Args:
        packed_q: Quantized scores of the packed records, in packing order (non-increasing).
        packed_tokens: Their token costs, aligned.
        budget: The token budget.
        full: The packed records reached the request's ``limit`` (nothing after them enters).
        costs: Token costs to look up (non-negative).

    Returns:
        For each cost: the lowest score that could enter (``int64`` min: anywhere, even
        after every packed record; ``int64`` max: never, it exceeds the budget).
    """
    n = int(packed_q.shape[0])
    spent = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(packed_tokens, out=spent[1:])
    # the most packed records that may precede a record of cost t: spent[m] <= budget - t
    most = np.searchsorted(spent, budget - costs, side="right") - 1
    if full:
        np.minimum(most, n - 1, out=most)
    out = np.where(most >= n, _ALWAYS, packed_q[np.clip(most, 0, max(n - 1, 0))] if n else _ALWAYS)
    out[most < 0] = _NEVER
    result: NDArray[np.int64] = out.astype(np.int64, copy=False)
    return result


@dataclass(slots=True)
class Completion:
    """One retrieval's left-out candidates and the exactly scored set they may join.

    Args:
        rest: Left-out candidate slots, ascending.
        base: Their exact scores without the semantic term (float64, aligned).
        rest_tokens: Their token costs (after any compression budget), aligned.
        keys: The agent's key column (the order's tie-break).
        sw: The semantic weight.
        bound: The similarity bound of the left-out candidates.
        depth: The index search depth that gave ``bound``.
        quantum: The score quantum.
    """

    rest: NDArray[np.intp]
    base: NDArray[np.float64]
    rest_tokens: NDArray[np.int64]
    keys: NDArray[np.int64]
    sw: float
    bound: float
    depth: int
    quantum: int

    def run(
        self,
        slots: NDArray[np.intp],
        q: NDArray[np.int64],
        tokens: NDArray[np.int64],
        *,
        budget: int,
        limit: int | None,
        allowance: int,
        depth_max: int,
        similarities: Callable[[NDArray[np.intp]], NDArray[np.float64]],
        search: Callable[[int], tuple[NDArray[np.intp], float]] | None,
    ) -> tuple[NDArray[np.intp], NDArray[np.int64], NDArray[np.int64]]:
        """Add to the scored set every left-out candidate that could change the bundle.

        Args:
            slots: The exactly scored slots.
            q: Their quantized scores.
            tokens: Their token costs.
            budget: The token budget.
            limit: The request's record limit.
            allowance: At most this many left-out candidates are scored.
            depth_max: The deepest index search.
            similarities: Exact similarities of some slots.
            search: Deeper preselection: ``search(k)`` -> (slots, similarity bound).

        Returns:
            The scored ``(slots, q, tokens)``, grown.
        """
        rest, base, rest_tokens = self.rest, self.base, self.rest_tokens
        n = int(rest.shape[0])
        if n == 0:
            return slots, q, tokens
        # the bounds' ranking key: base, with -inf once a candidate is scored
        open_base = base.copy()
        big = int(rest_tokens.max())
        table = np.arange(big + 1, dtype=np.int64) if big <= _TABLE_MAX else None
        smallest = int(rest_tokens.min())
        parts = ([slots], [q], [tokens])

        def score(picked: NDArray[np.intp]) -> None:
            picked = np.sort(picked)
            open_base[picked] = -np.inf
            extra = rest[picked]
            parts[0].append(extra)
            parts[1].append(quantize(base[picked] + self.sw * similarities(extra), self.quantum))
            parts[2].append(rest_tokens[picked])

        packable = budget / max(1.0, float(rest_tokens.mean()))
        if limit is not None:
            packable = min(packable, float(limit))
        first = int(min(n, allowance, max(PREFIX_MIN, FIRST_ROUND * packable)))
        if first > 0:
            allowance -= first
            score(np.argpartition(-base, first - 1)[:first])
        while True:
            slots, q, tokens = (np.concatenate(p) if len(p) > 1 else p[0] for p in parts)
            parts = ([slots], [q], [tokens])
            if allowance <= 0:
                break
            chosen, total, _ = rank_and_pack(q, self.keys[slots], tokens, budget, limit)
            full = limit is not None and chosen.shape[0] >= limit
            packed_q = q[chosen]
            floor = int(packed_q[-1]) if chosen.shape[0] else _NEVER
            costs = table if table is not None else rest_tokens
            limits = self._limits(entry_thresholds(packed_q, tokens[chosen], budget, full, costs))
            floor_limit = float(self._limits(np.full(1, floor, dtype=np.int64))[0])
            # above the floor: a bound passing its cost's entry threshold (finite ones are
            # packed scores, so at least the floor's; a cost that fits anywhere: the floor)
            lowest = floor_limit
            if not np.isneginf(limits).any():
                lowest = max(lowest, float(limits[np.isfinite(limits)].min(initial=np.inf)))
            above = np.flatnonzero(open_base >= lowest)
            cost_of = rest_tokens[above]
            above = above[base[above] >= (limits[cost_of] if table is not None else limits[above])]
            # below the floor: room left after packing (the best bounds pack first)
            tail = np.zeros(0, dtype=np.intp)
            if not full and budget - total >= smallest:
                tail = np.flatnonzero(
                    (rest_tokens <= budget - total)
                    & (open_base < floor_limit)
                    & (open_base > -np.inf)
                )
                if tail.shape[0] > TAIL_ROUND:
                    tail = tail[np.argpartition(-base[tail], TAIL_ROUND - 1)[:TAIL_ROUND]]
            deeper = self.depth * DEEPEN
            if (
                search is not None
                and 0 < deeper <= depth_max
                and above.shape[0] > min(ROWS_PER_RESULT * deeper, allowance)
            ):
                near, self.bound = search(deeper)
                self.depth = deeper
                at = np.searchsorted(rest, near)
                inside = at < n
                at = at[inside]
                at = at[(rest[at] == near[inside]) & (open_base[at] > -np.inf)]
                if at.shape[0]:
                    score(at)
                continue
            picked = np.concatenate((above, tail)) if tail.shape[0] else above
            if picked.shape[0] == 0:
                break
            if picked.shape[0] > allowance:  # the bound is loose: check the likeliest first
                picked = picked[np.argpartition(-base[picked], allowance - 1)[:allowance]]
            allowance -= int(picked.shape[0])
            score(picked)
        return slots, q, tokens

    def _limits(self, thresholds: NDArray[np.int64]) -> NDArray[np.float64]:
        """The least ``base`` whose bound reaches each quantized score threshold.

        ``quantize(base + sw * bound) >= t`` is tested as ``base >= (t - 0.5) / quantum -
        sw * bound - margin``: a superset of the exact test (quantizing is monotone, and
        the margin covers the float rounding of both sides), so no candidate whose bound
        reaches ``t`` is left out.
        """
        limits = (thresholds.astype(np.float64) - 0.5) / self.quantum
        limits -= self.sw * self.bound + _MARGIN
        limits[thresholds == _ALWAYS] = -np.inf
        limits[thresholds == _NEVER] = np.inf
        return limits


_MARGIN = 1e-9
