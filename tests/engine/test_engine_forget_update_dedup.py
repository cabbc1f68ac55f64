"""engine.forget, engine.update and ingest dedup: behaviour, events, negative paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from f09_memory import IngestedRecords, MemoryConfig, MemoryEngine, RetrievalRequest
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.testing import capture_events

EMAIL = "ana@example.org"


def engine(**kw: object) -> MemoryEngine:
    return MemoryEngine(MemoryConfig(**kw), embedder=None)  # type: ignore[arg-type]


def test_forget_ids_removes_them_with_events_and_ids_are_never_reused() -> None:
    e = engine()
    a, b, c = (e.ingest("npc", f"memory {i}", now=i) for i in range(3))
    with capture_events(e.bus, "memory:record:expired") as log:
        assert 2 == e.forget([a.id, c.id, a.id])
    assert [(a.id, "forgotten"), (c.id, "forgotten")] == [(x.id, x.reason) for x in log.events]
    assert [b.id] == [r.id for r in e.records("npc")]
    assert "npc:0000000003" == e.ingest("npc", "later", now=5).id
    e._check()


def test_forget_an_agent_removes_all_its_records() -> None:
    e = engine()
    e.ingest_many("npc", ["a", "b", "c"], now=1)
    e.ingest("other", "x", now=1)
    assert 3 == e.forget(agent_id="npc")
    assert (0, 1) == (e.count("npc"), e.count("other"))
    assert 0 == e.forget(agent_id="nobody")
    e._check()


@pytest.mark.parametrize(("args", "code"), [
    ({}, ErrorCode.MEMORY_INPUT_INVALID),
    ({"record_ids": ["npc:0000000000"], "agent_id": "npc"}, ErrorCode.MEMORY_INPUT_INVALID),
    ({"record_ids": "npc:0000000000"}, ErrorCode.MEMORY_INPUT_INVALID),
    ({"record_ids": ["npc:0000000000", "npc:0000000099"]}, ErrorCode.MEMORY_RECORD_NOT_FOUND),
    ({"record_ids": [None]}, ErrorCode.MEMORY_RECORD_NOT_FOUND),
])
def test_bad_forget_changes_nothing(args: dict[str, object], code: ErrorCode) -> None:
    e = engine()
    e.ingest("npc", "keep me", now=1)
    before = e.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        e.forget(**args)  # type: ignore[arg-type]
    assert code == info.value.code and before == e.state_hash()


def test_update_changes_fields_redacts_and_emits() -> None:
    e = engine()
    rec = e.ingest("npc", "The smith owes me gold.", importance=0.2, tags=["debt"], now=1)
    before = e.state_hash()
    with capture_events(e.bus, "memory:record:*") as log:
        new = e.update(rec.id, importance=0.9, tags=["debt", f"mail:{EMAIL}"],
                       content=f"The smith paid. Ask {EMAIL}.")
    assert (rec.id, 0.9) == (new.id, new.importance)
    assert EMAIL not in new.content and EMAIL not in new.metadata.tags[1] and new.redacted
    assert new.tokens_estimate == e.counter.count(new.content)
    assert new == e.get(rec.id) and before != e.state_hash()
    updated = log.of("memory:record:updated")[0]
    assert ("importance", "tags", "content") == updated.fields
    assert log.of("memory:record:redacted")
    e._check()


def test_updated_content_is_re_embedded_by_a_tick() -> None:
    e = MemoryEngine(MemoryConfig())
    rec = e.ingest("npc", "old words", now=1)
    assert rec.embedding_ref is not None
    assert e.update(rec.id, content="new words").embedding_ref is None
    assert 1 == e.tick(2).embedded
    assert e.get(rec.id).embedding_ref is not None


@pytest.mark.parametrize(("kw", "code"), [
    ({}, ErrorCode.MEMORY_INPUT_INVALID),
    ({"importance": 1.5}, ErrorCode.MEMORY_INPUT_INVALID),
    ({"content": "  "}, ErrorCode.MEMORY_INPUT_INVALID),
    ({"tags": "debt"}, ErrorCode.MEMORY_INPUT_INVALID),
])
def test_bad_update_changes_nothing(kw: dict[str, object], code: ErrorCode) -> None:
    e = engine()
    rec = e.ingest("npc", "x", now=1)
    before = e.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        e.update(rec.id, **kw)  # type: ignore[arg-type]
    assert code == info.value.code and before == e.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        e.update("npc:0000000099", importance=0.5)
    assert ErrorCode.MEMORY_RECORD_NOT_FOUND == info.value.code


def test_dedup_reinforces_the_existing_record_within_the_window() -> None:
    e = engine(dedup_window_ms=1_000, dedup_importance_step=0.1)
    first = e.ingest("npc", "Saw a wolf near the  mill.", importance=0.5, now=10)
    with capture_events(e.bus, "memory:record:*") as log:
        again = e.ingest("npc", "saw a wolf near the mill.", now=500)
    assert first.id == again.id and 1 == e.count("npc")
    assert (0.6, 500) == (again.importance, again.recency_anchor)
    assert [("dedup", ("importance", "recency_anchor"))] == [
        (x.reason, x.fields) for x in log.of("memory:record:updated")]
    assert [] == log.of("memory:record:created")
    later = e.ingest("npc", "Saw a wolf near the mill.", now=2_000)  # window passed
    assert later.id != first.id and 2 == e.count("npc")
    other_layer = e.ingest("npc", "Saw a wolf near the mill.", layer="semantic", now=2_001)
    assert other_layer.id not in (first.id, later.id)
    e._check()


def test_dedup_inside_one_batch_and_across_agents() -> None:
    e = engine(dedup_window_ms=1_000)
    out = e.ingest_many("npc", ["rain", "Rain", "sun", "rain"], now=1)
    assert 2 == e.count("npc") and out.ids[0] == out.ids[1] == out.ids[3] != out.ids[2]
    e.ingest_batch([{"agent_id": "a", "content": "rain"}, {"agent_id": "b", "content": "rain"}],
                   now=2)
    assert (1, 1) == (e.count("a"), e.count("b"))
    e._check()


def test_dedup_redacts_to_compare_and_counts_only_what_it_stores() -> None:
    """The redaction counts are the replacements in stored data: an item compared with the
    stored texts (dedup) or a claim compared with the current one is not counted again."""
    e = engine(dedup_window_ms=1_000, redaction_mode=True)
    first = e.ingest("npc", f"Write to {EMAIL} about the mill.", now=1)
    again = e.ingest_many("npc", [f"write to {EMAIL} about the mill.",
                                  f"Write to {EMAIL} about the  mill."], now=2)
    assert {first.id} == set(again.ids) and 1 == e.count("npc")
    assert EMAIL not in first.content and 1 == e.redactor_counts["EMAIL"]
    e.ingest_batch([{"agent_id": "npc", "content": f"Write to {EMAIL} about the mill."},
                    {"agent_id": "bob", "content": f"Mail {EMAIL} twice: {EMAIL}."}], now=3)
    assert 3 == e.redactor_counts["EMAIL"]  # bob's two, stored; npc's repeat, not stored
    e._check()


def test_dedup_off_by_default_and_survives_save_load(tmp_path: Path) -> None:
    assert 2 == len(set(engine().ingest_many("npc", ["x", "x"], now=1).ids))
    e = engine(dedup_window_ms=100)
    e.ingest("npc", "hello there", now=1)
    loaded = MemoryEngine.load(e.save(tmp_path / "s.f09"), embedder=None)
    assert e.ingest("npc", "hello there", now=2).id == loaded.ingest("npc", "Hello there",
                                                                    now=2).id
    assert e.state_hash() == loaded.state_hash()
    loaded._check()


def test_dedup_index_follows_updates_evictions_and_a_late_build(tmp_path: Path) -> None:
    """The index keeps each live record's digest by slot: a record whose text was updated
    leaves under its new text, an evicted one leaves the index, and an index built late
    (after a load) covers the records stored before it."""
    e = engine(dedup_window_ms=10_000, episodic_max=3)
    wolf = e.ingest("npc", "Saw a wolf.", now=1)
    e.update(wolf.id, content="Saw a bear.")
    assert e.ingest("npc", "saw a bear.", now=2).id == wolf.id  # the new text reinforces
    assert e.ingest("npc", "Saw a wolf.", now=3).id != wolf.id  # the old one does not
    e.ingest_many("npc", ["Rain.", "Sun."], now=4)  # the ring of 3 evicts the bear
    assert wolf.id not in {r.id for r in e.records("npc")}
    assert e.ingest("npc", "Saw a bear.", now=5).id != wolf.id
    e._check()
    loaded = MemoryEngine.load(e.save(tmp_path / "s.f09"), embedder=None)
    loaded.ingest_many("npc", ["Sun.", "Hail."], now=6)  # builds the index: Sun reinforces
    assert 3 == loaded.count("npc") and "Sun." in [r.content for r in loaded.records("npc")]
    loaded._check()
    for _ in range(3):  # each new text evicts the oldest record, found by its kept digest
        loaded.ingest("npc", f"Snow {_}.", now=7)
        loaded._check()
    assert ["Snow 0.", "Snow 1.", "Snow 2."] == [r.content for r in loaded.records("npc")]
    plain = engine()  # no dedup window: neither the index nor its column is allocated
    plain.ingest_many("npc", [f"fact {i}" for i in range(100)], now=1)
    am = plain._state.store.get("npc")
    assert am is not None and am.dedup is None and am.fprint is None


def test_dedup_repeats_leave_retrieval_free_of_copies() -> None:
    e = engine(dedup_window_ms=10_000)
    for t in range(5):
        e.ingest_many("npc", ["The well is dry.", f"Day {t} passed."], now=t)
    got = [r.content for r in e.retrieve(RetrievalRequest(agent_id="npc", purpose="dialog",
                                                          max_tokens=400), now=10).records]
    assert 1 == got.count("The well is dry.")


@pytest.mark.parametrize("tags", [{1, "a"}, ["ok", 3], ["  "], "town"])
def test_malformed_tags_are_input_invalid_and_change_nothing(tags: object) -> None:
    e = engine()
    e.ingest("npc", "x", now=1)
    before = e.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        e.ingest("npc", "y", tags=tags, now=2)  # type: ignore[arg-type]
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code and before == e.state_hash()


@pytest.mark.parametrize(("items", "index"), [
    ([{"agent_id": "a", "content": "ok"}, "just text"], 1),
    ([{"agent_id": "a", "content": "ok"}, {"content": "no agent"}], 1),
    ([{"agent_id": "", "content": "x"}], 0),
    ([{"agent_id": "a", "content": "ok"}, {"agent_id": "b", "content": "  "}], 1),
    ([{"agent_id": "a", "content": "x", "colour": "red"}], 0),
])
def test_bad_ingest_batch_item_names_its_index_and_stores_nothing(
    items: list[object], index: int
) -> None:
    e = engine()
    e.ingest("a", "before", now=1)
    before = e.state_hash()
    with capture_events(e.bus, "memory:record:created") as log, \
            pytest.raises(MemoryEngineError) as info:
        e.ingest_batch(items, now=2)  # type: ignore[arg-type]
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert index == info.value.details["index"]
    assert before == e.state_hash() and [] == list(log.events)
    with pytest.raises(MemoryEngineError):
        e.ingest_batch({"agent_id": "a", "content": "x"}, now=2)  # type: ignore[arg-type]


def test_ingest_batch_over_capacity_stores_nothing() -> None:
    e = engine(max_records_per_agent=3, episodic_max=10)
    before = e.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        e.ingest_batch([{"agent_id": "a", "content": f"m{i}"} for i in range(4)], now=1)
    assert ErrorCode.MEMORY_CAPACITY_EXCEEDED == info.value.code and before == e.state_hash()


def test_ingested_records_are_built_on_access_and_say_when_gone() -> None:
    e = engine(episodic_max=2)
    out = e.ingest_many("npc", ["one", "two"], now=1)
    assert ["one", "two"] == [r.content for r in out] and 2 == len(out)
    assert out[0] == e.get(out.ids[0]) and out[:1] == [e.get(out.ids[0])]
    e.ingest("npc", "three", now=2)  # the ring evicts "one"
    with pytest.raises(MemoryEngineError) as info:
        _ = out[0]
    assert ErrorCode.MEMORY_RECORD_NOT_FOUND == info.value.code
    assert "two" == out[1].content


def test_ingested_records_format_their_ids_once_and_compare_like_lists() -> None:
    e = MemoryEngine(MemoryConfig(), embedder=None)
    batch = e.ingest_batch([{"agent_id": "b", "content": "x"}, {"agent_id": "a", "content": "y"},
                            {"agent_id": "b", "content": "z"}], now=1)
    many = e.ingest_many("a", ["u", {"content": "v"}], now=2)
    assert 3 == len(batch) and 2 == len(many)
    assert ["b:0000000000", "a:0000000000", "b:0000000001"] == batch.ids
    assert ["a:0000000001", "a:0000000002"] == many.ids
    assert batch.ids is not batch.ids  # a copy each time
    assert ["x", "y", "z"] == [r.content for r in batch]
    assert IngestedRecords(e._reader, many.ids) == many
    assert list(many) == many
    assert "IngestedRecords(['a:0000000001', 'a:0000000002'])" == repr(many)
    e._check()


def test_a_bundle_recalled_again_reuses_its_records_until_one_changes() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    ids = [engine.ingest("a", f"fact {i}", importance=0.5, now=i).id for i in range(4)]
    request = RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=400)
    first = engine.retrieve_many([request], now=10)[0]
    again = engine.retrieve_many([request], now=10)[0]
    assert first.records is not again.records
    assert all(a is b for a, b in zip(first.records, again.records, strict=True))
    engine.update(ids[1], content="fact one, corrected")
    changed = engine.retrieve_many([request], now=10)[0]
    assert [r.id for r in first.records] == [r.id for r in changed.records]
    assert "fact one, corrected" in [r.content for r in changed.records]
    assert engine.records("a") == sorted(changed.records, key=lambda r: r.id)


@pytest.mark.parametrize("seed", range(6))
def test_dedup_batches_that_overflow_the_ring_end_as_items_one_by_one(seed: int) -> None:
    """A frame whose groups overflow their agent's episodic ring (some of its items repeat a
    record the frame evicts, some do not) ends as the items ingested one by one."""
    import random

    rng = random.Random(seed)
    pool = [f"Saw {w} at the {p}." for w in ("a wolf", "smoke", "a cart", "a fox")
            for p in ("mill", "well", "gate")]
    config = {"dedup_window_ms": 50, "episodic_max": 4}
    batched, single = engine(**config), engine(**config)
    for now in range(1, 40):
        frame = [{"agent_id": f"npc-{rng.randrange(3)}", "content": rng.choice(pool),
                  "layer": "semantic" if rng.random() < 0.15 else "episodic"}
                 for _ in range(rng.randrange(1, 9))]
        ids = batched.ingest_batch(frame, now=now).ids
        assert ids == [single.ingest(item["agent_id"], item["content"], layer=item["layer"],
                                     now=now).id for item in frame]
        assert batched.state_hash() == single.state_hash()
    batched._check()


def test_a_dedup_frame_over_several_agents_reports_each_agents_changes_in_order() -> None:
    """Agents in id order; per agent its reinforcements of stored records, then the repeats
    inside the frame; then the records created, in the same agent order."""
    e = engine(dedup_window_ms=100)
    e.ingest_batch([{"agent_id": "b", "content": "y"}, {"agent_id": "a", "content": "x"}],
                   now=1)
    with capture_events(e.bus, "memory:record:*") as log:
        ids = e.ingest_batch([{"agent_id": a, "content": t, "importance": 0.5} for a, t in (
            ("b", "y"), ("a", "x"), ("a", "z"), ("a", "Z "), ("b", "w"))], now=2).ids
    assert ["b:0000000000", "a:0000000000", "a:0000000001", "a:0000000001",
            "b:0000000001"] == ids
    assert [("memory:record:updated", "a:0000000000"), ("memory:record:updated", "a:0000000001"),
            ("memory:record:updated", "b:0000000000"), ("memory:record:created", "a:0000000001"),
            ("memory:record:created", "b:0000000001")] == [
        (ev.name, ev.id) for ev in log.events]
    assert 0.55 == e.get("a:0000000001").importance  # one reinforcement (step 0.05)


def test_an_agent_whose_items_all_repeat_adds_nothing_and_keeps_its_events_in_order() -> None:
    batched, single = engine(dedup_window_ms=100), engine(dedup_window_ms=100)
    first = [{"agent_id": "a", "content": "x"}, {"agent_id": "b", "content": "y"}]
    for e in (batched, single):
        e.ingest_batch(first, now=1)
    frame = [{"agent_id": "a", "content": "x"}, {"agent_id": "b", "content": "w"},
             {"agent_id": "a", "content": "X"}, {"agent_id": "c", "content": "y"}]
    with capture_events(batched.bus, "memory:record:*") as log:
        ids = batched.ingest_batch(frame, now=2).ids
    assert ["a:0000000000", "b:0000000001", "a:0000000000", "c:0000000000"] == ids
    assert ids == [single.ingest(i["agent_id"], i["content"], now=2).id for i in frame]
    assert batched.state_hash() == single.state_hash()
    assert [("memory:record:updated", "a:0000000000"), ("memory:record:updated", "a:0000000000"),
            ("memory:record:created", "b:0000000001"), ("memory:record:created", "c:0000000000")
            ] == [(ev.name, ev.id) for ev in log.events]
    assert 1 == batched.count("a")
    batched._check()
