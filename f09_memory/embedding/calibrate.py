"""Measure what an embedder costs per text on this machine, in the tick's work units.

``tick`` charges each text it (re-)embeds ``tick_costs.embed`` work units, or, when that is
not set, the provider's own ``tick_cost_units`` (the hashing embedder declares its own).
A real model costs orders of magnitude more than the hashing embedder, so a host measures
it once on its machine and passes the result::

    result = calibrate_embedder(SentenceTransformerEmbedder())
    config = MemoryConfig(tick_costs={"embed": result.units_per_text})

``f09-memory calibrate-embedder`` does the same from the command line. The measurement uses
the wall clock (it is a tool, not engine state); the engine then counts units only, so ticks
stay deterministic.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from f09_memory.embedding.batching import embed_in_batches
from f09_memory.errors import InputInvalidError
from f09_memory.protocols import EmbeddingProvider

__all__ = ["EmbedderCalibration", "calibrate_embedder", "sample_texts"]

_SUBJECTS = ("The smith", "A guard", "The baker", "Old Tom", "Lysa", "A stranger", "The miller")
_VERBS = ("traded", "argued about", "found", "lost", "hid", "sold", "asked about")
_OBJECTS = ("a sword", "iron nails", "the harvest", "a letter", "gold coins", "the old well",
            "fresh bread", "a horse")
_PLACES = ("at the market", "near the gate", "by the river", "in the tavern", "at dawn",
           "after the storm", "behind the mill")


def sample_texts(n: int = 256) -> list[str]:
    """``n`` distinct, deterministic game-like sentences (what an NPC would remember)."""
    out = []
    for i in range(n):
        out.append(f"{_SUBJECTS[i % 7]} {_VERBS[(i // 7) % 7]} {_OBJECTS[(i // 49) % 8]} "
                   f"{_PLACES[(i * 3) % 7]} on day {i}.")
    return out


class EmbedderCalibration(NamedTuple):
    """What :func:`calibrate_embedder` measured.

    Attributes:
        us_per_text: Wall µs per text, best of the rounds, embedding in batches.
        units_per_text: The ``tick_costs.embed`` setting for this machine:
            ``ceil(us_per_text * work_units_per_ms / 1000)``.
        texts: Texts embedded per round.
        batch_size: Texts per ``embed`` call.
    """

    us_per_text: float
    units_per_text: int
    texts: int
    batch_size: int


def calibrate_embedder(
    provider: EmbeddingProvider,
    *,
    texts: Sequence[str] | None = None,
    batch_size: int = 64,
    rounds: int = 3,
    work_units_per_ms: int = 200_000,
    clock: Callable[[], float] = time.perf_counter,
) -> EmbedderCalibration:
    """Time ``provider`` on ``texts`` and return its cost per text in work units.

    One warm-up call is made first (model loading and caches are not counted).

    Args:
        provider: The embedder to measure.
        texts: What to embed (default: :func:`sample_texts`).
        batch_size: Texts per call, as the engine batches them (``embedding_batch_size``).
        rounds: Timed passes over ``texts``; the fastest counts.
        work_units_per_ms: The engine's ``work_units_per_ms``.
        clock: Seconds as a float (injectable for tests).

    Returns:
        The measurement and the setting to use.

    Raises:
        InputInvalidError: ``provider`` is not an EmbeddingProvider, or a bad argument.
        EmbeddingFailedError: The provider failed (``MEMORY_EMBEDDING_FAILED``).
    """
    if not isinstance(provider, EmbeddingProvider):
        raise InputInvalidError("provider must have dim, version and embed(texts) "
                                "(EmbeddingProvider)", details={"field": "provider"})
    sample = list(sample_texts() if texts is None else texts)
    if not sample or not all(isinstance(t, str) for t in sample):
        raise InputInvalidError("texts must be a non-empty list of strings",
                                details={"field": "texts"})
    for name, value in (("batch_size", batch_size), ("rounds", rounds),
                        ("work_units_per_ms", work_units_per_ms)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputInvalidError(f"{name} must be a positive integer",
                                    details={"field": name})
    embed_in_batches(provider, sample[:batch_size], batch_size)  # warm-up
    best = math.inf
    for _ in range(rounds):
        start = clock()
        embed_in_batches(provider, sample, batch_size)
        best = min(best, clock() - start)
    us = max(0.0, best) * 1e6 / len(sample)
    units = max(1, math.ceil(us * work_units_per_ms / 1000.0))
    return EmbedderCalibration(us, units, len(sample), batch_size)
