"""Embedding throughput (index 6): the hashing embedder on short game-log sentences."""

import numpy as np
from targets import record

from f09_memory.embedding import HashingEmbedder, embed_in_batches

_VOCABULARY = (
    "the a guard smith merchant mara tavern keeper north gate market forge sword iron grain "
    "sack gold coin traded sold bought shouted whispered fought fled rain night harbour boat "
    "gull captain thief stole watched quiet old young angry happy afraid village road river "
    "bridge tower king queen soldier arrow bow horse cart wheel bread ale fire smoke storm "
    "wolf forest cave dragon map letter secret promise debt tax noble beggar priest temple"
)
_WORDS = _VOCABULARY.split()


def short_sentences(n: int, seed: int = 0) -> list[str]:
    """Return ``n`` sentences of 8-20 words drawn from a small game vocabulary."""
    rng = np.random.default_rng(seed)
    words = np.array(_WORDS)
    out = []
    for _ in range(n):
        count = int(rng.integers(8, 21))
        out.append(" ".join(words[rng.integers(0, len(words), size=count)].tolist()) + ".")
    return out


def _report(benchmark, texts: int, label: str) -> None:
    mean = benchmark.stats.stats.mean
    rate = texts / mean
    benchmark.extra_info["texts_per_s"] = round(rate)
    print(f"\n[bench] {label}: {rate:,.0f} texts/s (mean {mean * 1e3:.2f} ms / {texts} texts)")
    record(label, rate, "/s", spec=None, goal=20_000, higher_is_better=True)


def test_hashing_embedder_1000_short_sentences_warm_cache(benchmark):
    benchmark.group = "embedding"
    embedder = HashingEmbedder(384)
    texts = short_sentences(1000)
    embedder.embed(texts)  # warm the word/bigram cache, as in a running game
    out = benchmark(embedder.embed, texts)
    assert out.shape == (1000, 384)
    _report(benchmark, len(texts), "HashingEmbedder warm")


def test_hashing_embedder_1000_short_sentences_cold_cache(benchmark):
    benchmark.group = "embedding"
    texts = short_sentences(1000, seed=1)

    def setup():
        return (HashingEmbedder(384), texts), {}

    def run(embedder, batch):
        return embedder.embed(batch)

    out = benchmark.pedantic(run, setup=setup, rounds=20, iterations=1)
    assert out.shape == (1000, 384)
    _report(benchmark, len(texts), "HashingEmbedder cold")


def test_embed_in_batches_1000_short_sentences(benchmark):
    benchmark.group = "embedding"
    embedder = HashingEmbedder(384)
    texts = short_sentences(1000, seed=2)
    embedder.embed(texts)
    out = benchmark(embed_in_batches, embedder, texts, 64)
    assert out.shape == (1000, 384)
    _report(benchmark, len(texts), "embed_in_batches(batch 64)")
