"""Sequential packing under a token budget (spec section 9, step 4)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["pack_sequential"]

_PYTHON_BELOW = 256


def pack_sequential(tokens: NDArray[np.int64], budget: int) -> tuple[NDArray[np.intp], int, bool]:
    """Choose records in the given (score) order while they fit the budget.

    Walks the candidates in order and takes each one that still fits; a record too large
    for what is left is skipped (and marks the bundle ``truncated``) and packing goes on
    with the next, so one oversized memory cannot starve the rest. The result keeps score
    order.

    Args:
        tokens: Token cost of each candidate, in score order (non-negative).
        budget: Token budget (> 0).

    Returns:
        ``(positions, total_tokens, truncated)``: positions into ``tokens`` that were taken.

    Runtime complexity: O(n * s) numpy work where s is the number of skip points (usually
    0 to 3); no per-candidate Python loop.
    """
    n = int(tokens.shape[0])
    if n == 0:
        return np.zeros(0, dtype=np.intp), 0, False
    if n <= _PYTHON_BELOW:  # a plain loop beats numpy's per-call cost on short inputs
        taken: list[int] = []
        left = budget
        for i, cost in enumerate(tokens.tolist()):
            if cost <= left:
                taken.append(i)
                left -= cost
        return np.asarray(taken, dtype=np.intp), budget - left, len(taken) < n
    pieces: list[NDArray[np.intp]] = []
    remaining = budget
    pos = 0
    truncated = False
    while pos < n:
        csum = np.cumsum(tokens[pos:])
        k = int(np.searchsorted(csum, remaining, side="right"))
        if k:
            pieces.append(np.arange(pos, pos + k, dtype=np.intp))
            remaining -= int(csum[k - 1])
            pos += k
        if pos >= n:
            break
        truncated = True
        fits = np.flatnonzero(tokens[pos:] <= remaining)
        if fits.shape[0] == 0:
            break
        pos += int(fits[0])
    if pos < n:
        truncated = True
    chosen = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.intp)
    return chosen, budget - remaining, truncated


def pack_rows(
    tokens: NDArray[np.int64],
    widths: NDArray[np.int64],
    budgets: NDArray[np.int64],
    limits: NDArray[np.int64],
    least: NDArray[np.int64] | None = None,
) -> tuple[NDArray[np.bool_], NDArray[np.int64], NDArray[np.int64]]:
    """:func:`pack_sequential` for many candidate lists at once, one per row.

    Row ``r`` holds ``widths[r]`` candidates (in score order) in its first columns; each row
    is packed greedily under ``budgets[r]``, taking at most ``limits[r]`` candidates.
    Every round takes, in every row still packing, the run of consecutive candidates that
    starts at the next one that fits; a row stops when nothing after it fits or its limit
    is reached. Rounds are as many as a row's most skip points (usually 1 to 4).

    Args:
        tokens: ``(rows, width)`` token costs (non-negative); columns past a row's width are
            ignored.
        widths: Candidates per row.
        budgets: Token budget per row.
        limits: Most candidates taken per row.
        least: A lower bound of each row's token costs, if known (a row whose budget left
            is below it stops early).

    Returns:
        ``(taken, counts, left)``: the taken cells, the number taken and the budget left,
        per row.

    Runtime complexity: O(rows * width) numpy work per round; no per-candidate Python loop.
    """
    rows, width = tokens.shape
    taken = np.zeros((rows, width), dtype=np.bool_)
    left = budgets.astype(np.int64, copy=True)
    counts = np.zeros(rows, dtype=np.int64)
    pos = np.zeros(rows, dtype=np.int64)
    active = np.flatnonzero((widths > 0) & (limits > 0))
    while active.shape[0]:
        first = int(pos[active].min())  # no row packs before its position: skip those columns
        cols = np.arange(first, width, dtype=np.int64)
        tok = tokens[active, first:]
        room = left[active][:, None]
        inside = (cols >= pos[active][:, None]) & (cols < widths[active][:, None])
        fits = inside & (tok <= room)
        found = fits.any(axis=1)
        if not found.all():
            active, tok, room, inside, fits = (
                active[found],
                tok[found],
                room[found],
                inside[found],
                fits[found],
            )
            if not active.shape[0]:
                break
        start = fits.argmax(axis=1)  # relative to `first`
        inside &= cols >= (start + first)[:, None]
        run = np.cumsum(np.where(inside, tok, 0), axis=1)
        inside &= run <= room
        length = np.minimum(inside.sum(axis=1), limits[active] - counts[active])
        inside &= cols < (start + first + length)[:, None]
        taken[active, first:] |= inside
        left[active] -= np.take_along_axis(run, (start + length - 1)[:, None], axis=1)[:, 0]
        counts[active] += length
        pos[active] = start + first + length
        go_on = (counts[active] < limits[active]) & (pos[active] < widths[active])
        if least is not None:
            go_on &= left[active] >= least[active]
        active = active[go_on]
    return taken, counts, left
