from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from f09_memory import MemoryConfig, MemoryEngine, MemoryLayer
from f09_memory.core.frames import group_frame
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.ingestion.frame_checks import PendingColumns, item_column, take_items
from f09_memory.ingestion.validation import (
    DEFAULT_LIMITS,
    ItemLimits,
    PendingRecord,
    validate_agent_id,
    validate_mapping,
)
from f09_memory.schema.records import RecordMetadata

PLAIN = [{"agent_id": "b", "content": "one", "importance": 0.5},
         {"agent_id": "a", "content": "two"},
         {"agent_id": "b", "content": "three", "importance": None}]


def _listed(grouped: tuple[Any, list[str]]) -> tuple[dict[str, list[Any]], list[str]]:
    """``group_frame``'s groups as lists (a plain frame's are ``PendingColumns``)."""
    groups, owners = grouped
    return {agent_id: list(items) for agent_id, items in groups.items()}, owners


def test_a_plain_frame_and_the_same_items_one_by_one_group_alike() -> None:
    grouped = group_frame(PLAIN, DEFAULT_LIMITS)
    assert all(isinstance(items, PendingColumns) for items in grouped[0].values())
    fast = _listed(grouped)
    slow = group_frame(iter(PLAIN), DEFAULT_LIMITS)  # not a list: checked item by item
    assert fast == slow
    assert ["b", "a"] == list(fast[0])  # agents in first-appearance order
    groups, owners = fast
    assert ["b", "a", "b"] == owners
    assert ["one", "three"] == [item.content for item in groups["b"]]
    assert [0.5, None] == [item.importance for item in groups["b"]]


def test_a_frame_with_other_fields_is_grouped_item_by_item() -> None:
    groups, owners = group_frame([*PLAIN, {"agent_id": "a", "content": "four", "tags": ["t"],
                                           "layer": "semantic"}],
                                  DEFAULT_LIMITS)
    assert ["b", "a", "b", "a"] == owners
    assert ("t",) == groups["a"][1].tags


@pytest.mark.parametrize(("bad", "field"), [
    ({"agent_id": "", "content": "x"}, "agent_id"),
    ({"agent_id": "a", "content": "   "}, "content"),
    ({"agent_id": "a", "content": "x", "importance": 2.0}, "importance"),
    ("not a mapping", "item"),
])
def test_a_bad_item_raises_with_its_index(bad: Any, field: str) -> None:
    with pytest.raises(MemoryEngineError) as info:
        group_frame([*PLAIN, bad], DEFAULT_LIMITS)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert 3 == info.value.details["index"]
    assert field == info.value.details["field"]
    assert info.value.message.startswith("item 3: ")


SMALL = MemoryConfig(max_agent_id_chars=8, max_content_chars=16, max_tag_chars=4)
"""A non-default limits config (redaction mode on, as by default)."""
AGENT_IDS = ["npc-1", "npc-2", "n" * 8, "n" * 9, "x" * 257, "", 7, "bob@example.com",
             "\u00e9mile", "\u00e9" * 9, "npc\ud800", "\udc80"]
"""Valid, at and past the small and default limits, empty, not a string, private-looking
(refused for a new agent in redaction mode), non-ASCII, lone surrogates."""
CONTENTS = ["saw the smith", "c" * 16, "c" * 17, "y" * 65_537, "", " \t", "caf\u00e9",
            "mail bob@example.com", "bad \ud800 text", "\udfff", None]
ITEM = st.fixed_dictionaries(
    {"agent_id": st.sampled_from(AGENT_IDS), "content": st.sampled_from(CONTENTS)},
    optional={"importance": st.sampled_from([0.25, None, 1.5, float("nan")]),
              "tags": st.sampled_from([["t"], ["long-tag"]])})


def _outcome(call: Any) -> tuple[Any, ...]:
    try:
        return ("ok", call())
    except MemoryEngineError as exc:
        return ("error", exc.code, exc.message, exc.details)


@settings(max_examples=150)
@given(st.lists(ITEM, max_size=4), st.sampled_from([MemoryConfig(), SMALL]))
def test_a_frame_groups_as_its_items_one_by_one_under_the_engine_limits(
        items: list[Any], config: MemoryConfig) -> None:
    limits = ItemLimits.of(config)
    fast = _outcome(lambda: _listed(group_frame(items, limits)))
    assert fast == _outcome(lambda: group_frame(iter(items), limits))  # item by item
    if fast[0] == "ok":  # every item passes the full validation, to the same values
        groups, owners = fast[1]
        bodies = [{k: v for k, v in item.items() if k != "agent_id"} for item in items]
        assert owners == [validate_agent_id(item["agent_id"], limits.agent_id)
                          for item in items]
        assert groups == {agent_id: [validate_mapping(body, limits)
                                     for owner, body in zip(owners, bodies, strict=True)
                                     if owner == agent_id] for agent_id in owners}


@settings(max_examples=60, deadline=None)
@given(st.lists(ITEM, min_size=1, max_size=4), st.sampled_from([MemoryConfig(), SMALL]))
def test_ingest_batch_of_a_frame_stores_or_refuses_as_item_by_item(
        items: list[Any], config: MemoryConfig) -> None:
    engines = [MemoryEngine(config, embedder=None) for _ in range(2)]
    before = engines[0].state_hash()
    fast = _outcome(lambda: engines[0].ingest_batch(items, now=1).ids)
    slow = _outcome(lambda: engines[1].ingest_batch(iter(items), now=1).ids)
    assert fast == slow
    assert engines[0].state_hash() == engines[1].state_hash()
    if fast[0] == "error":
        assert before == engines[0].state_hash()  # a refused frame stores nothing


@pytest.mark.parametrize("agent_id", ["bob@example.com", "npc-bob@example.com"])
@pytest.mark.parametrize("frame", [True, False])
def test_a_new_private_agent_id_is_refused_in_redaction_mode(agent_id: str,
                                                             frame: bool) -> None:
    items = [{"agent_id": "npc", "content": "x"}, {"agent_id": agent_id, "content": "y"}]
    engine = MemoryEngine(embedder=None)
    before = engine.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        engine.ingest_batch(items if frame else iter(items), now=1)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert "agent_id" == info.value.details["field"]
    assert agent_id not in info.value.message
    assert before == engine.state_hash()
    assert [] == list(engine.agents())
    open_engine = MemoryEngine(MemoryConfig(redaction_mode=False), embedder=None)
    assert 2 == len(open_engine.ingest_batch(items if frame else iter(items), now=1).ids)


def test_pending_columns_read_as_the_records_they_stand_for() -> None:
    plain = PendingColumns(("a", "b", "c"), (0.5, None, 1.0))
    meta = RecordMetadata(attributes={"with": "b"})
    rich = PendingColumns(("a", "b", "c"), (0.5, None, 1.0),
                          (MemoryLayer.SEMANTIC, MemoryLayer.EPISODIC, MemoryLayer.SOCIAL),
                          (("t",), (), ("u", "v")), (True, False, False), (None, meta, None))
    for run in (plain, rich):
        records = [run[i] for i in range(len(run))]
        assert records == list(run)
        assert records[-1] == run[-1]
        assert records[1:] == list(run[1:])
        assert isinstance(run[1:], PendingColumns)
        assert all(r.ttl is None and r.source_event is None for r in records)
        with pytest.raises(IndexError):
            run[3]
    assert [None, None, None] == [r.metadata for r in plain]
    assert [None, meta, None] == [r.metadata for r in rich]
    assert rich[1].metadata is meta
    for run in (plain, rich):  # a selection stays columns; the records are those selected
        taken = take_items(run, [2, 0])
        assert isinstance(taken, PendingColumns)
        assert [run[2], run[0]] == list(taken)
        assert take_items(run, [0, 1, 2]) is run
        assert [] == list(take_items(run, [])) == list(take_items(list(run), []))
        assert [run[1]] == list(take_items(list(run), [1]))
        for name in PendingRecord._fields:
            assert [getattr(r, name) for r in run] == list(item_column(run, name))
            assert list(item_column(run, name)) == item_column(list(run), name)
    assert plain.take([1]).layer is None and rich.take([1]).layer == (MemoryLayer.EPISODIC,)
    assert [MemoryLayer.EPISODIC] * 3 == [r.layer for r in plain]
    assert [(), (), ()] == [r.tags for r in plain]
    assert [MemoryLayer.SEMANTIC, MemoryLayer.EPISODIC, MemoryLayer.SOCIAL] == [
        r.layer for r in rich]
    assert [True, False, False] == [r.flagged for r in rich]
    joined = PendingColumns.joined([plain, rich[:2], plain[2:]])
    assert joined == (("a", "b", "c", "a", "b", "c"), (0.5, None, 1.0, 0.5, None, 1.0),
                      (MemoryLayer.EPISODIC,) * 3 + (MemoryLayer.SEMANTIC, MemoryLayer.EPISODIC,
                                                     MemoryLayer.EPISODIC),
                      ((),) * 3 + (("t",), (), ()), (False,) * 3 + (True, False, False),
                      (None,) * 4 + (meta, None))
    assert PendingColumns.joined([plain, plain])[2:] == (
        (MemoryLayer.EPISODIC,) * 6, ((),) * 6, (False,) * 6, (None,) * 6)


def test_a_plain_frame_keeps_columns_of_defaults_out() -> None:
    groups, _ = group_frame([{"agent_id": "a", "content": "x", "tags": []},
                             {"agent_id": "b", "content": "y", "layer": "episodic"}],
                            DEFAULT_LIMITS)
    assert all(run.layer is None and run.tags is None and run.flagged is None
               for run in groups.values() if isinstance(run, PendingColumns))
    groups, _ = group_frame([{"agent_id": "a", "content": "x", "tags": ["t"]},
                             {"agent_id": "a", "content": "y", "flagged": True}],
                            DEFAULT_LIMITS)
    assert [("t",), ()] == [r.tags for r in groups["a"]]
    assert [False, True] == [r.flagged for r in groups["a"]]


def test_items_made_of_the_same_objects_share_one_validation_and_others_do_not() -> None:
    """Engine events give every perceiver the same text, tags and metadata objects: the
    frame validates them once (items that go item by item: these have a TTL). A value that
    differs (even one equal to a valid one, as True to 1.0) is validated on its own."""
    meta = {"attributes": {"with": "b"}}
    tags = ["trade"]
    good = {"agent_id": "a", "content": "traded", "importance": 1.0, "tags": tags,
            "metadata": meta, "ttl": 50}
    groups, owners = group_frame([good, {**good, "agent_id": "b"}, dict(good)],
                                 DEFAULT_LIMITS)
    assert ["a", "b", "a"] == owners
    assert groups["a"][0] is groups["b"][0] is groups["a"][1]
    for bad, field in (({**good, "importance": True}, "importance"),
                       ({**good, "tags": ["trade", 7]}, "tags"),
                       ({**good, "metadata": {"attributes": {"with": 7.5j}}}, "metadata")):
        with pytest.raises(MemoryEngineError) as info:
            group_frame([good, bad], DEFAULT_LIMITS)
        assert 1 == info.value.details["index"], field
    one_by_one = group_frame(iter([good, {**good, "agent_id": "b"}]), DEFAULT_LIMITS)[0]
    assert one_by_one["a"][0] == one_by_one["b"][0]  # a generator's items: no sharing


def test_attribute_metadata_takes_the_column_path_and_equal_attributes_share_one_model(
        ) -> None:
    """A crowd's trades carry the same few attributes: the frame keeps its items as columns,
    one ``RecordMetadata`` per distinct attributes (by value and type), copied from the
    host's dicts; the engine ends as with every item validated in full."""
    def trade(agent: str, partner: object) -> dict[str, Any]:
        return {"agent_id": agent, "content": f"traded with {partner}", "importance": 0.4,
                "tags": ["trade"], "metadata": {"attributes": {"with": partner}}}

    items = [trade("a", "b"), trade("b", "b"), trade("a", "c"), trade("c", 1),
             trade("c", 1.0), trade("c", True), {"agent_id": "b", "content": "plain"}]
    groups, owners = group_frame(items, DEFAULT_LIMITS)
    assert ["a", "b", "a", "c", "c", "c", "b"] == owners
    assert all(isinstance(run, PendingColumns) for run in groups.values())
    a, b, c = (list(groups[k]) for k in "abc")
    assert a[0].metadata is b[0].metadata  # equal attributes: one model
    assert a[0].metadata is not a[1].metadata
    assert [1, 1.0, True] == [r.metadata.attributes["with"] for r in c]  # type: ignore[union-attr]
    assert [int, float, bool] == [type(r.metadata.attributes["with"]) for r in c]  # type: ignore[union-attr]
    assert len({id(r.metadata) for r in c}) == 3
    assert b[1].metadata is None
    for found, item in zip([a[0], b[0], a[1], *c, b[1]], items, strict=True):
        assert found == validate_mapping({k: v for k, v in item.items() if k != "agent_id"})
    items[0]["metadata"]["attributes"]["with"] = "changed"  # the host's dict, after the check
    assert {"with": "b"} == a[0].metadata.attributes  # type: ignore[union-attr]

    config = MemoryConfig(redaction_mode=False)
    batch, one_by_one = MemoryEngine(config, embedder=None), MemoryEngine(config, embedder=None)
    items[0]["metadata"]["attributes"]["with"] = "b"
    batch.ingest_batch(items, now=1)
    one_by_one.ingest_batch(iter(items), now=1)  # a generator: item by item
    assert batch.state_hash() == one_by_one.state_hash()
    assert [r.metadata.attributes for r in batch.records("c")] == [
        {"with": 1}, {"with": 1.0}, {"with": True}]


def test_bad_attribute_metadata_in_a_frame_is_refused_by_index_and_nothing_is_stored() -> None:
    engine = MemoryEngine(embedder=None)
    good = {"agent_id": "a", "content": "traded", "metadata": {"attributes": {"n": 1}}}
    before = engine.state_hash()
    for bad, problem in (({"attributes": {"n": float("nan")}}, "not a finite number"),
                         ({"attributes": {"n": 2**63}}, "outside int64"),
                         ({"attributes": {"n": [1]}}, "attributes"),
                         ({"attributes": {"n": "x" * 5_000}}, "max_attribute_chars")):
        with pytest.raises(MemoryEngineError) as info:
            engine.ingest_batch([good, good, {**good, "metadata": bad}], now=1)
        assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
        assert 2 == info.value.details["index"]
        assert info.value.message.startswith("item 2: ") and problem in info.value.message
        assert before == engine.state_hash()
        assert [] == list(engine.agents())


def test_private_attributes_in_a_frame_are_redacted_and_counted_per_item() -> None:
    """Column-checked attributes are redacted as item by item: every copy replaced and
    counted, the raw value in no record, event or snapshot of the state hash's input."""
    private = {"attributes": {"contact": "bob@example.com", "with": "npc-2"}}
    items = [{"agent_id": f"npc-{i}", "content": "traded", "metadata": private}
             for i in range(3)] + [{"agent_id": "npc-0", "content": "traded",
                                    "metadata": {"attributes": {"with": "npc-2"}}}]
    config = MemoryConfig(redaction_key="k" * 16)
    batch, one_by_one = MemoryEngine(config, embedder=None), MemoryEngine(config, embedder=None)
    seen: list[str] = []
    batch.bus.subscribe("*", lambda ev: seen.append(repr(ev)))
    batch.ingest_batch(items, now=1)
    one_by_one.ingest_batch(iter(items), now=1)
    assert batch.state_hash() == one_by_one.state_hash()
    assert batch.redactor_counts == one_by_one.redactor_counts
    assert 3 == batch.redactor_counts["EMAIL"]
    records = [r for agent in batch.agents() for r in batch.records(agent)]
    assert 4 == len(records)
    assert all("bob@example.com" not in repr(r) for r in records)
    assert all("bob@example.com" not in line for line in seen)
    assert [True, True, True, False] == [r.redacted for r in sorted(
        records, key=lambda r: (len(r.metadata.attributes), r.id), reverse=True)]


@pytest.mark.parametrize("order", ["runs", "interleaved", "an agent comes back"])
def test_a_frame_groups_alike_whether_its_agents_come_in_runs_or_not(order: str) -> None:
    """A frame whose agents' items come one agent after another is cut at the changes of
    agent (no sort); any other order is sorted. Both give each agent's items in input
    order, agents in first-appearance order, as item by item."""
    agents = {"runs": ["c", "c", "a", "b", "b", "b"],
              "interleaved": ["c", "a", "c", "b", "a", "b"],
              "an agent comes back": ["c", "c", "a", "a", "b", "c"]}[order]
    items = [{"agent_id": a, "content": f"seen {i}", "importance": 0.1 * i,
              "tags": [f"t{i % 2}"], "flagged": i == 3} for i, a in enumerate(agents)]
    fast = _listed(group_frame(items, DEFAULT_LIMITS))
    assert all(isinstance(run, PendingColumns)
               for run in group_frame(items, DEFAULT_LIMITS)[0].values())
    assert fast == group_frame(iter(items), DEFAULT_LIMITS)  # checked item by item
    groups, owners = fast
    assert owners == agents and list(groups) == list(dict.fromkeys(agents))
    for agent_id, run in groups.items():
        assert [item.content for item in run] == [
            f"seen {i}" for i, a in enumerate(agents) if a == agent_id]
