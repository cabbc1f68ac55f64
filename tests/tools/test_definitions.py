"""memory_write / memory_search schemas (seed 001), their size limits, argument validation."""

from __future__ import annotations

from typing import Any

import pytest

from f09_memory import MemoryConfig
from f09_memory.errors import ErrorCode, InputInvalidError
from f09_memory.tools import (
    MEMORY_SEARCH,
    MEMORY_SEARCH_LIMIT_DEFAULT,
    MEMORY_SEARCH_LIMIT_MAX,
    MEMORY_SEARCH_LIMIT_MIN,
    MEMORY_SEARCH_MAX_QUERY_CHARS,
    MEMORY_WRITE,
    MEMORY_WRITE_MAX_CONTENT_CHARS,
    MEMORY_WRITE_MAX_KEYWORD_CHARS,
    MEMORY_WRITE_MAX_KEYWORDS,
    TOOL_NAMES,
    ToolLimits,
    tool_description,
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


WRITE_SCHEMA = {
    "type": "object",
    "properties": {
        "content": {
            "type": "string",
            "minLength": 1,
            "maxLength": 65_536,
            "pattern": r"\S",
            "description": "The memory to store: one compact, self-contained statement "
                           "(at most 65,536 characters).",
        },
        "keywords": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 253, "pattern": r"\S"},
            "maxItems": 20,
            "default": [],
            "description": "Optional search keywords for the entry (at most 20, each at most "
                           "253 characters).",
        },
    },
    "required": ["content"],
    "additionalProperties": False,
}
SEARCH_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": 4_096,
            "pattern": r"\S",
            "description": "Words to look for in stored memories (at most 4,096 characters).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 20,
            "default": 5,
            "description": "Maximum number of entries to return (1-20, default 5).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


def test_canonical_schemas_are_exact() -> None:
    assert WRITE_SCHEMA == tool_input_schema(MEMORY_WRITE)
    assert SEARCH_SCHEMA == tool_input_schema(MEMORY_SEARCH)
    for name in TOOL_NAMES:
        _assert_schema_shaped(tool_input_schema(name))


def test_limit_constants_are_the_engine_limits() -> None:
    config = MemoryConfig()
    assert config.max_content_chars == MEMORY_WRITE_MAX_CONTENT_CHARS == 65_536
    assert config.max_tag_chars - len("kw:") == MEMORY_WRITE_MAX_KEYWORD_CHARS
    assert (MEMORY_SEARCH_LIMIT_MIN, MEMORY_SEARCH_LIMIT_MAX, MEMORY_SEARCH_LIMIT_DEFAULT) == (
        1, 20, 5)
    assert 20 == MEMORY_WRITE_MAX_KEYWORDS and 4_096 == MEMORY_SEARCH_MAX_QUERY_CHARS
    assert ToolLimits() == ToolLimits.of(None) == ToolLimits.of(config)


def test_a_config_sets_the_schema_limits() -> None:
    config = MemoryConfig(max_content_chars=1_000, max_tag_chars=13, max_tags_per_record=4)
    assert ToolLimits(1_000, 10, 4, 4_096) == ToolLimits.of(config)
    write = tool_input_schema(MEMORY_WRITE, config=config)["properties"]
    assert (1_000, 10, 4) == (write["content"]["maxLength"],
                              write["keywords"]["items"]["maxLength"],
                              write["keywords"]["maxItems"])
    assert "(at most 1,000 characters)" in write["content"]["description"]
    no_keyword = ToolLimits.of(MemoryConfig(max_tag_chars=3))  # "kw:" alone fills the tag
    assert 0 == no_keyword.keywords


def test_bad_config_raises_input_invalid() -> None:
    with pytest.raises(InputInvalidError) as info:
        tool_input_schema(MEMORY_WRITE, config={"max_content_chars": 5})  # type: ignore[arg-type]
    assert "config" == info.value.details["field"]


def test_descriptions_name_the_dedup_rule() -> None:
    assert "stores nothing new" in tool_description(MEMORY_WRITE)
    assert tool_description(MEMORY_SEARCH).startswith("Search long-term memory")
    with pytest.raises(InputInvalidError):
        tool_description("memory_delete")


def test_returned_schemas_are_fresh_copies() -> None:
    first = tool_input_schema(MEMORY_WRITE)
    first["required"].append("hacked")
    first["properties"]["keywords"]["default"].append("x")
    assert WRITE_SCHEMA == tool_input_schema(MEMORY_WRITE)


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


def test_null_for_an_optional_argument_means_absent() -> None:
    assert {"query": "q", "limit": 5} == validate_tool_arguments(
        MEMORY_SEARCH, {"query": "q", "limit": None})
    assert {"content": "x", "keywords": []} == validate_tool_arguments(
        MEMORY_WRITE, '{"content": "x", "keywords": null}')


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        (MEMORY_WRITE, {"content": None}, "content"),
        (MEMORY_WRITE, '{"content": null, "keywords": null}', "content"),
        (MEMORY_SEARCH, '{"query": null, "limit": 3}', "query"),
    ],
)
def test_null_for_a_required_argument_is_rejected(name: str, arguments: Any, field: str) -> None:
    with pytest.raises(InputInvalidError) as info:
        validate_tool_arguments(name, arguments)
    assert field == info.value.details["field"]
    assert "cannot be null" in info.value.message


def test_arguments_at_the_limits_pass() -> None:
    at_limit = {"content": "x" * MEMORY_WRITE_MAX_CONTENT_CHARS,
                "keywords": ["k" * MEMORY_WRITE_MAX_KEYWORD_CHARS] * MEMORY_WRITE_MAX_KEYWORDS}
    assert at_limit == validate_tool_arguments(MEMORY_WRITE, at_limit)
    query = "q" * MEMORY_SEARCH_MAX_QUERY_CHARS
    assert query == validate_tool_arguments(MEMORY_SEARCH, {"query": query})["query"]


@pytest.mark.parametrize(
    ("name", "arguments", "field", "words"),
    [
        (MEMORY_WRITE, {"content": "x" * 65_537}, "content", "at most 65,536 characters"),
        (MEMORY_WRITE, {"content": " " * 70_000}, "content", "at most 65,536 characters"),
        (MEMORY_WRITE, {"content": "x", "keywords": ["k" * 254]}, "keywords[0]",
         "at most 253 characters"),
        (MEMORY_WRITE, {"content": "x", "keywords": ["k"] * 21}, "keywords",
         "at most 20 items"),
        (MEMORY_SEARCH, {"query": "q" * 4_097}, "query", "at most 4,096 characters"),
    ],
)
def test_arguments_past_the_limits_are_rejected(
    name: str, arguments: Any, field: str, words: str
) -> None:
    with pytest.raises(InputInvalidError) as info:
        validate_tool_arguments(name, arguments)
    assert field == info.value.details["field"]
    assert words in info.value.message


def test_a_config_limit_applies_to_validation() -> None:
    config = MemoryConfig(max_content_chars=10)
    assert "0123456789" == validate_tool_arguments(
        MEMORY_WRITE, {"content": "0123456789"}, config=config)["content"]
    with pytest.raises(InputInvalidError) as info:
        validate_tool_arguments(MEMORY_WRITE, {"content": "0123456789A"}, config=config)
    assert "at most 10 characters" in info.value.message


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
