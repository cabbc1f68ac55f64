"""Embedding (index 6): providers that turn texts into vectors, and safe batching.

Modules: ``hashing`` (HashingEmbedder: deterministic signed feature hashing, no dependencies),
``null`` (NullEmbedder, the explicit "no embeddings" provider, and ``is_available``),
``sentence_transformers`` (SentenceTransformerEmbedder, the optional ``[embeddings]`` extra,
offline-capable), ``batching`` (embed_in_batches: slices, result checks, L2 normalization,
error translation to MEMORY_EMBEDDING_FAILED), ``calibrate`` (calibrate_embedder: an
embedder's cost per text in the tick's work units). The provider contract itself,
``EmbeddingProvider``, lives in :mod:`f09_memory.protocols`.

``process`` (ProcessEmbedder) runs any provider in a child process of its own, so a real
model never holds the host's GIL nor fills its garbage collector (``_child``: that process's
entry point).

``openai_compatible`` (OpenAICompatibleEmbedder, ``embeddings_url``) calls an
OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Ollama, vLLM, LM Studio, llama.cpp)
over httpx, the optional ``[openai]`` extra.
"""

from f09_memory.embedding.batching import check_texts, embed_in_batches, l2_normalize_rows
from f09_memory.embedding.calibrate import EmbedderCalibration, calibrate_embedder, sample_texts
from f09_memory.embedding.hashing import HashingEmbedder
from f09_memory.embedding.null import NullEmbedder, is_available
from f09_memory.embedding.openai_compatible import OpenAICompatibleEmbedder, embeddings_url
from f09_memory.embedding.process import ProcessEmbedder
from f09_memory.embedding.sentence_transformers import (
    DEFAULT_MODEL,
    SentenceTransformerEmbedder,
    bundled_model_path,
    resolve_model,
)

__all__ = [
    "DEFAULT_MODEL",
    "EmbedderCalibration",
    "HashingEmbedder",
    "NullEmbedder",
    "OpenAICompatibleEmbedder",
    "ProcessEmbedder",
    "SentenceTransformerEmbedder",
    "bundled_model_path",
    "calibrate_embedder",
    "check_texts",
    "embed_in_batches",
    "embeddings_url",
    "is_available",
    "l2_normalize_rows",
    "resolve_model",
    "sample_texts",
]
