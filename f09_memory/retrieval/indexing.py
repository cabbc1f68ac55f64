"""Vector indexes built and migrated in tick slices (the tick's index step).

An agent needs an index once its embedded records exceed :func:`index_threshold`; its kind
follows ``exact_index_max`` (:class:`~f09_memory.vector_index.ExactIndex` up to it,
:class:`~f09_memory.vector_index.HnswIndex` above). A build inserts keys in ascending order,
``tick_costs.index_insert`` (HNSW) or ``index_insert_exact`` units per vector, serves no
query until complete, and then replaces the old index.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from operator import attrgetter, is_not

import numpy as np
from numpy.typing import NDArray

from f09_memory.config.config import MemoryConfig
from f09_memory.store.agent import AgentMemory
from f09_memory.vector_index.hnsw import HnswIndex
from f09_memory.vector_index.select import make_index

__all__ = ["IndexBuilder", "index_threshold", "slice_in_key_order"]

_INDEX_BUILD = attrgetter("index_build")


def index_threshold(config: MemoryConfig) -> int:
    """The embedded records above which an agent gets a vector index.

    ``semantic_preselect_threshold``; with ``semantic_preselect_min_ratio`` set (not 0), only
    an HNSW index can preselect (``retrieval.preselect.preselection_depth``), so no index is
    built below ``exact_index_max``: an exact one would never be read.
    """
    threshold = config.semantic_preselect_threshold
    if config.semantic_preselect_min_ratio:
        return max(threshold, config.exact_index_max)
    return threshold


def slice_in_key_order(
    am: AgentMemory, mask: NDArray[np.bool_], budget: int | None, used: int, cost: int
) -> NDArray[np.intp] | None:
    """Slots where ``mask`` holds, in key order, as many as the budget left pays for.

    Each slot costs ``cost`` units; ``None`` when the budget is already spent. The step's
    first slot (``used == 0``) is taken whenever any budget is left, even if it costs more
    (a real model's text can cost more than a whole small tick): the step makes progress
    and overshoots by at most that one item, as every tick step does.
    """
    slots = np.flatnonzero(mask)
    slots = slots[np.argsort(am.key[slots], kind="stable")]
    if budget is None:
        return slots
    room = (budget - used) // cost
    if room <= 0 and used == 0 and budget > 0:
        room = 1
    return None if room <= 0 else slots[:room]


class IndexBuilder:
    """Builds and migrates every agent's vector index in budgeted tick slices.

    Args:
        config: Thresholds, index parameters and ``tick_costs``.
        seed: The engine seed (HNSW levels).
    """

    def __init__(self, config: MemoryConfig, seed: int) -> None:
        self.config = config
        self.seed = seed

    def candidates(self, agents: Sequence[AgentMemory],
                         live: NDArray[np.int64]) -> list[AgentMemory]:
        """The agents that may have index work.

        Those with more live records (``live``, aligned with ``agents``) than
        :func:`index_threshold`, or with a build in progress.
        """
        n = len(agents)
        building = np.fromiter(map(is_not, map(_INDEX_BUILD, agents), repeat(None)), bool, n)
        mask = building | (live > index_threshold(self.config))
        return [agents[i] for i in np.flatnonzero(mask).tolist()]

    def backlog(self, candidates: Sequence[AgentMemory]) -> int:
        """Vectors still to insert into indexes being built or due to be built."""
        cfg = self.config
        threshold = index_threshold(cfg)
        total = 0
        for am in candidates:
            hi = am.hi
            count = int(am.embedded[:hi].sum())
            if am.index_build is not None:
                total += int(np.count_nonzero(am.embedded[:hi]
                                              & (am.key[:hi] >= am.index_cursor)))
            elif count > threshold and am.vectors is not None and not (
                    am.index is not None
                    and isinstance(am.index, HnswIndex) == (count > cfg.exact_index_max)):
                total += count
        return total

    def slice(self, candidates: Sequence[AgentMemory], budget: int | None) -> int:
        """Build or migrate agent indexes in key order within ``budget``; returns units used.

        An agent needs an index once its embedded records exceed :func:`index_threshold`; its
        kind (exact or HNSW) follows ``exact_index_max``.
        A build in progress serves no query until complete; then it replaces the old index.
        Only ``candidates`` (:meth:`candidates`) are looked at.
        """
        cfg = self.config
        costs = cfg.tick_costs
        threshold = index_threshold(cfg)
        used = 0
        for am in candidates:
            hi = am.hi
            count = int(am.embedded[:hi].sum())
            if count <= threshold or am.vectors is None:
                continue
            want_hnsw = count > cfg.exact_index_max
            if am.index_build is None:
                if am.index is not None and isinstance(am.index, HnswIndex) == want_hnsw:
                    continue
                am.start_index_build(make_index(
                    count, am.vectors.shape[1], exact_max=cfg.exact_index_max, m=cfg.hnsw_m,
                    ef_construction=cfg.hnsw_ef_construction, ef=cfg.hnsw_ef,
                    seed=self.seed, quantum=cfg.score_quantum))
            cost = (costs.index_insert if isinstance(am.index_build, HnswIndex)
                    else costs.index_insert_exact)
            slots = slice_in_key_order(
                am, am.embedded[:hi] & (am.key[:hi] >= am.index_cursor), budget, used, cost)
            if slots is None:
                break
            if slots.shape[0]:
                am.add_to_index_build(am.key[slots], am.vectors[slots])
                used += cost * int(slots.shape[0])
            remaining = np.count_nonzero(am.embedded[:hi] & (am.key[:hi] >= am.index_cursor))
            if remaining == 0:
                am.finish_index_build()
        return used
