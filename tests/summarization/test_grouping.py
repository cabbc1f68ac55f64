from __future__ import annotations

import random
from typing import Any

import pytest

from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.redaction import Redactor
from f09_memory.summarization import SourceEvent, build_summary_prompt, group_batches, key_terms
from f09_memory.summarization.grouping import group_rows
from f09_memory.summarization.sources import entities_of


def ev(key: int, content: str, t: int, tags: tuple[str, ...] = ()) -> SourceEvent:
    return SourceEvent(key, f"npc:{key:010d}", t, 0.2, content, tags)


def ids(groups: list[list[SourceEvent]]) -> list[list[int]]:
    return [[s.key for s in g] for g in groups]


def test_shared_tags_group_together_across_time() -> None:
    src = [ev(0, "bought bread", 0, ("trade",)), ev(1, "a fight broke out", 10, ("combat",)),
           ev(2, "sold a sword", 10**9, ("Trade", "market"))]
    assert [[0, 2], [1]] == ids(group_batches(src, batch_size=10, gap_ms=0))


def test_shared_entities_group_together() -> None:
    src = [ev(0, "Talked with Bram at the forge.", 0), ev(1, "The wolves howled.", 5),
           ev(2, "Paid Bram for the nails.", 10**6), ev(3, "Lysa left town.", 10**7)]
    assert [[0, 2], [1], [3]] == ids(group_batches(src, batch_size=10, gap_ms=0))


def test_tags_outrank_entities_and_ties_go_to_the_first_group() -> None:
    src = [ev(0, "Saw Bram.", 0, ("trade",)), ev(1, "Saw Lysa.", 1, ("combat",)),
           ev(2, "Saw Bram and Lysa.", 2),            # one shared entity each: first group
           ev(3, "Saw Bram.", 3, ("combat",))]        # tag (group 1) beats entity (group 0)
    assert [[0, 2], [1, 3]] == ids(group_batches(src, batch_size=10, gap_ms=0))


def test_featureless_events_group_by_temporal_proximity() -> None:
    src = [ev(0, "it rained", 0), ev(1, "it rained more", 400), ev(2, "cold night", 900),
           ev(3, "it rained again", 5_000), ev(4, "sunny", 5_100)]
    assert [[0, 1, 2], [3, 4]] == ids(group_batches(src, batch_size=10, gap_ms=500))
    assert [[0], [1], [2], [3], [4]] == ids(group_batches(src, batch_size=10, gap_ms=0))


def test_themed_event_is_not_pulled_into_an_unrelated_group_by_time() -> None:
    src = [ev(0, "bought bread", 0, ("trade",)), ev(1, "a fight", 1, ("combat",))]
    assert [[0], [1]] == ids(group_batches(src, batch_size=10, gap_ms=10**9))


def test_groups_are_capped_at_batch_size() -> None:
    src = [ev(i, "haggled", i, ("trade",)) for i in range(7)]
    assert [[0, 1, 2], [3, 4, 5], [6]] == ids(group_batches(src, batch_size=3, gap_ms=0))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_result_does_not_depend_on_input_order_and_partitions_the_input(seed: int) -> None:
    rng = random.Random(seed)
    words = ["Bram", "Lysa", "Mira", "wolves", "bread"]
    tags = [(), ("trade",), ("combat",), ("trade", "market")]
    src = [ev(i, f"Saw {rng.choice(words)} near {rng.choice(words)}.", rng.randrange(0, 3000),
              rng.choice(tags)) for i in range(40)]
    expected = group_batches(src, batch_size=8, gap_ms=300)
    shuffled = list(src)
    rng.shuffle(shuffled)
    assert ids(expected) == ids(group_batches(shuffled, batch_size=8, gap_ms=300))
    flat = sorted(s.key for g in expected for s in g)
    assert list(range(40)) == flat
    assert all(0 < len(g) <= 8 for g in expected)
    for g in expected:
        assert g == sorted(g, key=lambda s: (s.recency_anchor, s.id))


def test_memory_records_are_accepted_too(build: Any, town: Any) -> None:
    engine, am = build(town(8))
    records = engine.records(am.agent_id)
    groups = group_batches(records, batch_size=10, gap_ms=0)
    assert [[r.id for r in g] for g in groups] == [
        [f"npc:{k:010d}" for k in ks] for ks in ([0, 2, 4, 6], [1, 5], [3, 7])]


def test_empty_input_gives_no_groups() -> None:
    assert [] == group_batches([], batch_size=3, gap_ms=0)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"batch_size": 0, "gap_ms": 0}, "batch_size"),
    ({"batch_size": True, "gap_ms": 0}, "batch_size"),
    ({"batch_size": 3, "gap_ms": -1}, "gap_ms"),
    ({"batch_size": 3, "gap_ms": 1.5}, "gap_ms"),
])
def test_bad_arguments_raise_input_invalid(kwargs: dict[str, Any], field: str) -> None:
    for group in (group_batches, group_rows):
        with pytest.raises(MemoryEngineError) as info:
            group([ev(0, "x", 0)], **kwargs)
        assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
        assert field == info.value.details["field"]


@pytest.mark.parametrize("seed", [0, 1])
def test_entities_computed_once_give_what_each_step_computes(seed: int) -> None:
    """A summary task computes its sources' entities once, for the grouping, a single
    group's header terms and the quality gate's terms: each gives what it computes alone."""
    rng = random.Random(seed)
    words = ["Bram", "Lysa", "Mira", "wolves", "Old Tom"]
    src = [ev(i, f"{rng.choice(['Met', 'Saw'])} {rng.choice(words)} by {rng.choice(words)}.",
              rng.randrange(0, 3000), rng.choice([(), ("trade",), ("Trade", "market")]))
           for i in range(30)]
    ents = entities_of(src)
    for size in (8, 30):  # several groups, then (with the grouping below) one
        rows = group_rows(src, batch_size=size, gap_ms=300, entities=ents)
        assert rows == group_rows(src, batch_size=size, gap_ms=300)
        assert [[src[i] for i in g] for g in rows] == group_batches(src, batch_size=size,
                                                                    gap_ms=300)
    assert key_terms(src, 8, entities=ents) == key_terms(src, 8)
    one = sorted(range(len(src)), key=lambda i: (src[i].recency_anchor, src[i].id))
    redact = Redactor(["EMAIL", "CARD"]).redact_text
    assert build_summary_prompt([[src[i] for i in one]], redact=redact,
                                entities=[[ents[i] for i in one]]) == build_summary_prompt(
        [[src[i] for i in one]], redact=redact)


def test_a_tasks_prompt_pairs_each_source_with_its_own_entities(build: Any, town: Any) -> None:
    """The prompt's single group is in time order, the task's sources are not: the shared
    entities are reordered with them. A tag equal to another source's entity would count
    twice if a source got its neighbour's entities."""
    from f09_memory.summarization.judging import PendingTask

    engine, am = build(town(8))
    task = engine.summarization.request(am.agent_id, 10_000)
    assert task is not None
    summarizer = engine.summarization.summarizer
    sources = (ev(0, "Saw Bram at the mill.", 50, ("town",)),  # key order is not time order
               ev(1, "Saw Lysa by the well.", 10, ("town",)),
               ev(2, "Saw Mira.", 30, ("town", "lysa")))
    pending = PendingTask(task, sources)
    cfg = engine.config
    groups = group_batches(sources, batch_size=3, gap_ms=cfg.summarization_grouping_gap_ms)
    assert len(groups) == 1 and [s.key for s in groups[0]] == [1, 2, 0]
    expected = build_summary_prompt(
        groups, redact=summarizer._redact, redact_lines=summarizer._redact_lines,
        event_max_chars=cfg.summarization_event_max_chars,
        max_facts=cfg.summarization_coverage_terms,
        max_words=max(16, cfg.summarization_max_tokens * 3 // 4)).user
    assert summarizer._prompt(pending) == expected
    assert "about: town, Lysa, Bram" in expected  # Lysa: an entity of one, a tag of another
