"""Testing: doubles users need too.

Scripted and failing LLMs and embedders, a scripted pressure source, ``capture_events``,
and an OpenAI-compatible embeddings server on loopback with scripted faults
(``EmbeddingServer``, ``fault_schedule``) for testing endpoint embedders.
Nothing here imports the engine, so a host's own tests can use the doubles against any
engine build; retrieval-quality measurement (recall@k, MRR on a labeled set) drives an
engine and lives in :mod:`f09_memory.evaluation`.

Modules: ``doubles``, ``embedding_server``.
"""

from f09_memory.testing.doubles import (
    FailingEmbedder,
    FailingLLM,
    FakeEmbedder,
    ScriptedLLM,
    ScriptedPressure,
    capture_events,
)
from f09_memory.testing.embedding_server import (
    DEFAULT_FAULTS,
    EmbeddingServer,
    Fault,
    fault_schedule,
)

__all__ = [
    "DEFAULT_FAULTS",
    "EmbeddingServer",
    "FailingEmbedder",
    "FailingLLM",
    "FakeEmbedder",
    "Fault",
    "ScriptedLLM",
    "ScriptedPressure",
    "capture_events",
    "fault_schedule",
]
