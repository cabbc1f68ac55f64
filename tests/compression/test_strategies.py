from __future__ import annotations

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine, MemoryEngineError, RetrievalRequest
from f09_memory.compression import (
    ELLIPSIS,
    TEXT_STRATEGIES,
    clip_to_tokens,
    compress_record,
    compressed_budget,
    compressed_budgets,
    first_sentence_tags,
    ratio_truncate,
)
from f09_memory.errors import ErrorCode
from f09_memory.packing import HeuristicTokenCounter
from f09_memory.schema.records import RecordMetadata

COUNTER = HeuristicTokenCounter(4.0)


def test_first_sentence_plus_tags() -> None:
    text = first_sentence_tags("The mill burned. Nobody was hurt. The miller wept.",
                               ("fire", "mill"), 100, COUNTER)
    assert "The mill burned. [fire, mill]" == text


def test_single_sentence_without_tags_is_kept() -> None:
    assert "Quiet day" == first_sentence_tags("  Quiet day  ", (), 100, COUNTER)


@pytest.mark.parametrize("bound", [1, 2, 3, 5, 8])
def test_result_never_exceeds_the_token_bound(bound: int) -> None:
    text = first_sentence_tags("A very long first sentence about the harvest festival in the "
                               "valley and everything that happened there.", ("harvest",),
                               bound, COUNTER)
    assert COUNTER.count(text) <= bound
    assert text.endswith(ELLIPSIS)


def test_clip_with_a_word_counter_shrinks_until_it_fits() -> None:
    class Words:
        def count(self, text: str) -> int:
            return len(text.split())

    clipped = clip_to_tokens("one two three four five six seven eight", 3, Words())
    assert len(clipped.split()) <= 3 and clipped.startswith("one")


def test_vectorized_budgets_equal_the_scalar_ones() -> None:
    tokens = np.arange(0, 500, dtype=np.int64)
    for ratio in (0.55, 0.1, 0.333, 1.0):
        assert [compressed_budget(int(t), ratio) for t in tokens] == compressed_budgets(
            tokens, ratio).tolist()


def test_compressed_budget() -> None:
    assert (1, 1, 6, 55) == (compressed_budget(0, 0.55), compressed_budget(1, 0.55),
                             compressed_budget(10, 0.55), compressed_budget(100, 0.55))


def test_registry_names_every_strategy() -> None:
    assert {"first_sentence_tags", "ratio_truncate"} == set(TEXT_STRATEGIES)


def test_ratio_truncate_keeps_the_start_of_the_content_within_the_bound() -> None:
    text = ratio_truncate("First part. Second part that is long enough to cut.", ("t",), 5,
                          COUNTER)
    assert text.startswith("First part. Sec") and COUNTER.count(text) <= 5


def test_compress_record_can_drop_metadata_but_keeps_flag_and_sources() -> None:
    engine = MemoryEngine(embedder=None)
    rec = engine.ingest("a", "The mill burned down. Everyone watched.", flagged=True,
                        metadata={"tags": ["fire"], "spatial": {"x": 1, "y": 2},
                                  "sourceRefIds": ["a:0000000009"]}, now=0)
    out = compress_record(rec, strategy="first_sentence_tags", ratio=0.55, counter=COUNTER,
                          drop_metadata=True)
    assert rec.id == out.id and "Everyone" not in out.content
    assert (True, ("a:0000000009",), (), None) == (
        out.metadata.flagged, out.metadata.source_ref_ids, out.metadata.tags,
        out.metadata.spatial)
    assert engine.get(rec.id).metadata.spatial is not None
    assert out.metadata == RecordMetadata(flagged=True, source_ref_ids=("a:0000000009",))
    for flagged in (False, True):  # the shared metadata of records without source refs
        plain = engine.ingest("a", "The well ran dry. Nobody noticed.", flagged=flagged, now=1)
        kept = compress_record(plain, strategy="first_sentence_tags", ratio=0.55,
                               counter=COUNTER, drop_metadata=True).metadata
        assert kept == RecordMetadata(flagged=flagged)
        assert kept.model_dump() == RecordMetadata(flagged=flagged).model_dump()


def test_pressure_profile_chooses_the_strategy() -> None:
    profiles = {"throttle": {"compress": True, "compression_strategy": "ratio_truncate"}}
    engine = MemoryEngine(MemoryConfig(scoring={"pressure": {
        **MemoryConfig().scoring.pressure, **profiles}}), embedder=None)
    engine.ingest("a", "Alpha beta gamma. Delta epsilon zeta eta theta iota kappa.",
                  tags=["greek"], now=0)
    bundle = engine.retrieve(RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=99,
                                              pressure_state="throttle"), now=0)
    assert "[greek]" not in bundle.records[0].content
    exhausted = engine.retrieve(RetrievalRequest(agent_id="a", purpose="dialog",
                                                 max_tokens=99, pressure_state="exhausted"),
                                now=0)
    assert () == exhausted.records[0].metadata.tags


def test_unknown_strategy_name_is_a_config_error() -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig(scoring={"pressure": {**MemoryConfig().scoring.pressure,
                                           "throttle": {"compression_strategy": "zip"}}})
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
