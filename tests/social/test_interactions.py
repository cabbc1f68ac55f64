"""Interaction batches: accepted shapes and every refused one (all or nothing, no echo)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.errors import ErrorCode, InputInvalidError
from f09_memory.social import Interaction, parse_interactions

SETTINGS = MemoryConfig().social
SECRET = "zq-secret-41@example.org"


def parse(items: Any, now: int = 7) -> Any:
    return parse_interactions(items, SETTINGS, 64, now)


def test_tuples_interactions_and_mappings_give_the_same_columns() -> None:
    shapes = [
        ("ann", "bob", 0.5),
        ("ann", "bob", 0.5, 9, "gift", 2.0),
        Interaction("ann", "bob", -0.25, kind="betrayal"),
        {"agent_id": "ann", "other_agent_id": "bob", "sentiment": 1, "now": 3},
        {"agentId": "ann", "otherAgentId": "cid", "sentiment": 0.1, "kind": "hearsay",
         "source": "bob", "chain": ["dee"]},
    ]
    batch = parse(shapes)
    assert batch.others == ["bob", "bob", "bob", "bob", "cid"]
    assert batch.sentiments == [0.5, 0.5, -0.25, 1.0, 0.1]
    assert batch.kinds == ["interaction", "gift", "betrayal", "interaction", "hearsay"]
    assert batch.weights == [1.0, 2.0, 1.0, 1.0, 1.0]
    assert batch.times == [7, 9, 7, 3, 7]
    assert batch.chains == [(), (), (), (), ("bob", "dee")]
    assert batch.hearsay and not batch.plain
    assert parse([("a", "b", 0.0)]).plain


def test_the_columnwise_path_equals_the_item_path() -> None:
    plain = [("ann", "bob", 0.5), ("bob", "ann", -1), ("cid", "ann", 1.0)]
    assert parse(plain) == parse([Interaction(*item) for item in plain])
    assert parse(plain).sentiments == [0.5, -1.0, 1.0]
    assert type(parse(plain).sentiments[1]) is float


BAD: list[tuple[str, Any, str]] = [
    ("nan", ("ann", "bob", math.nan), "sentiment"),
    ("inf", ("ann", "bob", math.inf), "sentiment"),
    ("too positive", ("ann", "bob", 1.5), "sentiment"),
    ("too negative", ("ann", "bob", -1.0001), "sentiment"),
    ("a bool", ("ann", "bob", True), "sentiment"),
    ("a string", ("ann", "bob", "0.5"), "sentiment"),
    ("oneself", ("ann", "ann", 0.1), "other_agent_id"),
    ("empty agent", ("", "bob", 0.1), "agent_id"),
    ("empty other", ("ann", "", 0.1), "agent_id"),
    ("not a string", (3, "bob", 0.1), "agent_id"),
    ("overlong", ("a" * 65, "bob", 0.1), "agent_id"),
    ("unknown kind", ("ann", "bob", 0.1, None, "duel"), "kind"),
    ("unhashable kind", ("ann", "bob", 0.1, None, ["gift"]), "kind"),
    ("zero weight", ("ann", "bob", 0.1, None, "gift", 0.0), "weight"),
    ("huge weight", ("ann", "bob", 0.1, None, "gift", 1e9), "weight"),
    ("nan weight", ("ann", "bob", 0.1, None, "gift", math.nan), "weight"),
    ("bad now", ("ann", "bob", 0.1, -1), "now"),
    ("source on a direct one", ("ann", "bob", 0.1, None, "help", 1.0, "cid"), "source"),
    ("chain on a direct one", ("ann", "bob", 0.1, None, "help", 1.0, None, ["c"]), "source"),
    ("hearsay without source", ("ann", "bob", 0.1, None, "hearsay"), "source"),
    ("chain too deep", ("ann", "bob", 0.1, None, "hearsay", 1.0, "c", ["d", "e", "f"]),
     "chain"),
    ("chain names the agent", ("ann", "bob", 0.1, None, "hearsay", 1.0, "c", ["ann"]),
     "chain"),
    ("chain repeats", ("ann", "bob", 0.1, None, "hearsay", 1.0, "c", ["c"]), "chain"),
    ("chain a string", ("ann", "bob", 0.1, None, "hearsay", 1.0, "c", "dee"), "chain"),
    ("unknown key", {"agent_id": "a", "other_agent_id": "b", "sentiment": 0.1, "x": 1},
     "interaction"),
    ("key twice", {"agent_id": "a", "agentId": "a", "other_agent_id": "b", "sentiment": 0},
     "agent_id"),
    ("missing sentiment", {"agent_id": "a", "other_agent_id": "b"}, "sentiment"),
    ("short tuple", ("ann", "bob"), "interaction"),
    ("not an item", 5, "interaction"),
]


@pytest.mark.parametrize(("label", "item", "field"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_item_raises_with_its_index_and_field(label: str, item: Any,
                                                    field: str) -> None:
    with pytest.raises(InputInvalidError) as info:
        parse([("x", "y", 0.0), item])
    assert info.value.code is ErrorCode.MEMORY_INPUT_INVALID
    assert info.value.details["index"] == 1
    assert info.value.details["field"] == field
    assert info.value.message.startswith("item 1: ")


@pytest.mark.parametrize("items", ["ann", {"agent_id": "a"}, 5, b"xy"])
def test_a_batch_must_be_a_list(items: Any) -> None:
    with pytest.raises(InputInvalidError, match="interactions must be a list"):
        parse(items)


def test_a_batch_with_one_bad_item_changes_nothing() -> None:
    engine = MemoryEngine(MemoryConfig())
    engine.interact("ann", "bob", 0.5, now=1)
    before = engine.state_hash()
    events: list[Any] = []
    engine.bus.subscribe("*", events.append)
    good = [("ann", "cid", 0.5), ("bob", "ann", -0.9)] * 20
    for bad in [("ann", "bob", math.nan), ("ann", "ann", 0.1), ("ann", SECRET, 0.2)]:
        with pytest.raises(InputInvalidError) as info:
            engine.interact_many([*good, bad], now=2)
        assert SECRET not in str(info.value) and SECRET not in repr(info.value.details)
    assert engine.state_hash() == before and events == []
    assert engine.opinion("ann", "cid").count == 0
    engine._check()


def test_private_ids_are_refused_everywhere_in_redaction_mode() -> None:
    engine = MemoryEngine(MemoryConfig())
    calls: list[Callable[[], object]] = [
        lambda: engine.interact(SECRET, "bob", 0.1),
        lambda: engine.interact("bob", SECRET, 0.1),
        lambda: engine.hear("bob", "ann", source=SECRET, sentiment=0.1),
        lambda: engine.hear("bob", "ann", source="cid", chain=[SECRET], sentiment=0.1),
        lambda: engine.opinion("bob", SECRET),
        lambda: engine.acquaintances(SECRET, 3),
    ]
    for call in calls:
        with pytest.raises(InputInvalidError) as info:
            call()
        assert SECRET not in str(info.value)
        assert "private data" in info.value.message
    assert engine.state_hash() == MemoryEngine(MemoryConfig()).state_hash()
    off = MemoryEngine(MemoryConfig(redaction_mode=False))
    off.interact("bob", SECRET, 0.1)  # redaction mode off: ids are the host's business
    assert off.opinion("bob", SECRET).count == 1
