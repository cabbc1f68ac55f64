"""Testing: doubles users need too.

Scripted and failing LLMs and embedders, a scripted pressure source, ``capture_events``.
Nothing here imports the engine, so a host's own tests can use the doubles against any
engine build; retrieval-quality measurement (recall@k, MRR on a labeled set) drives an
engine and lives in :mod:`f09_memory.evaluation`.

Modules: ``doubles``.
"""

from f09_memory.testing.doubles import (
    FailingEmbedder,
    FailingLLM,
    FakeEmbedder,
    ScriptedLLM,
    ScriptedPressure,
    capture_events,
)

__all__ = [
    "FailingEmbedder",
    "FailingLLM",
    "FakeEmbedder",
    "ScriptedLLM",
    "ScriptedPressure",
    "capture_events",
]
