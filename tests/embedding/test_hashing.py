import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from f09_memory.embedding import HashingEmbedder
from f09_memory.errors import ConfigInvalidError, InputInvalidError
from f09_memory.protocols import EmbeddingProvider

TEXTS = [
    "The smith's forge burned all night near the north gate.",
    "Mara traded three iron swords for a sack of grain at the market.",
    "A guard shouted at the tavern keeper about unpaid taxes.",
    "",
    "!!! ???",
    "Rain fell on the quiet harbour while gulls circled the fishing boats.",
]

REPO_ROOT = Path(__file__).resolve().parents[2]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def test_embed_returns_float32_rows_of_dim():
    out = HashingEmbedder(128).embed(TEXTS)
    assert (len(TEXTS), 128) == out.shape
    assert np.float32 == out.dtype


def test_empty_sequence_returns_zero_by_dim_array():
    out = HashingEmbedder(64).embed([])
    assert out.shape == (0, 64)
    assert np.float32 == out.dtype


def test_rows_are_unit_length_and_wordless_text_is_zero_vector():
    out = HashingEmbedder().embed(TEXTS)
    norms = np.linalg.norm(out, axis=1)
    assert np.allclose(norms[[0, 1, 2, 5]], 1.0, atol=1e-6)
    assert float(np.abs(out[3]).sum()) == 0.0
    assert float(np.abs(out[4]).sum()) == 0.0


def test_two_fresh_instances_give_identical_bytes():
    a = HashingEmbedder(384, seed=7).embed(TEXTS)
    b = HashingEmbedder(384, seed=7).embed(TEXTS)
    assert a.tobytes() == b.tobytes()


def test_vectors_identical_across_processes_with_different_hash_seeds():
    script = (
        "import hashlib, json, sys\n"
        "from f09_memory.embedding import HashingEmbedder\n"
        "texts = json.loads(sys.stdin.read())\n"
        "print(hashlib.sha256(HashingEmbedder(384, seed=3).embed(texts).tobytes()).hexdigest())\n"
    )
    import json

    expected = hashlib.sha256(HashingEmbedder(384, seed=3).embed(TEXTS).tobytes()).hexdigest()
    for hash_seed in ("1", "987654"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=str(REPO_ROOT))
        done = subprocess.run(
            [sys.executable, "-c", script],
            input=json.dumps(TEXTS),
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=60,
        )
        assert expected == done.stdout.strip()


def test_embedding_a_text_alone_equals_embedding_it_in_a_batch():
    emb = HashingEmbedder(256)
    batch = emb.embed(TEXTS)
    for i, text in enumerate(TEXTS):
        assert batch[i].tobytes() == emb.embed([text])[0].tobytes()


def test_large_batches_are_chunked_without_changing_vectors():
    rng = np.random.default_rng(5)
    words = np.array(["the", "smith", "guard", "gate", "market", "forge", "sword", "rain", "king"])
    texts = [" ".join(words[rng.integers(0, len(words), size=12)]) for _ in range(5000)]
    whole = HashingEmbedder(128).embed(texts)
    embedder = HashingEmbedder(128)
    pieces = np.vstack([embedder.embed(texts[i : i + 700]) for i in range(0, 5000, 700)])
    assert whole.tobytes() == pieces.tobytes()


def test_cache_eviction_does_not_change_vectors():
    small = HashingEmbedder(256, cache_max=2)
    big = HashingEmbedder(256)
    for _ in range(2):
        assert big.embed(TEXTS).tobytes() == small.embed(TEXTS).tobytes()


def test_texts_seen_before_embed_as_they_did_the_first_time():
    """Repeated texts are not tokenized again (their word ids are kept): a batch of
    repeats, a batch mixing repeats and new texts, and a text table that empties itself all
    give the vectors of a fresh embedder, text by text."""
    rng = np.random.default_rng(3)
    words = np.array("the well market smith's forge ale Ale ALE traded 4111 é".split())
    texts = [" ".join(words[rng.integers(0, len(words), size=6)]) for _ in range(40)]
    batches = [texts[:10], texts[:10], texts[5:25] + texts[:3], texts, ["", "...", texts[0]]]
    for embedder in (HashingEmbedder(64), HashingEmbedder(64, cache_max=8)):
        for batch in batches:
            fresh = np.vstack([HashingEmbedder(64).embed([t]) for t in batch])
            assert embedder.embed(batch).tobytes() == fresh.tobytes()
        assert len(embedder._texts) <= embedder._texts_max


def test_possessive_plural_and_bare_name_land_near_each_other():
    emb = HashingEmbedder()
    smith, smiths, possessive, guard = emb.embed(["smith", "smiths", "Smith's", "guard"])
    assert smith.tobytes() == possessive.tobytes()
    assert _cos(smith, smiths) > 0.15
    assert _cos(smith, smiths) > abs(_cos(smith, guard))


def test_trade_and_trading_share_a_stem():
    emb = HashingEmbedder()
    trade, trading, traded, harbour = emb.embed(["trade", "trading", "traded", "harbour"])
    assert _cos(trade, trading) > 0.15
    assert _cos(trade, traded) > 0.15
    assert _cos(trade, trading) > abs(_cos(trade, harbour))


def test_similar_sentences_are_closer_than_unrelated_ones():
    emb = HashingEmbedder()
    a, b, c = emb.embed(
        [
            "Mara traded iron swords at the market",
            "Mara was trading swords at the market today",
            "Rain fell on the quiet harbour",
        ]
    )
    assert _cos(a, b) > 0.4
    assert _cos(a, b) > _cos(a, c) + 0.2


def test_seed_changes_vectors_and_version():
    a = HashingEmbedder(384, seed=0)
    b = HashingEmbedder(384, seed=1)
    assert a.version == "hashing-v1-d384-s0"
    assert b.version == "hashing-v1-d384-s1"
    assert a.embed(TEXTS[:1]).tobytes() != b.embed(TEXTS[:1]).tobytes()


def test_tokens_are_lowercase_words_without_possessive():
    assert HashingEmbedder().tokens("The Smith's FORGE, 42!") == ["the", "smith", "forge", "42"]


def test_is_an_embedding_provider():
    emb = HashingEmbedder()
    assert isinstance(emb, EmbeddingProvider)
    assert emb.available is True
    assert emb.dim == 384


@pytest.mark.parametrize("bad", [["ok", 3], ["ok", None], [b"bytes"]])
def test_non_str_text_raises_input_invalid(bad):
    with pytest.raises(InputInvalidError) as info:
        HashingEmbedder().embed(bad)
    assert "texts[" in info.value.message


@pytest.mark.parametrize("bad", ["a bare string", 42, None, {"a": 1}])
def test_non_sequence_texts_raise_input_invalid(bad):
    with pytest.raises(InputInvalidError):
        HashingEmbedder().embed(bad)


@pytest.mark.parametrize(
    "kwargs", [{"dim": 1}, {"dim": 0}, {"dim": 3.5}, {"seed": -1}, {"dim": True}]
)
def test_bad_settings_raise_config_invalid(kwargs):
    with pytest.raises(ConfigInvalidError):
        HashingEmbedder(**kwargs)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet="ab cd's-ef 9\u00e9", max_size=30), min_size=1, max_size=8))
def test_any_text_alone_embeds_as_in_a_batch(texts: list[str]) -> None:
    """One text takes the single-row path (no row offsets, a scalar scale): the same bytes
    as its row of a batch, for texts of no, one or many tokens."""
    emb = HashingEmbedder(64)
    batch = emb.embed(texts)
    for i, text in enumerate(texts):
        assert batch[i].tobytes() == HashingEmbedder(64).embed([text])[0].tobytes()
