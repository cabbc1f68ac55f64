"""The memory tools in each wire format: exact shapes, strict mode, Gemini, bad formats."""

from __future__ import annotations

import doctest
import json
from typing import Any

import pytest

from f09_memory import MemoryConfig
from f09_memory.errors import ErrorCode, InputInvalidError
from f09_memory.tools import (
    MEMORY_SEARCH,
    MEMORY_WRITE,
    STRICT_TOOL_FORMATS,
    TOOL_FORMATS,
    TOOL_NAMES,
    gemini_schema,
    strict_schema,
    tool_definitions,
    tool_description,
    tool_input_schema,
)

WRITE_DESCRIPTION = tool_description(MEMORY_WRITE)
SEARCH_DESCRIPTION = tool_description(MEMORY_SEARCH)
CONTENT = "The memory to store: one compact, self-contained statement (at most 65,536 characters)."
KEYWORDS = "Optional search keywords for the entry (at most 20, each at most 253 characters)."
QUERY = "Words to look for in stored memories (at most 4,096 characters)."
LIMIT = "Maximum number of entries to return (1-20, default 5)."

STRICT_WRITE = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "description": CONTENT},
        "keywords": {"type": ["array", "null"], "items": {"type": "string"}, "maxItems": 20,
                     "description": KEYWORDS},
    },
    "required": ["content", "keywords"],
    "additionalProperties": False,
}
STRICT_SEARCH = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": QUERY},
        "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 20,
                  "description": LIMIT},
    },
    "required": ["query", "limit"],
    "additionalProperties": False,
}
GEMINI_WRITE = {
    "type": "OBJECT",
    "properties": {
        "content": {"type": "STRING", "minLength": 1, "maxLength": 65_536,
                    "description": CONTENT},
        "keywords": {"type": "ARRAY",
                     "items": {"type": "STRING", "minLength": 1, "maxLength": 253},
                     "maxItems": 20, "description": KEYWORDS},
    },
    "required": ["content"],
}
GEMINI_SEARCH = {
    "type": "OBJECT",
    "properties": {
        "query": {"type": "STRING", "minLength": 1, "maxLength": 4_096, "description": QUERY},
        "limit": {"type": "INTEGER", "minimum": 1, "maximum": 20, "description": LIMIT},
    },
    "required": ["query"],
}
GEMINI_SCHEMA_FIELDS = {
    # google-genai 3.4 types.Schema, camelCase (its model forbids any other key)
    "anyOf", "default", "defs", "description", "enum", "example", "format", "items",
    "maxItems", "maxLength", "maxProperties", "maximum", "minItems", "minLength",
    "minProperties", "minimum", "nullable", "pattern", "properties", "propertyOrdering",
    "ref", "required", "title", "type",
}


def test_openai_chat_format_is_exact() -> None:
    assert [
        {"type": "function", "function": {"name": MEMORY_WRITE, "description": WRITE_DESCRIPTION,
                                          "parameters": tool_input_schema(MEMORY_WRITE)}},
        {"type": "function", "function": {"name": MEMORY_SEARCH,
                                          "description": SEARCH_DESCRIPTION,
                                          "parameters": tool_input_schema(MEMORY_SEARCH)}},
    ] == tool_definitions("openai")


def test_openai_chat_strict_format_is_exact() -> None:
    assert [
        {"type": "function", "function": {"name": MEMORY_WRITE, "description": WRITE_DESCRIPTION,
                                          "parameters": STRICT_WRITE, "strict": True}},
        {"type": "function", "function": {"name": MEMORY_SEARCH,
                                          "description": SEARCH_DESCRIPTION,
                                          "parameters": STRICT_SEARCH, "strict": True}},
    ] == tool_definitions("openai", strict=True)


@pytest.mark.parametrize("strict", [False, True])
def test_openai_responses_format_is_flat_and_always_says_strict(strict: bool) -> None:
    write, search = (STRICT_WRITE, STRICT_SEARCH) if strict else (
        tool_input_schema(MEMORY_WRITE), tool_input_schema(MEMORY_SEARCH))
    assert [
        {"type": "function", "name": MEMORY_WRITE, "description": WRITE_DESCRIPTION,
         "parameters": write, "strict": strict},
        {"type": "function", "name": MEMORY_SEARCH, "description": SEARCH_DESCRIPTION,
         "parameters": search, "strict": strict},
    ] == tool_definitions("openai_responses", strict=strict)


def test_anthropic_format_is_exact() -> None:
    assert [
        {"name": MEMORY_WRITE, "description": WRITE_DESCRIPTION,
         "input_schema": tool_input_schema(MEMORY_WRITE)},
        {"name": MEMORY_SEARCH, "description": SEARCH_DESCRIPTION,
         "input_schema": tool_input_schema(MEMORY_SEARCH)},
    ] == tool_definitions("anthropic")


def test_gemini_format_is_exact() -> None:
    assert [
        {"name": MEMORY_WRITE, "description": WRITE_DESCRIPTION, "parameters": GEMINI_WRITE},
        {"name": MEMORY_SEARCH, "description": SEARCH_DESCRIPTION, "parameters": GEMINI_SEARCH},
    ] == tool_definitions("gemini")


def _keys(schema: dict[str, Any]) -> set[str]:
    keys = set(schema)
    for prop in schema.get("properties", {}).values():
        keys |= _keys(prop)
    if "items" in schema:
        keys |= _keys(schema["items"])
    return keys


def test_gemini_schemas_use_only_gemini_schema_fields() -> None:
    for decl in tool_definitions("gemini"):
        assert {"name", "description", "parameters"} == set(decl)
        assert _keys(decl["parameters"]) <= GEMINI_SCHEMA_FIELDS
        assert "additionalProperties" not in json.dumps(decl)


def test_strict_schemas_require_every_property_and_use_only_strict_keywords() -> None:
    allowed = {"type", "properties", "required", "additionalProperties", "items", "maxItems",
               "minimum", "maximum", "description"}
    for name in TOOL_NAMES:
        schema = strict_schema(tool_input_schema(name))
        assert list(schema["properties"]) == schema["required"]
        assert schema["additionalProperties"] is False
        assert _keys(schema) <= allowed
        optional = set(schema["properties"]) - set(tool_input_schema(name)["required"])
        for field, prop in schema["properties"].items():
            assert (prop["type"][-1] == "null") == (field in optional)


def test_default_format_is_openai_chat() -> None:
    assert tool_definitions() == tool_definitions("openai")


def test_config_limits_reach_every_format() -> None:
    config = MemoryConfig(max_content_chars=1_000)
    assert 1_000 == tool_definitions("gemini", config=config)[0]["parameters"]["properties"][
        "content"]["maxLength"]
    strict = tool_definitions("openai_responses", strict=True, config=config)
    assert "(at most 1,000 characters)" in strict[0]["parameters"]["properties"]["content"][
        "description"]


@pytest.mark.parametrize("fmt", TOOL_FORMATS)
def test_definitions_survive_a_json_round_trip_and_are_fresh(fmt: Any) -> None:
    tools = tool_definitions(fmt)
    assert json.loads(json.dumps(tools)) == tools
    tools[0].clear()
    assert tool_definitions(fmt)[0]


def test_transforms_do_not_touch_their_input() -> None:
    schema = tool_input_schema(MEMORY_WRITE)
    strict_schema(schema)
    gemini_schema(schema)
    assert tool_input_schema(MEMORY_WRITE) == schema


@pytest.mark.parametrize("fmt", ["cohere", "OpenAI", "", None, 3])
def test_unknown_format_raises_input_invalid(fmt: Any) -> None:
    with pytest.raises(InputInvalidError) as info:
        tool_definitions(fmt)
    assert ErrorCode.MEMORY_INPUT_INVALID is info.value.code
    assert "format" == info.value.details["field"]
    assert "cohere" not in str(info.value.details)


@pytest.mark.parametrize("fmt", sorted(set(TOOL_FORMATS) - set(STRICT_TOOL_FORMATS)))
def test_strict_is_only_for_openai_formats(fmt: Any) -> None:
    with pytest.raises(InputInvalidError) as info:
        tool_definitions(fmt, strict=True)
    assert "strict" == info.value.details["field"]


def test_strict_must_be_a_bool() -> None:
    with pytest.raises(InputInvalidError) as info:
        tool_definitions("openai", strict="yes")  # type: ignore[arg-type]
    assert "strict" == info.value.details["field"]


def test_docstring_examples_run() -> None:
    from f09_memory.tools import definitions, formats

    for module in (definitions, formats):
        result = doctest.testmod(module)
        assert result.attempted >= 2 and 0 == result.failed
