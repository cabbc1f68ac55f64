import numpy as np
import pytest

from f09_memory.embedding import HashingEmbedder, NullEmbedder, embed_in_batches
from f09_memory.errors import (
    EmbeddingFailedError,
    EmbeddingUnavailableError,
    ErrorCode,
    InputInvalidError,
)


class Recording:
    """Returns row i = (i+1) * ones scaled; records the batch sizes it was called with."""

    def __init__(self, dim=4, result=None):
        self.dim = dim
        self.version = "recording"
        self.calls = []
        self.result = result

    def embed(self, texts):
        self.calls.append(list(texts))
        if self.result is not None:
            return self.result(texts)
        return np.full((len(texts), self.dim), 3.0, dtype=np.float32)


def test_provider_is_called_in_slices_of_batch_size_in_order():
    provider = Recording()
    texts = [f"t{i}" for i in range(7)]
    out = embed_in_batches(provider, texts, 3)
    assert provider.calls == [["t0", "t1", "t2"], ["t3", "t4", "t5"], ["t6"]]
    assert out.shape == (7, 4)
    assert np.float32 == out.dtype


def test_rows_are_normalized_and_zero_rows_stay_zero():
    def result(texts):
        rows = np.zeros((len(texts), 4), dtype=np.float64)
        rows[0] = [3.0, 4.0, 0.0, 0.0]
        return rows

    out = embed_in_batches(Recording(result=result), ["a", "b"], 8)
    assert np.allclose([0.6, 0.8, 0.0, 0.0], out[0])
    assert float(np.abs(out[1]).sum()) == 0.0


def test_matches_the_providers_own_normalized_output():
    emb = HashingEmbedder(64)
    texts = ["the smith's forge", "a guard at the gate", ""]
    assert np.allclose(emb.embed(texts), embed_in_batches(emb, texts, 2), atol=1e-7)


def test_no_texts_returns_empty_rows_without_calling_provider():
    provider = Recording(dim=5)
    out = embed_in_batches(provider, [], 4)
    assert out.shape == (0, 5)
    assert provider.calls == []


def test_raising_provider_becomes_embedding_failed_with_cause():
    class Boom:
        dim = 4
        version = "boom"

        def embed(self, texts):
            raise RuntimeError("model crashed")

    with pytest.raises(EmbeddingFailedError) as info:
        embed_in_batches(Boom(), ["a"], 2)
    assert info.value.code == ErrorCode.MEMORY_EMBEDDING_FAILED
    assert isinstance(info.value.__cause__, RuntimeError)
    assert "model crashed" in info.value.message


def test_engine_errors_from_the_provider_pass_through_unchanged():
    with pytest.raises(EmbeddingUnavailableError):
        embed_in_batches(NullEmbedder(4), ["a"], 2)


@pytest.mark.parametrize(
    "result",
    [
        lambda texts: np.zeros((len(texts) + 1, 4), dtype=np.float32),  # too many rows
        lambda texts: np.zeros((len(texts), 3), dtype=np.float32),  # wrong dim
        lambda texts: np.zeros(len(texts) * 4, dtype=np.float32),  # 1-D
        lambda texts: [[0.0] * 4 for _ in texts],  # not an ndarray
        lambda texts: np.full((len(texts), 4), np.nan, dtype=np.float32),  # NaN
        lambda texts: np.full((len(texts), 4), np.inf, dtype=np.float32),  # inf
        lambda texts: np.full((len(texts), 4), "x"),  # strings
    ],
)
def test_malformed_provider_result_becomes_embedding_failed(result):
    with pytest.raises(EmbeddingFailedError):
        embed_in_batches(Recording(result=result), ["a", "b"], 8)


@pytest.mark.parametrize("batch_size", [0, -1, 1.5, True])
def test_bad_batch_size_raises_input_invalid(batch_size):
    with pytest.raises(InputInvalidError):
        embed_in_batches(Recording(), ["a"], batch_size)


def test_non_str_texts_raise_input_invalid_before_calling_provider():
    provider = Recording()
    with pytest.raises(InputInvalidError):
        embed_in_batches(provider, ["a", 1], 4)
    assert provider.calls == []
