"""Testing: doubles users need too.

Scripted and failing LLMs and embedders, a scripted pressure source, ``capture_events``.

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
