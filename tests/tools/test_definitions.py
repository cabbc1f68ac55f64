"""memory_write / memory_search definitions (seed 001) and argument validation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from f09_memory.errors import ErrorCode, InputInvalidError
from f09_memory.tools import (
    MEMORY_SEARCH,
    MEMORY_SEARCH_LIMIT_DEFAULT,
    MEMORY_SEARCH_LIMIT_MAX,
    MEMORY_SEARCH_LIMIT_MIN,
    MEMORY_WRITE,
    MEMORY_WRITE_MAX_KEYWORDS,
    TOOL_NAMES,
    tool_definitions,
    tool_input_schema,
    validate_tool_arguments,
)

_SUPPORTED_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "minLength",
    "maxLength", "pattern", "minimum", "maximum", "maxItems", "default", "description",
}


def _assert_schema_shaped(schema: Any) -> None:
    assert isinstance(schema, dict)
    assert set(schema) <= _SUPPORTED_KEYWORDS
    assert schema["type"] in {"object", "string", "array", "integer"}
    if schema["type"] == "object":
        assert set(schema["required"]) <= set(schema["properties"])
        assert schema["additionalProperties"] is False
        for prop in schema["properties"].values():
            assert isinstance(prop["description"], str) and prop["description"]
            _assert_schema_shaped(prop)
    if schema["type"] == "array":
        _assert_schema_shaped(schema["items"])


def test_openai_format_shape() -> None:
    tools = tool_definitions("openai")
    assert [t["function"]["name"] for t in tools] == [MEMORY_WRITE, MEMORY_SEARCH]
    for tool in tools:
        assert set(tool) == {"type", "function"} and tool["type"] == "function"
        assert set(tool["function"]) == {"name", "description", "parameters"}
        assert tool["function"]["description"]
        _assert_schema_shaped(tool["function"]["parameters"])


def test_anthropic_format_shape() -> None:
    tools = tool_definitions("anthropic")
    assert [t["name"] for t in tools] == list(TOOL_NAMES)
    for tool in tools:
        assert set(tool) == {"name", "description", "input_schema"}
        _assert_schema_shaped(tool["input_schema"])


def test_default_format_is_openai() -> None:
    assert tool_definitions() == tool_definitions("openai")


def test_both_formats_hold_the_same_schemas() -> None:
    openai = [t["function"]["parameters"] for t in tool_definitions("openai")]
    anthropic = [t["input_schema"] for t in tool_definitions("anthropic")]
    assert openai == anthropic == [tool_input_schema(n) for n in TOOL_NAMES]


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_definitions_survive_a_json_round_trip(fmt: str) -> None:
    tools = tool_definitions(fmt)  # type: ignore[arg-type]
    assert json.loads(json.dumps(tools)) == tools


def test_seed_parameter_names_and_constraints() -> None:
    write = tool_input_schema(MEMORY_WRITE)
    assert write["required"] == ["content"]
    assert set(write["properties"]) == {"content", "keywords"}
    assert write["properties"]["keywords"]["items"]["type"] == "string"
    assert write["properties"]["keywords"]["maxItems"] == MEMORY_WRITE_MAX_KEYWORDS
    search = tool_input_schema(MEMORY_SEARCH)
    assert search["required"] == ["query"]
    limit = search["properties"]["limit"]
    assert (limit["type"], limit["minimum"], limit["maximum"], limit["default"]) == (
        "integer", MEMORY_SEARCH_LIMIT_MIN, MEMORY_SEARCH_LIMIT_MAX,
        MEMORY_SEARCH_LIMIT_DEFAULT,
    )


def test_returned_definitions_are_fresh_copies() -> None:
    first = tool_definitions("anthropic")
    first[0]["input_schema"]["required"].append("hacked")
    assert tool_definitions("anthropic")[0]["input_schema"]["required"] == ["content"]


def test_unknown_format_raises_input_invalid() -> None:
    with pytest.raises(InputInvalidError) as info:
        tool_definitions("gemini")  # type: ignore[arg-type]
    assert info.value.code is ErrorCode.MEMORY_INPUT_INVALID
    assert info.value.details["field"] == "format"


# --- validate_tool_arguments -------------------------------------------------------------


def test_valid_write_arguments_are_returned_with_defaults() -> None:
    args = {"content": "user favorite color is blue", "keywords": ["favorite", "color"]}
    assert validate_tool_arguments(MEMORY_WRITE, args) == args
    assert validate_tool_arguments(MEMORY_WRITE, {"content": "x"}) == {
        "content": "x", "keywords": []
    }


def test_valid_search_arguments_from_a_json_string() -> None:
    assert validate_tool_arguments(MEMORY_SEARCH, '{"query": "blue", "limit": 3}') == {
        "query": "blue", "limit": 3
    }
    assert validate_tool_arguments(MEMORY_SEARCH, {"query": "blue"})["limit"] == 5
    assert validate_tool_arguments(MEMORY_SEARCH, {"query": "q", "limit": 3.0})["limit"] == 3


def test_validation_does_not_mutate_its_input() -> None:
    args = {"content": "x", "keywords": ("a", "b")}
    result = validate_tool_arguments(MEMORY_WRITE, args)
    assert result["keywords"] == ["a", "b"]
    assert args == {"content": "x", "keywords": ("a", "b")}


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        (MEMORY_WRITE, {}, "content"),
        (MEMORY_WRITE, None, "content"),
        (MEMORY_WRITE, "", "content"),
        (MEMORY_WRITE, {"keywords": ["a"]}, "content"),
        (MEMORY_WRITE, {"content": 42}, "content"),
        (MEMORY_WRITE, {"content": "   "}, "content"),
        (MEMORY_WRITE, {"content": ""}, "content"),
        (MEMORY_WRITE, {"content": "x", "keywords": "blue"}, "keywords"),
        (MEMORY_WRITE, {"content": "x", "keywords": ["ok", 3]}, "keywords[1]"),
        (MEMORY_WRITE, {"content": "x", "keywords": ["ok", " "]}, "keywords[1]"),
        (MEMORY_WRITE, {"content": "x", "keywords": ["k"] * 21}, "keywords"),
        (MEMORY_WRITE, {"content": "x", "importance": 9}, "importance"),
        (MEMORY_SEARCH, {}, "query"),
        (MEMORY_SEARCH, {"query": None}, "query"),
        (MEMORY_SEARCH, {"query": "q", "limit": 0}, "limit"),
        (MEMORY_SEARCH, {"query": "q", "limit": 21}, "limit"),
        (MEMORY_SEARCH, {"query": "q", "limit": -1}, "limit"),
        (MEMORY_SEARCH, {"query": "q", "limit": "5"}, "limit"),
        (MEMORY_SEARCH, {"query": "q", "limit": True}, "limit"),
        (MEMORY_SEARCH, {"query": "q", "limit": 2.5}, "limit"),
        (MEMORY_SEARCH, '{"query": ', "arguments"),
        (MEMORY_SEARCH, "[1, 2]", "arguments"),
        (MEMORY_SEARCH, ["query"], "arguments"),
        ("memory_delete", {"id": "m-1"}, "name"),
    ],
)
def test_bad_arguments_raise_input_invalid_naming_the_field(
    name: str, arguments: Any, field: str
) -> None:
    with pytest.raises(InputInvalidError) as info:
        validate_tool_arguments(name, arguments)
    assert info.value.code is ErrorCode.MEMORY_INPUT_INVALID
    assert info.value.details["field"] == field
    assert field.split("[")[0] in info.value.message


def test_unknown_tool_for_schema_lookup_raises_input_invalid() -> None:
    with pytest.raises(InputInvalidError):
        tool_input_schema("memory_forget")


SECRET = "bob.bryce@mill.example.com"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        (MEMORY_WRITE, {"content": 42, "keywords": [SECRET]}),
        (MEMORY_WRITE, {"content": "x", "keywords": [SECRET, 5]}),
        (MEMORY_WRITE, {"content": "x", SECRET: 1}),
        (MEMORY_SEARCH, {"query": "q", "limit": SECRET}),
        (MEMORY_SEARCH, '{"query": "' + SECRET),
        (MEMORY_SEARCH, [SECRET]),
        (SECRET, {}),
    ],
)
def test_errors_never_echo_an_argument_or_a_name(name: str, arguments: Any) -> None:
    with pytest.raises(InputInvalidError) as info:
        validate_tool_arguments(name, arguments)
    assert SECRET not in str(info.value) and SECRET not in str(info.value.details)
    assert SECRET not in repr(info.value.__cause__)
