"""The paraphrase retrieval set (tests/data/paraphrase_retrieval.json): its shape, the rule
that a query shares no content word with its answers, and MiniLM's recall@5 on it.

The recall figures beside the hashing embedder's are reported by
``benchmarks/bench_semantic.py``; here MiniLM's is asserted (issue target >= 0.85) whenever
``sentence-transformers`` is installed (the ``minilm`` fixture fails, never skips, when the
library is there but the model does not load).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from f09_memory import MemoryEngine, Strategy
from f09_memory.evaluation import evaluate_retrieval

SET = Path(__file__).parents[1] / "data" / "paraphrase_retrieval.json"
MINILM_RECALL_AT_5 = 0.85

STOPWORDS = frozenset("""
a about above after again all am an and any are as at be because been before being below
beside between both but by can could did do does doing don down during each few for from had
has have having he her here hers him his how i if in into is it its just me more most my no
nor not now of off on once one only or other our out over own same she should so some such
than that the their them then there these they this those through to too under until up upon
very was we were what when where which while who whom why will with would you your
""".split())


def content_words(text: str) -> set[str]:
    """Lowercase words minus stop words, with the 5-letter stem of every word of 4+ letters."""
    words = [w for w in re.findall(r"[a-z]+", text.lower().replace("'s", ""))
             if w not in STOPWORDS]
    return set(words) | {w[:5] for w in words if len(w) >= 4}


def load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SET.read_text())
    return data


def test_set_has_at_least_50_labelled_queries_on_known_memories() -> None:
    data = load()
    assert len(data["queries"]) >= 50
    for q in data["queries"]:
        memories = data["agents"][q["agent"]]
        assert q["relevant"], q
        assert all(0 <= i < len(memories) for i in q["relevant"]), q


def test_no_query_shares_a_content_word_with_its_answers() -> None:
    data = load()
    shared = {}
    for q in data["queries"]:
        mine = content_words(q["query"])
        for i in q["relevant"]:
            common = mine & content_words(data["agents"][q["agent"]][i]["content"])
            if common:
                shared[q["query"]] = sorted(common)
    assert {} == shared


def test_minilm_recall_at_5_on_paraphrases_meets_the_target(minilm: Any) -> None:
    report = evaluate_retrieval(load(), "MiniLM", lambda: MemoryEngine(embedder=minilm),
                                strategy=Strategy.SEMANTIC)
    hashing = evaluate_retrieval(load(), "hashing", MemoryEngine, strategy=Strategy.SEMANTIC)
    assert report.recall_at_k >= MINILM_RECALL_AT_5, (report, hashing)
    assert report.recall_at_k > hashing.recall_at_k
