import pytest

from f09_memory.embedding import HashingEmbedder, NullEmbedder, is_available
from f09_memory.errors import ConfigInvalidError, EmbeddingUnavailableError, ErrorCode
from f09_memory.protocols import EmbeddingProvider


def test_null_embedder_is_a_provider_that_is_not_available():
    null = NullEmbedder(256)
    assert isinstance(null, EmbeddingProvider)
    assert null.available is False
    assert null.dim == 256
    assert null.version == "null"


def test_embed_raises_unavailable_telling_how_to_configure():
    with pytest.raises(EmbeddingUnavailableError) as info:
        NullEmbedder().embed(["hello"])
    assert info.value.code == ErrorCode.MEMORY_EMBEDDING_UNAVAILABLE
    assert "HashingEmbedder" in info.value.message
    assert "f09-memory[embeddings]" in info.value.message


def test_is_available_false_for_none_and_null_provider():
    assert is_available(None) is False
    assert is_available(NullEmbedder()) is False


def test_is_available_true_for_real_providers_and_ones_without_the_attribute():
    class Plain:
        dim = 2
        version = "plain"

        def embed(self, texts):
            raise NotImplementedError

    assert is_available(HashingEmbedder()) is True
    assert is_available(Plain()) is True


@pytest.mark.parametrize("dim", [0, -1, 2.0, True])
def test_bad_dim_raises_config_invalid(dim):
    with pytest.raises(ConfigInvalidError):
        NullEmbedder(dim)
