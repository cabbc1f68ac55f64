"""Hostile tool calls: nesting, surrogates, bad contexts. Each is a clean MEMORY_INPUT_INVALID
payload (or error), the engine state is unchanged, and the value is never echoed."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from f09_memory import MemoryEngine
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.tools import ToolContext, execute_tool, execute_tool_json, validate_tool_arguments
from f09_memory.tools.definitions import MAX_ARGUMENT_DEPTH

SECRET = "hunter2-private"


def deep_list(depth: int) -> list[Any]:
    return functools.reduce(lambda inner, _: [inner], range(depth), [])  # depth+1 lists


HOSTILE: dict[str, object] = {
    "json nested 100k": '{"content": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "json array 100k": "[" * 100_000 + "]" * 100_000,
    "json unclosed": "{" * 100_000,
    "json brackets in strings": '{"content": "' + "[" * 100_000 + '", "x": ' + "[" * 40 + "}",
    "mapping nested 100k": {"content": deep_list(100_000)},
    "keywords nested 100k": {"content": "ok", "keywords": deep_list(100_000)},
    "surrogate content": {"content": f"{SECRET}\ud800"},
    "surrogate json escape": '{"content": "' + SECRET + '\\ud800"}',
    "surrogate keyword": {"content": "fine", "keywords": [f"{SECRET}\udc00"]},
    "not json": f"{{content: {SECRET}",
    "unknown key": {"content": "x", SECRET: 1},
    "wrong type": {"content": [SECRET]},
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_arguments_give_a_clean_input_error_and_store_nothing(name: str) -> None:
    engine = MemoryEngine(embedder=None)
    before = engine.state_hash()
    payload = execute_tool(engine, "memory_write", HOSTILE[name])  # type: ignore[arg-type]
    assert {"ok": False, "error": {"code": "MEMORY_INPUT_INVALID",
                                   "message": payload["error"]["message"]}} == payload
    assert SECRET not in payload["error"]["message"]
    assert before == engine.state_hash()
    json.loads(execute_tool_json(engine, "memory_write", HOSTILE[name]))  # type: ignore[arg-type]
    with pytest.raises(MemoryEngineError) as info:
        validate_tool_arguments("memory_write", HOSTILE[name])  # type: ignore[arg-type]
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert SECRET not in str(info.value) and SECRET not in repr(info.value.details)
    engine._check()


def test_arguments_nested_up_to_the_limit_are_parsed_then_checked() -> None:
    shallow = '{"content": "x", "keywords": ' + "[" * (MAX_ARGUMENT_DEPTH - 1) + "]" * (
        MAX_ARGUMENT_DEPTH - 1) + "}"
    with pytest.raises(MemoryEngineError) as info:
        validate_tool_arguments("memory_write", shallow)
    assert "keywords[0]" == info.value.details["field"]  # parsed: the schema check speaks
    assert {"content": "x [a] {b}", "keywords": ["k"]} == validate_tool_arguments(
        "memory_write", '{"content": "x [a] {b}", "keywords": ["k"]}')


@pytest.mark.parametrize("kwargs", [{"now": -1}, {"now": 2**62}, {"now": 10**400},
                                    {"now": 1.0}, {"step_index": 2**62}, {"step_index": -1},
                                    {"session_id": f"{SECRET}\ud800"}, {"call_id": 5}])
def test_a_bad_tool_context_is_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(MemoryEngineError) as info:
        ToolContext("npc", **kwargs)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert SECRET not in str(info.value)


def test_a_tool_context_agent_id_must_be_text() -> None:
    with pytest.raises(MemoryEngineError):
        ToolContext(f"{SECRET}\ud800")
    assert ToolContext("npc", now=2**62 - 1).now == 2**62 - 1
