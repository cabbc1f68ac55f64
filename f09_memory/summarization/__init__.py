"""Summarization (index 10): min-heap scheduler, two-phase LLM pipeline, heuristic fallback.

Modules: ``scheduler`` (eligible_slots, CandidateHeap, select_batch: spec section 8 step 1
and the section 12 min-heap), ``sources`` (SourceEvent snapshots, entity and key-term
extraction), ``grouping`` (group_batches: step 2), ``prompt`` (the versioned template in
``resources/summary_prompt_v1.md``, build_summary_prompt: step 3), ``heuristic`` (the local
summarizer, coverage, the garbage validator: step 4 fallback), ``pipeline`` (Summarizer:
the task lifecycle), ``judging`` (Judge, PendingTask: a finished task's SummaryOutcome,
through the quality gate), ``state`` (parse_state: the summarizer's saved state read
back), ``outcome`` (SummaryOutcome), ``service`` (SummarizationService: the engine's
``engine.summarization`` surface; step 5, replacement: it applies each SummaryOutcome to
the store and emits ``memory:summarization:*``).
"""

from f09_memory.summarization.grouping import group_batches
from f09_memory.summarization.heuristic import (
    coverage,
    coverage_of,
    first_sentence,
    garbage_reason,
    heuristic_summary,
    is_garbage,
)
from f09_memory.summarization.outcome import SummaryOutcome, SummaryPath
from f09_memory.summarization.pipeline import MODES, Summarizer
from f09_memory.summarization.prompt import (
    SUMMARY_PROMPT_VERSION,
    SummaryPrompt,
    build_summary_prompt,
    load_summary_template,
)
from f09_memory.summarization.scheduler import (
    CandidateHeap,
    eligible_slots,
    quantize,
    select_batch,
)
from f09_memory.summarization.sources import KeyTerm, SourceEvent, key_terms

__all__ = [
    "MODES",
    "SUMMARY_PROMPT_VERSION",
    "CandidateHeap",
    "KeyTerm",
    "SourceEvent",
    "Summarizer",
    "SummaryOutcome",
    "SummaryPath",
    "SummaryPrompt",
    "build_summary_prompt",
    "coverage",
    "coverage_of",
    "eligible_slots",
    "first_sentence",
    "garbage_reason",
    "group_batches",
    "heuristic_summary",
    "is_garbage",
    "key_terms",
    "load_summary_template",
    "quantize",
    "select_batch",
]
