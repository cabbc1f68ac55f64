from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine


@pytest.fixture
def make_engine() -> Callable[..., MemoryEngine]:
    def make(seed: int = 0, **config: object) -> MemoryEngine:
        return MemoryEngine(MemoryConfig(**config), seed=seed)

    return make


@pytest.fixture
def engine(make_engine: Callable[..., MemoryEngine]) -> MemoryEngine:
    return make_engine()


@pytest.fixture(scope="session")
def minilm() -> Iterator[Any]:
    """The real all-MiniLM-L6-v2 embedder, loaded once per session, offline.

    Skips only when ``sentence_transformers`` cannot be imported at all. With the library
    installed (the ``[embeddings]`` extra), a model that does not load is an error: a skip
    there would hide a broken install.
    """
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("sentence-transformers is not installed (the [embeddings] extra)")
    from f09_memory.embedding import SentenceTransformerEmbedder

    saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ.update({k: "1" for k in saved})
    try:
        yield SentenceTransformerEmbedder()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
