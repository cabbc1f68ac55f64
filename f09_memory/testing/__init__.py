"""Testing: doubles users need too.

Scripted and failing LLMs and embedders, a scripted pressure source, ``capture_events``;
``quality`` measures recall@k and MRR on a hand-labeled retrieval set.

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
from f09_memory.testing.quality import (
    QualityReport,
    evaluate_retrieval,
    mrr,
    pure_weights_config,
    recall_at_k,
)

__all__ = [
    "FailingEmbedder",
    "QualityReport",
    "FailingLLM",
    "FakeEmbedder",
    "ScriptedLLM",
    "ScriptedPressure",
    "capture_events",
    "evaluate_retrieval",
    "mrr",
    "pure_weights_config",
    "recall_at_k",
]
