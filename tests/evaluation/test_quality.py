from __future__ import annotations

from f09_memory import MemoryEngine, Strategy
from f09_memory.evaluation import QualityReport, evaluate_retrieval, mrr, recall_at_k


def test_recall_at_k_counts_relevant_ids_in_the_first_k() -> None:
    assert 0.5 == recall_at_k(["a", "b", "c"], {"b", "z"}, 2)
    assert 0.0 == recall_at_k(["a"], set(), 5)


def test_mrr_is_the_reciprocal_rank_of_the_first_hit() -> None:
    assert 0.5 == mrr(["a", "b", "c"], {"b", "c"})
    assert 0.0 == mrr(["a"], {"z"})


def test_evaluate_retrieval_reports_on_a_tiny_labeled_set() -> None:
    labeled = {
        "agents": {"npc": [
            {"content": "The smith sells iron nails.", "importance": 0.2, "minute": 1},
            {"content": "It rained at the farm.", "importance": 0.2, "minute": 2},
        ]},
        "queries": [{"agent": "npc", "query": "iron nails smith", "relevant": [0]}],
    }
    report = evaluate_retrieval(labeled, "tiny", MemoryEngine, strategy=Strategy.SEMANTIC)
    assert isinstance(report, QualityReport)
    assert "tiny" == report.name
    assert 1.0 == report.recall_at_k
