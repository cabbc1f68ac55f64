"""Integrations: the Concordia bank (``f09_memory.integrations.concordia``) at 2,000 memories.

Issue 13 targets: ``retrieve_associative(k=10)`` p95 <= 0.6 ms at 2k memories, with the same
top-10 as Concordia's own bank under cosine-only weights (checked here on every benchmark
query: the embedder gives distinct cosines), and ``retrieve_recent(10)`` <= 0.05 ms. The spec
bounds below are 2.5x the targets (a shared, noisy 2-core machine); the targets are the goals
printed beside them. Concordia's own bank is measured on the same memories and queries for
comparison (reported only). Both banks get a 384-d embedder that looks its vectors up, so the
figures are the banks' own work. Skipped without the ``[concordia]`` extra.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest
from targets import record, rounds, timings_ms

pytest.importorskip("concordia")

from concordia.associative_memory import basic_associative_memory as concordia_bank

from f09_memory.integrations.concordia import AssociativeMemoryBank

pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in Series.sort_values")

MEMORIES, DIM, QUERIES = 2_000, 384, 200
WORDS = [f"word{i}" for i in range(500)]


class LookupEmbedder:
    """Unit sums of per-word Gaussian vectors (seeded by crc32), cached per text."""

    def __init__(self) -> None:
        self._words: dict[str, np.ndarray] = {}
        self._texts: dict[str, np.ndarray] = {}

    def __call__(self, text: str) -> np.ndarray:
        vector = self._texts.get(text)
        if vector is None:
            v = np.zeros(DIM)
            for word in text.split():
                w = self._words.get(word)
                if w is None:
                    w = self._words[word] = np.random.default_rng(
                        zlib.crc32(word.encode())).standard_normal(DIM)
                v += w
            vector = self._texts[text] = v / np.linalg.norm(v)
        return vector


@pytest.fixture(scope="module")
def banks() -> tuple[Any, AssociativeMemoryBank, list[str]]:
    rng = np.random.default_rng(13)
    memories = [" ".join(rng.choice(WORDS, 12)) for _ in range(MEMORIES)]
    queries = [" ".join(rng.choice(WORDS, 4)) for _ in range(QUERIES)]
    embedder = LookupEmbedder()
    for text in memories + queries:
        embedder(text)
    theirs = concordia_bank.AssociativeMemoryBank(embedder)
    ours = AssociativeMemoryBank(embedder, embedder_dim=DIM)
    theirs.extend(memories)
    ours.extend(memories)
    assert MEMORIES == len(ours) == len(theirs)
    for query in queries:
        assert list(theirs.retrieve_associative(query, 10)) == ours.retrieve_associative(
            query, 10), "top-10 differs from Concordia's bank"
    return theirs, ours, queries


def cycling(queries: list[str]) -> Any:
    state = {"i": 0}

    def setup() -> tuple[tuple[str, int], dict[str, Any]]:
        state["i"] += 1
        return (queries[state["i"] % len(queries)], 10), {}

    return setup


def test_retrieve_associative_2k(benchmark: Any, banks: tuple[Any, Any, list[str]]) -> None:
    benchmark.group = "integrations"
    _, ours, queries = banks
    found = benchmark.pedantic(ours.retrieve_associative, setup=cycling(queries),
                               rounds=rounds(3_000, 600), warmup_rounds=50)
    assert 10 == len(found)
    ms = timings_ms(benchmark)
    record("concordia bank retrieve_associative k=10 2k, p50", np.percentile(ms, 50), "ms",
           spec=None, goal=None)
    record("concordia bank retrieve_associative k=10 2k, p95", np.percentile(ms, 95), "ms",
           spec=1.5, goal=0.6)


def test_concordias_own_bank_2k(benchmark: Any, banks: tuple[Any, Any, list[str]]) -> None:
    benchmark.group = "integrations"
    theirs, _, queries = banks
    benchmark.pedantic(theirs.retrieve_associative, setup=cycling(queries),
                       rounds=rounds(300, 60), warmup_rounds=5)
    ms = timings_ms(benchmark)
    record("Concordia's own bank retrieve_associative 2k, p50", np.percentile(ms, 50), "ms",
           spec=None, goal=None)
    record("Concordia's own bank retrieve_associative 2k, p95", np.percentile(ms, 95), "ms",
           spec=None, goal=None)


def test_retrieve_recent_10(benchmark: Any, banks: tuple[Any, Any, list[str]]) -> None:
    benchmark.group = "integrations"
    _, ours, _ = banks
    found = benchmark.pedantic(ours.retrieve_recent, args=(10,), rounds=rounds(5_000, 1_000),
                               warmup_rounds=50)
    assert 10 == len(found)
    ms = timings_ms(benchmark)
    record("concordia bank retrieve_recent(10) 2k, p95", np.percentile(ms, 95), "ms",
           spec=0.125, goal=0.05)
