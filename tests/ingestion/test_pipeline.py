from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from f09_memory.core.frames import _item_by_item, group_frame
from f09_memory.errors import MemoryEngineError
from f09_memory.ingestion.frame_checks import simple_batch
from f09_memory.ingestion.validation import (
    DEFAULT_LIMITS,
    ItemLimits,
    _parse_metadata,
    simple_pending,
    validate_agent_id,
    validate_mapping,
)
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.records import RecordMetadata

ITEMS: list[Any] = [
    {"content": "saw the smith"},
    {"content": "saw the smith", "importance": 0.5, "tags": ["t", " u ", "t"]},
    {"content": "x", "layer": "semantic", "ttl": 5, "flagged": True, "source_event": "ev"},
    {"content": "x", "layer": MemoryLayer.SOCIAL, "tags": ("a",), "importance": 1.0},
    {"content": "x", "importance": None, "tags": None, "ttl": None, "source_event": None},
    {"content": "x", "importance": 1},
    {"content": "x", "importance": True},
    {"content": "x", "importance": 1.5},
    {"content": "x", "importance": float("nan")},
    {"content": "x", "tags": ["ok", ""]},
    {"content": "x", "tags": ["ok", "  "]},
    {"content": "x", "tags": ["ok", 3]},
    {"content": "x", "tags": "tag"},
    {"content": "x", "tags": {"b", "a"}},
    {"content": "x", "layer": None},
    {"content": "x", "layer": "nope"},
    {"content": "x", "ttl": 0},
    {"content": "x", "ttl": True},
    {"content": "x", "ttl": 2**62},
    {"content": "x", "flagged": None},
    {"content": "x", "flagged": 1},
    {"content": "x", "source_event": 3},
    {"content": "x", "metadata": {"tags": ["m"]}},
    {"content": "x", "bogus": 1},
    {"content": ""},
    {"content": " \t\n\u2003"},
    {"content": None},
    {"content": "y" * 70_000},
    {"importance": 0.5},
    "a bare string",
    ["not", "a", "mapping"],
]


@pytest.mark.parametrize("item", ITEMS)
def test_simple_pending_accepts_only_what_validation_accepts_and_agrees(item: Any) -> None:
    fast = simple_pending(item)
    try:
        full = validate_mapping(item)
    except MemoryEngineError:
        assert fast is None
        return
    assert fast is None or full == fast


def test_simple_pending_of_a_batch_item_ignores_its_agent_id() -> None:
    item = {"agent_id": "npc", "content": "x", "importance": 0.25}
    assert simple_pending(item) is None
    assert validate_mapping({"content": "x", "importance": 0.25}) == simple_pending(item, True)


SMALL = ItemLimits(content=16, agent_id=8, tag=4, tags=2, source_event=8, attribute=8,
                   attributes=2)
"""A non-default limits config: the frame's checks must read the limits they are given."""


def _one_by_one(items: list[Any], limits: ItemLimits) -> tuple[list[str], list[Any]] | None:
    """``ingest_batch``'s item-by-item fast path: simple_pending, then the agent id's check."""
    agents, pending = [], []
    for raw in items:
        found = simple_pending(raw, True, limits)
        agent_id = raw.get("agent_id") if found is not None else None
        if found is None or type(agent_id) is not str or not (
                0 < len(agent_id) <= limits.agent_id) or not agent_id.isascii():
            return None
        agents.append(agent_id)
        pending.append(found)
    return agents, pending


def _full(items: list[Any], limits: ItemLimits) -> tuple[list[str], list[Any]] | None:
    """The full validation of each item (its agent id, then the rest); None if one fails."""
    agents, pending = [], []
    for raw in items:
        body = dict(raw)
        try:
            agents.append(validate_agent_id(body.pop("agent_id", None), limits.agent_id))
            pending.append(validate_mapping(body, limits))
        except MemoryEngineError:
            return None
    return agents, pending


AGENT_IDS = ["npc-1", "npc-2", "n" * 8, "n" * 9, "", "x" * 256, "x" * 257, 7, None,
             "bob@example.com", "\u00e9mile", "npc\ud800", "\udc80", "\u00df" * 8]
"""Valid, empty, at and past either limit, not a string, private-looking (refused only for a
new agent in redaction mode, by the writer), non-ASCII, lone surrogates."""
CONTENTS = ["saw the smith", "c" * 16, "c" * 17, "y" * 65_536, "y" * 65_537, "", " \t",
            "\u2003", "caf\u00e9 au lait", "bad \ud800 text", "\udfff", None, 3, b"bytes"]
FRAME_ITEMS = st.fixed_dictionaries(
    {"agent_id": st.sampled_from(AGENT_IDS)},
    optional={
        "content": st.sampled_from(CONTENTS),
        "importance": st.sampled_from([0.0, 0.5, 1.0, -0.0, 1.5, float("nan"), None, 1,
                                       True, float("inf")]),
        "tags": st.just(["t"]),
    },
)


@settings(max_examples=300)
@given(st.lists(FRAME_ITEMS, max_size=5), st.sampled_from([DEFAULT_LIMITS, SMALL]))
def test_simple_batch_agrees_with_the_item_by_item_checks(items: list[Any],
                                                          limits: ItemLimits) -> None:
    fast = simple_batch(items, limits)
    slow = _one_by_one(items, limits)
    assert fast is None or fast == slow
    if fast is not None:  # what the frame accepts, the full validation accepts, equal
        assert fast == _full(items, limits)
    if slow is not None and items and all(set(item) <= {"agent_id", "content", "importance"}
                                          for item in items):
        assert fast == slow  # a frame of the plain shape takes the fast path


def test_simple_batch_sends_other_text_and_oversized_fields_to_the_full_validation() -> None:
    plain = {"agent_id": "npc", "content": "x"}
    assert simple_batch([plain], SMALL) is not None
    for item in ({**plain, "agent_id": "\u00e9mile"}, {**plain, "agent_id": "npc\ud800"},
                 {**plain, "content": "caf\u00e9"}, {**plain, "content": "x\udc80"},
                 {**plain, "agent_id": "n" * 9}, {**plain, "content": "c" * 17}):
        assert simple_batch([plain, item], SMALL) is None
    assert simple_batch([{**plain, "agent_id": "n" * 9}]) is not None  # default limits
    assert simple_batch([{**plain, "content": "c" * 17}]) is not None


def test_simple_batch_takes_only_a_non_empty_list_of_plain_dicts() -> None:
    item = {"agent_id": "npc", "content": "x", "importance": 0.25}
    assert (["npc"], [simple_pending(item, True)]) == simple_batch([item])
    assert simple_batch((item,)) is None
    assert simple_batch(iter([item])) is None
    assert simple_batch([]) is None
    assert simple_batch([item, ["not", "a", "mapping"]]) is None
    assert simple_batch([{"content": "x", "importance": 0.25}]) is None
    rich = {"agent_id": "npc", "content": "x", "layer": "semantic", "tags": ["a", "b", "a"],
            "flagged": True}
    assert (["npc", "npc"], [simple_pending(item, True), simple_pending(rich, True)]) == (
        simple_batch([item, rich]))
    other = {"agent_id": "npc", "content": "x", "ttl": 5}  # left to the full validation
    assert (["npc", None], [simple_pending(item, True), None]) == simple_batch([item, other])
    assert simple_batch([other]) is None
    for bad in ({**rich, "layer": None}, {**rich, "layer": "dream"}, {**rich, "tags": "a"},
                {**rich, "tags": [" a"]}, {**rich, "tags": ["caf\u00e9"]},
                {**rich, "tags": ["a", 1]}, {**rich, "flagged": 1}):
        assert simple_batch([item, bad, other]) is None  # the frame goes item by item


FRAME_METADATA = [
    {"attributes": {"with": "npc-2"}}, {"attributes": {"with": "npc-3", "n": 2}},
    {"attributes": {"n": 1}}, {"attributes": {"n": 1.0}}, {"attributes": {"n": True}},
    {"attributes": {"n": 0.0}}, {"attributes": {"n": -0.0}}, {"attributes": {"n": 2**63 - 1}},
    {"attributes": {"n": -2**63}}, {"attributes": {"n": 2**63}}, {"attributes": {"": "x"}},
    {"attributes": {}}, {"attributes": {"n": float("nan")}}, {"attributes": {"n": float("inf")}},
    {"attributes": {"with": "caf\u00e9"}}, {"attributes": {"caf\u00e9": 1}},
    {"attributes": {"with": "x\ud800"}}, {"attributes": {"with": "longer-than-8"}},
    {"attributes": {"a": 1, "b": 2, "c": 3}}, {"attributes": {1: "x"}},
    {"attributes": {"a": [1]}}, {"attributes": {"a": None}}, {"attributes": None},
    {"attributes": {"with": "npc-2"}, "tags": ["m"]}, {"tags": ["m"]}, {}, None, [],
    {"social": {"otherAgentId": "npc-2"}}]
"""Metadata of every shape near the column path's: attributes only (the path), values at and
past each limit and type boundary, non-ASCII and invalid text, other metadata fields."""


RICH_ITEMS = st.fixed_dictionaries(
    {"agent_id": st.sampled_from([*AGENT_IDS[:4], 7, "\u00e9mile"])},
    optional={
        "content": st.sampled_from([*CONTENTS[:3], "", "caf\u00e9", None]),
        "importance": st.sampled_from([0.5, None, 1.5]),
        "layer": st.sampled_from(["semantic", "episodic", "social", None, "dream",
                                  MemoryLayer.PROCEDURAL]),
        "tags": st.sampled_from([None, [], ["t"], ["t", "u", "t"], ("a",), [" t"], ["\u00e9"],
                                 ["t"] * 3, ["long-tag"], "t", [1], [""]]),
        "flagged": st.sampled_from([True, False, None, 1]),
        "ttl": st.sampled_from([5, 0]),
        "metadata": st.sampled_from([*FRAME_METADATA, {"bad": 1}]),
        "source_event": st.sampled_from(["e1", 3]),
    },
)


VALID_ITEMS = st.fixed_dictionaries(
    {"agent_id": st.sampled_from(AGENT_IDS[:3]), "content": st.sampled_from(CONTENTS[:2])},
    optional={
        "importance": st.sampled_from([0.5, None]),
        "layer": st.sampled_from(["semantic", "episodic", MemoryLayer.SOCIAL]),
        "tags": st.sampled_from([None, [], ["t"], ["t", "u", "t"], ("a",)]),
        "flagged": st.booleans(),
        "ttl": st.just(5),
        "metadata": st.sampled_from(FRAME_METADATA[:12]),
    },
)
"""Mostly valid items: frames of them take the column path (with some items left to the
full validation); RICH_ITEMS mixed in make some frames fall back."""


def _grouped(items: list[Any], limits: ItemLimits, fast: bool) -> Any:
    try:
        if fast:
            groups, owners = group_frame(items, limits)
            return {agent_id: list(run) for agent_id, run in groups.items()}, owners
        groups: dict[str, list[Any]] = {}
        owners = []
        for agent_id, pending in _item_by_item(items, limits, None):
            groups.setdefault(agent_id, []).append(pending)
            owners.append(agent_id)
        return groups, owners
    except MemoryEngineError as exc:
        return exc.code, exc.details.get("index"), exc.message


@settings(max_examples=400)
@given(st.lists(st.one_of(VALID_ITEMS, VALID_ITEMS, VALID_ITEMS, RICH_ITEMS), min_size=1,
                max_size=6), st.sampled_from([DEFAULT_LIMITS, SMALL]))
def test_a_frame_checked_by_columns_groups_as_item_by_item(items: list[Any],
                                                            limits: ItemLimits) -> None:
    """Plain items checked by columns and the others in full: the same groups, or the same
    error about the same item, as checking every item in turn."""
    assert _grouped(items, limits, True) == _grouped(items, limits, False)


@pytest.mark.parametrize("limits", [DEFAULT_LIMITS, SMALL])
@pytest.mark.parametrize("metadata", FRAME_METADATA)
def test_metadata_checked_by_columns_is_what_the_full_validation_makes_of_it(
        metadata: Any, limits: ItemLimits) -> None:
    """Each metadata shape next to a plain item and alone: the same groups, or the same
    error about the same item, as item by item; attributes only take the column path."""
    plain = {"agent_id": "npc-1", "content": "saw the smith", "importance": 0.5}
    item = {"agent_id": "npc-2", "content": "traded", "tags": ["t"], "metadata": metadata}
    for items in ([plain, item, plain], [item, dict(item)]):
        assert _grouped(items, limits, True) == _grouped(items, limits, False)
    batch = simple_batch([plain, item], limits)
    assert batch is not None
    try:
        full = validate_mapping({k: v for k, v in item.items() if k != "agent_id"}, limits)
    except MemoryEngineError:
        assert batch[1][1] is None  # left to the full validation, which refuses it
        return
    assert batch[1][1] is None or full == batch[1][1]


_ATTRIBUTE_VALUES = st.one_of(
    st.text(max_size=5), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.none(), st.lists(st.integers(), max_size=2))
_METADATA = st.one_of(
    st.dictionaries(st.just("attributes"), st.dictionaries(
        st.one_of(st.text(max_size=4), st.integers(0, 3)), _ATTRIBUTE_VALUES, max_size=4)),
    st.dictionaries(st.sampled_from(["attributes", "tags", "flagged", "sourceEvent", "other"]),
                    st.one_of(st.dictionaries(st.text(max_size=3), _ATTRIBUTE_VALUES,
                                              max_size=2), st.lists(st.text(max_size=3),
                                                                    max_size=2),
                              st.booleans(), st.none()), max_size=3),
    st.just({"attributes": None}), st.just([("attributes", {})]))


def _described(meta: object) -> object:
    """A model's fields with each value's type (True == 1 and nan != nan hide changes)."""
    assert isinstance(meta, RecordMetadata)
    return [(name, type(value).__name__, repr(value)) for name, value in
            [*((n, getattr(meta, n)) for n in RecordMetadata.model_fields if n != "attributes"),
             *sorted(meta.attributes.items())]]


@settings(max_examples=400, deadline=None)
@given(_METADATA)
def test_metadata_of_attributes_only_is_built_as_pydantic_validates_it(metadata: object) -> None:
    """The attributes-only shortcut gives pydantic's model, or pydantic's error."""
    try:
        expected: object = _described(RecordMetadata.parse(metadata))
    except MemoryEngineError as exc:
        expected = (exc.code, str(exc))
    try:
        got: object = _described(_parse_metadata(metadata))
    except MemoryEngineError as exc:
        got = (exc.code, str(exc))
    assert got == expected
