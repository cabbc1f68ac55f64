"""Stable ordering plus packing, without sorting candidates that cannot be packed.

The full order is ``(quantized score desc, key asc)``. Sorting all n candidates costs
O(n log n) (about 0.1 ms at n = 2,000); a bundle rarely holds more than a few hundred. So
the top-K by score (K from the budget and the mean record size) are partitioned out in
O(n), every candidate tied with the K-th score is added, and only that prefix is sorted.
That prefix is *exactly* the start of the full order. Packing goes on after it with the
budget left, which only shrinks, so of the later candidates only those that fit what is
left are ordered and packed. The result is therefore identical to the full sort.

:func:`rank_and_pack_many` does the same for a crowd's candidate lists at once: the
prefixes are cut with one row-wise partition over all lists, sorted row-wise and packed
row-wise (``packing.pack_rows``), so a frame costs a few numpy passes, not a few per agent.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.packing.packer import pack_rows, pack_sequential

__all__ = ["FULL_SORT_BELOW", "NO_LIMIT", "PACKED_SORT_FROM", "full_order", "rank_and_pack",
           "rank_and_pack_many"]

FULL_SORT_BELOW = 128
"""Candidate sets smaller than this are simply sorted in full."""
PACKED_SORT_FROM = 256
"""From this many candidates :func:`full_order` sorts composite integers instead of two keys."""
PREFIX_MIN = 64
"""The smallest prefix partitioned out (the first guess of how many records pack)."""
NO_LIMIT = 2**62
"""The ``limits`` entry of :func:`rank_and_pack_many` for a list without a limit."""
_LAST = np.iinfo(np.int64).max
_FIRST = np.iinfo(np.int64).min
_SLACK = 65_536
"""Cells of padding tolerated in one row-wise block before lists are split by length."""


def _limited(order: NDArray[np.intp], chosen: NDArray[np.intp], total: int, truncated: bool,
             tokens: NDArray[np.int64], limit: int | None) -> tuple[NDArray[np.intp], int, bool]:
    """The first ``limit`` packed candidates (greedy packing in order makes this exact)."""
    if limit is not None and chosen.shape[0] > limit:
        chosen = chosen[:limit]
        return order[chosen], int(tokens[order[chosen]].sum()), True
    return order[chosen], total, truncated


def full_order(q: NDArray[np.int64], keys: NDArray[np.int64]) -> NDArray[np.intp]:
    """Positions of the candidates in the full order: ``q`` descending, then ``keys``.

    ``keys`` are unique. From :data:`PACKED_SORT_FROM` candidates on, one sort of composite
    integers ``(max(q) - q) << bits | (key - min(key))`` when they fit 62 bits (about
    three times cheaper than a two-key ``lexsort``); the order is the same.

    Runtime complexity: O(n log n).
    """
    n = int(q.shape[0])
    if n >= PACKED_SORT_FROM:
        top, low = int(q.max()), int(keys.min())
        key_bits = (int(keys.max()) - low).bit_length()
        if (top - int(q.min())).bit_length() + key_bits <= 62:
            packed = (top - q) << key_bits
            packed |= keys - low
            by_packed: NDArray[np.intp] = np.argsort(packed)
            return by_packed
    order: NDArray[np.intp] = np.lexsort((keys, -q))
    return order


def _full(q: NDArray[np.int64], keys: NDArray[np.int64], tokens: NDArray[np.int64],
          budget: int, limit: int | None) -> tuple[NDArray[np.intp], int, bool]:
    order = full_order(q, keys)
    chosen, total, truncated = pack_sequential(tokens[order], budget)
    return _limited(order, chosen, total, truncated, tokens, limit)


def rank_and_pack(
    q: NDArray[np.int64], keys: NDArray[np.int64], tokens: NDArray[np.int64], budget: int,
    limit: int | None = None, mean_tokens: float | None = None,
) -> tuple[NDArray[np.intp], int, bool]:
    """Order candidates by ``(q desc, key asc)`` and pack them under ``budget``.

    Args:
        q: Quantized scores.
        keys: Record keys (unique; the tie-break).
        tokens: Token cost of each candidate.
        budget: Token budget.
        limit: At most this many records (the first ones packed); ``None`` for no cap.
        mean_tokens: The candidates' mean token cost when the caller has it (a hint that
            only sizes the first prefix; the result does not depend on it).

    Returns:
        ``(positions, total_tokens, truncated)``: positions into the inputs of the packed
        candidates, in order; ``truncated`` when any candidate was left out.
    """
    n = int(q.shape[0])
    if n < FULL_SORT_BELOW:
        return _full(q, keys, tokens, budget, limit)
    if limit is not None and limit <= PREFIX_MIN:  # the prefix is the limit, whatever fits
        k = min(n, max(limit, 1))
    else:
        mean = max(1.0, float(tokens.mean()) if mean_tokens is None else mean_tokens)
        k = min(n, max(PREFIX_MIN, int(min(2.0 * budget / mean, 2**40))))
        if limit is not None:
            k = min(k, limit)
    if k >= n // 2:
        return _full(q, keys, tokens, budget, limit)
    neg = -q
    threshold = np.partition(neg, k - 1)[k - 1]  # the k-th value (no index array to carry)
    prefix = (neg <= threshold).nonzero()[0]  # the top k plus every tie with the k-th
    order = prefix[np.lexsort((keys[prefix], neg[prefix]))]
    chosen, total, truncated = pack_sequential(tokens[order], budget)
    if limit is not None and chosen.shape[0] >= limit:  # the first `limit` are final
        return _limited(order, chosen, total, truncated or prefix.shape[0] < n, tokens, limit)
    picked = order[chosen]
    remaining = budget - total
    if prefix.shape[0] < n:
        # Packing goes on after the prefix with what is left; the room only shrinks, so a
        # later candidate larger than it can never be packed: order only those that fit.
        later = neg > threshold
        later &= tokens <= remaining
        rest = np.flatnonzero(later)
        if rest.shape[0]:
            rest = rest[np.lexsort((keys[rest], neg[rest]))]
            more, extra, _ = pack_sequential(tokens[rest], remaining)
            picked = np.concatenate((picked, rest[more]))
            total += extra
        if limit is not None and picked.shape[0] > limit:
            picked = picked[:limit]
            total = int(tokens[picked].sum())
    return picked, total, picked.shape[0] < n


def _blocks(sizes: NDArray[np.int64]) -> list[NDArray[np.intp]]:
    """Lists (by index) to lay out together: one block, or one per power-of-two size.

    A block is as wide as its longest list; one block serves while padding stays small.
    """
    nonempty = np.flatnonzero(sizes > 0)
    if nonempty.shape[0] == 0:
        return []
    total = int(sizes[nonempty].sum())
    if int(sizes.max()) * nonempty.shape[0] <= 2 * total + _SLACK:
        return [nonempty]
    size_class = np.frexp(sizes[nonempty] - 1)[1]  # ceil(log2(size)) for size >= 1
    return [nonempty[size_class == c] for c in np.unique(size_class).tolist()]


def _block(values: NDArray[np.int64], starts: NDArray[np.intp], sizes: NDArray[np.int64],
           pad: int) -> NDArray[np.int64]:
    """``values[starts[r]:starts[r] + sizes[r]]`` in row ``r``, left-aligned, padded."""
    width = int(sizes.max())
    if (sizes == width).all() and (
            starts.shape[0] == 1 or (np.diff(starts) == width).all()):  # a plain reshape
        first = int(starts[0])
        return values[first:first + width * starts.shape[0]].reshape(-1, width)
    cols = np.arange(width)
    where = np.minimum(starts[:, None] + cols, values.shape[0] - 1)
    return np.where(cols < sizes[:, None], values[where], pad)


def _per_list(ufunc: np.ufunc, values: NDArray[np.integer[Any]], starts: NDArray[np.intp],
              sizes: NDArray[np.int64]) -> NDArray[np.int64]:
    """``ufunc`` reduced over each ``values[starts[r]:starts[r] + sizes[r]]`` (sizes > 0)."""
    edges = np.empty(2 * starts.shape[0], dtype=np.intp)
    edges[0::2] = starts
    edges[1::2] = starts + sizes
    if edges[-1] >= values.shape[0]:
        edges = edges[:-1]
    out: NDArray[np.int64] = ufunc.reduceat(values, edges)[0::2].astype(np.int64)
    return out


def _row_order(row: NDArray[np.intp], q: NDArray[np.int64], keys: NDArray[np.int64],
               n_rows: int) -> tuple[NDArray[np.intp], NDArray[np.int64]]:
    """Each row's elements in ``(q desc, key asc)`` order.

    ``row`` (non-decreasing) names each element's row. Returns ``(order, widths)``:
    ``order[r, j]`` is the index (into the elements) of row ``r``'s ``j``-th element, for
    ``j < widths[r]`` (later cells repeat some element of the row; callers ignore them).
    One sort of composite integer keys ``(q desc, key, column)`` when they fit 62 bits (keys
    are unique within a row, so the column only carries the answer), else a lexsort.
    """
    n = row.shape[0]
    widths = np.bincount(row, minlength=n_rows).astype(np.int64)
    width = int(widths.max())
    column = np.arange(n) - np.repeat(np.cumsum(widths) - widths, widths)
    cells = row * width + column
    top, low = int(q.max()), int(keys.min())
    col_bits = (width - 1).bit_length()
    key_bits = (int(keys.max()) - low).bit_length()
    if (top - int(q.min())).bit_length() + key_bits + col_bits <= 62:
        block = np.full((n_rows, width), _LAST, dtype=np.int64)
        block.ravel()[cells] = ((top - q) << (key_bits + col_bits)) | (
            (keys - low) << col_bits) | column
        block.sort(axis=1)
        block &= (1 << col_bits) - 1
        np.minimum(block, width - 1, out=block)  # padding cells: any column of the row
        at = np.zeros((n_rows, width), dtype=np.intp)
        at.ravel()[cells] = np.arange(n)
        return np.take_along_axis(at, block, axis=1), widths
    neg = np.full((n_rows, width), _LAST, dtype=np.int64)
    neg.ravel()[cells] = -q
    key = np.full((n_rows, width), _LAST, dtype=np.int64)
    key.ravel()[cells] = keys
    at = np.zeros((n_rows, width), dtype=np.intp)
    at.ravel()[cells] = np.arange(n)
    return np.take_along_axis(at, np.lexsort((key, neg), axis=-1), axis=1), widths


def _sorted_packed(
    row: NDArray[np.intp], positions: NDArray[np.intp], q: NDArray[np.int64],
    keys: NDArray[np.int64], tokens: NDArray[np.integer[Any]], budgets: NDArray[np.int64],
    limits: NDArray[np.int64], least: NDArray[np.int64],
) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.int64], NDArray[np.int64]]:
    """Order each row's elements by ``(q desc, key asc)`` and pack them.

    ``row`` (non-decreasing, one per element) indexes ``budgets``, ``limits`` and
    ``least`` (a lower bound of the row's token costs); ``positions`` are the elements'
    positions in ``q``, ``keys`` and ``tokens``. Returns ``(picked_row, picked, counts,
    left)``: the packed elements row after row, in order, then per row the number packed
    and the budget left.
    """
    order, widths = _row_order(row, q[positions], keys[positions], budgets.shape[0])
    where = positions[order]
    taken, counts, left = pack_rows(tokens[where].astype(np.int64, copy=False), widths,
                                    budgets, limits, least)
    picked = np.flatnonzero(taken)
    return picked // taken.shape[1], where.ravel()[picked], counts, left


def rank_and_pack_many(
    q: NDArray[np.int64], keys: NDArray[np.int64], tokens: NDArray[np.integer[Any]],
    bounds: NDArray[np.intp], budgets: NDArray[np.int64], limits: NDArray[np.int64],
) -> tuple[NDArray[np.intp], NDArray[np.int64], NDArray[np.int64]]:
    """:func:`rank_and_pack` for many candidate lists, in shared numpy passes.

    List ``g`` is ``[bounds[g], bounds[g + 1])`` of the concatenated inputs; its result is
    exactly ``rank_and_pack`` of that slice with ``budgets[g]`` and ``limits[g]``
    (:data:`NO_LIMIT` for none).

    Returns:
        ``(picked, counts, totals)``: the packed positions into the inputs, list after list
        and each list's in order; then per list the number packed and their tokens. A list
        is truncated when it packed fewer than it had.

    Runtime complexity: a few O(n) numpy passes for n candidates, plus O(k log k) per list
    for its packable prefix of k.
    """
    m = budgets.shape[0]
    sizes = np.diff(bounds).astype(np.int64)
    counts = np.zeros(m, dtype=np.int64)
    left = budgets.astype(np.int64, copy=True)
    picked_list: list[NDArray[np.intp]] = []
    picked_at: list[NDArray[np.intp]] = []
    for members in _blocks(sizes):
        starts = bounds[members]
        size = sizes[members]
        budget = budgets[members]
        limit = limits[members]
        least = _per_list(np.minimum, tokens, starts, size)
        sums = _per_list(np.add, tokens.astype(np.int64, copy=False), starts, size)
        # The top k of each list (k from the budget and the mean size), as in rank_and_pack.
        k = np.minimum(2.0 * budget / np.maximum(1.0, sums / size), 2.0**40).astype(np.int64)
        k = np.minimum(np.minimum(size, np.maximum(PREFIX_MIN, k)), np.maximum(limit, 1))
        cut = (size >= FULL_SORT_BELOW) & (k < size // 2)
        block = _block(q, starts, size, _FIRST)
        threshold = np.full(members.shape[0], _FIRST + 1, dtype=np.int64)
        if cut.any():  # the k-th highest score of each long list, one row-wise partition
            width = block.shape[1]
            kth = width - int(k[cut].max())
            cut_rows = block if cut.all() else block[cut]
            threshold[cut] = np.maximum(np.partition(cut_rows, kth, axis=1)[:, kth], _FIRST + 1)
        cell = np.flatnonzero(block >= threshold[:, None])  # the top k and every tie
        row, col = np.divmod(cell, block.shape[1])
        got_row, got, counts[members], left[members] = _sorted_packed(
            row, starts[row] + col, q, keys, tokens, budget, limit, least)
        picked_list.append(got)
        picked_at.append(members[got_row])
        # Packing goes on after a prefix with what is left, which only shrinks: of the later
        # candidates only those that fit it can be packed (as in rank_and_pack).
        prefix_size = np.bincount(row, minlength=members.shape[0])
        more = np.flatnonzero((prefix_size < size) & (counts[members] < limit)
                              & (left[members] >= least))
        if more.shape[0] == 0:
            continue
        cols = np.arange(block.shape[1])
        later = block[more] < threshold[more][:, None]
        later &= cols < size[more][:, None]
        position = np.minimum(starts[more][:, None] + cols, tokens.shape[0] - 1)
        later &= tokens[position] <= left[members[more]][:, None]
        cell = np.flatnonzero(later)
        if cell.shape[0] == 0:
            continue
        row, col = np.divmod(cell, later.shape[1])
        got_row, got, more_counts, left[members[more]] = _sorted_packed(
            row, position[row, col], q, keys, tokens, left[members[more]],
            limit[more] - counts[members[more]], least[more])
        counts[members[more]] += more_counts
        picked_list.append(got)
        picked_at.append(members[more[got_row]])
    if not picked_list:
        return np.zeros(0, dtype=np.intp), counts, budgets - left
    picked = np.concatenate(picked_list)
    if len(picked_list) > 1:
        picked = picked[np.argsort(np.concatenate(picked_at), kind="stable")]
    return picked, counts, budgets - left
