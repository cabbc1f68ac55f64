from __future__ import annotations

from typing import Any

import pytest

from f09_memory.errors import MemoryEngineError
from f09_memory.ingestion.pipeline import simple_pending, validate_mapping
from f09_memory.schema.enums import MemoryLayer

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
