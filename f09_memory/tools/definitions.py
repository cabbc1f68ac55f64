"""The model-facing memory tools ``memory_write`` and ``memory_search`` (seed 001, 4.6/5.3).

An LLM manages durable memory only through these two tool calls. This module holds their
JSON Schemas (one source of truth), renders them in the OpenAI and Anthropic
function-calling formats (:func:`tool_definitions`), and checks a model's arguments against
the same schemas by hand (:func:`validate_tool_arguments`) — no jsonschema dependency.

Contract (seed 001, section 5.3):

- ``memory_write``: ``content`` (string, required, not blank), ``keywords`` (array of
  non-blank strings, optional, at most :data:`MEMORY_WRITE_MAX_KEYWORDS`).
- ``memory_search``: ``query`` (string, required, not blank), ``limit`` (integer, optional,
  :data:`MEMORY_SEARCH_LIMIT_MIN`..:data:`MEMORY_SEARCH_LIMIT_MAX`, default
  :data:`MEMORY_SEARCH_LIMIT_DEFAULT`).

Unknown argument names are rejected (``additionalProperties: false``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final, Literal

from f09_memory._validate import is_text
from f09_memory.errors import InputInvalidError

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "MEMORY_SEARCH",
    "MEMORY_SEARCH_LIMIT_DEFAULT",
    "MEMORY_SEARCH_LIMIT_MAX",
    "MEMORY_SEARCH_LIMIT_MIN",
    "MEMORY_WRITE",
    "MEMORY_WRITE_MAX_KEYWORDS",
    "TOOL_FORMATS",
    "TOOL_NAMES",
    "ToolFormat",
    "tool_definitions",
    "tool_input_schema",
    "validate_tool_arguments",
]

MEMORY_WRITE: Final = "memory_write"
"""Name of the tool that persists a durable memory entry."""

MEMORY_SEARCH: Final = "memory_search"
"""Name of the tool that searches long-term memory."""

TOOL_NAMES: Final[tuple[str, ...]] = (MEMORY_WRITE, MEMORY_SEARCH)
"""The memory tools, in the order :func:`tool_definitions` lists them."""

MEMORY_WRITE_MAX_KEYWORDS: Final = 20
"""Most keywords one ``memory_write`` call may attach."""

MEMORY_SEARCH_LIMIT_MIN: Final = 1
"""Smallest ``limit`` of ``memory_search``."""

MEMORY_SEARCH_LIMIT_MAX: Final = 20
"""Largest ``limit`` of ``memory_search`` (seed 001: "limit: number (optional, bounded)")."""

MAX_ARGUMENT_DEPTH: Final = 32
"""Deepest nesting of arrays and objects accepted in a JSON argument string (the tools'
arguments nest two levels; a deeper text is rejected before it is parsed)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""An argument name worth naming back (anything else may be data: shown as ``<key>``)."""
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
"""JSON strings (skipped whole, so brackets inside them do not count) and brackets."""

MEMORY_SEARCH_LIMIT_DEFAULT: Final = 5
"""``limit`` of ``memory_search`` when the model leaves it out."""

ToolFormat = Literal["openai", "anthropic"]
"""A function-calling wire format."""

TOOL_FORMATS: Final[tuple[str, ...]] = ("openai", "anthropic")
"""The formats :func:`tool_definitions` accepts."""

_NOT_BLANK: Final = r"\S"

_DESCRIPTIONS: Final[Mapping[str, str]] = {
    MEMORY_WRITE: (
        "Persist one durable long-term memory entry: a stable fact, preference, decision or "
        "commitment worth remembering in future sessions. Write one compact, self-contained "
        "statement per call; never store secrets or raw tool output."
    ),
    MEMORY_SEARCH: (
        "Search long-term memory for entries relevant to a query. Use it before answering "
        "questions about the user's preferences, past decisions or earlier sessions."
    ),
}


def _schema(name: str) -> dict[str, Any]:
    if name == MEMORY_WRITE:
        return {
            "type": "object",
            "properties": {
                "content": {
                    "type": "string",
                    "minLength": 1,
                    "pattern": _NOT_BLANK,
                    "description": "The memory to store: one compact, self-contained statement.",
                },
                "keywords": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "pattern": _NOT_BLANK},
                    "maxItems": MEMORY_WRITE_MAX_KEYWORDS,
                    "default": [],
                    "description": "Optional search keywords for the entry.",
                },
            },
            "required": ["content"],
            "additionalProperties": False,
        }
    if name == MEMORY_SEARCH:
        return {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "pattern": _NOT_BLANK,
                    "description": "Words to look for in stored memories.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": MEMORY_SEARCH_LIMIT_MIN,
                    "maximum": MEMORY_SEARCH_LIMIT_MAX,
                    "default": MEMORY_SEARCH_LIMIT_DEFAULT,
                    "description": "Maximum number of entries to return.",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        }
    raise InputInvalidError(
        f"unknown tool name; the memory tools are {list(TOOL_NAMES)}",
        details={"field": "name"},
    )


def tool_input_schema(name: str) -> dict[str, Any]:
    """Return the JSON Schema of one tool's arguments (a fresh copy each call).

    Args:
        name: ``"memory_write"`` or ``"memory_search"``.

    Returns:
        An ``{"type": "object", "properties", "required", "additionalProperties"}`` schema.

    Raises:
        InputInvalidError: ``name`` is not a memory tool.

    """
    return _schema(name)


def tool_definitions(format: ToolFormat = "openai") -> list[dict[str, Any]]:
    """Return the memory tools in a function-calling format, ready for an LLM request.

    Ordering guarantee: ``memory_write`` then ``memory_search``. Every call builds fresh
    dicts, so a caller may mutate the result. The result is JSON-serializable.

    Args:
        format: ``"openai"`` gives ``{"type": "function", "function": {"name",
            "description", "parameters"}}`` entries; ``"anthropic"`` gives ``{"name",
            "description", "input_schema"}`` entries.

    Returns:
        One definition per tool in :data:`TOOL_NAMES`.

    Raises:
        InputInvalidError: ``format`` is not one of :data:`TOOL_FORMATS`.

    """
    if format == "openai":
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": _DESCRIPTIONS[name],
                    "parameters": _schema(name),
                },
            }
            for name in TOOL_NAMES
        ]
    if format == "anthropic":
        return [
            {"name": name, "description": _DESCRIPTIONS[name], "input_schema": _schema(name)}
            for name in TOOL_NAMES
        ]
    raise InputInvalidError(
        f"unknown tool format; use one of {list(TOOL_FORMATS)}",
        details={"field": "format", "value": repr(format)},
    )


def _fail(tool: str, field: str, problem: str, value: Any) -> InputInvalidError:
    del value  # never echoed: it may be private, or nested too deep to print
    return InputInvalidError(
        f"{tool}: argument `{field}` {problem}",
        details={"tool": tool, "field": field},
    )


def _nesting(text: str) -> int:
    """How deep the arrays and objects of the JSON ``text`` nest (stops past the limit)."""
    depth = deepest = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_ARGUMENT_DEPTH:
                    break
        elif token in "]}":
            depth -= 1
    return deepest


def _check(tool: str, schema: Mapping[str, Any], value: Any, field: str) -> Any:
    """Check ``value`` against the schema subset used above; return the normalized value."""
    kind = schema["type"]
    if kind == "string":
        if not isinstance(value, str):
            raise _fail(tool, field, f"must be a string, got {type(value).__name__}", value)
        if not value.isascii() and not is_text(value):
            raise _fail(tool, field, "must be valid Unicode text (no lone surrogate)", value)
        if len(value) < schema.get("minLength", 0) or (
            "pattern" in schema and re.search(schema["pattern"], value) is None
        ):
            raise _fail(tool, field, "must be a non-blank string", value)
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise _fail(tool, field, f"must be at most {schema['maxLength']} characters", value)
        return value
    if kind == "integer":
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail(tool, field, f"must be an integer, got {type(value).__name__}", value)
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            raise _fail(tool, field, f"must be between {low} and {high}, got {value}", value)
        return value
    if kind == "array":
        if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
            raise _fail(tool, field, f"must be an array, got {type(value).__name__}", value)
        if len(value) > schema.get("maxItems", len(value)):
            raise _fail(tool, field, f"must have at most {schema['maxItems']} items", value)
        return [_check(tool, schema["items"], v, f"{field}[{i}]") for i, v in enumerate(value)]
    raise AssertionError(f"schema type {kind!r} is not supported")  # pragma: no cover


def validate_tool_arguments(name: str, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Check a model's tool-call arguments against the tool's schema.

    Checks the tool name, required fields, unknown fields, types (``bool`` is not an
    integer; an integral float such as ``3.0`` is accepted as ``3``), non-blank strings,
    array sizes and ranges. Runtime complexity: ``O(size of arguments)``.

    Args:
        name: The tool name from the model's call.
        arguments: The arguments as a mapping, or as the JSON object string OpenAI-style
            APIs deliver; ``None`` or ``""`` mean no arguments.

    Returns:
        A new dict holding every schema property: the given values (validated, keywords as
        a list) and the schema default for an omitted optional one (``keywords=[]``,
        ``limit=5``).

    Raises:
        InputInvalidError: Unknown tool (``details["field"] == "name"``), arguments that are
            not a JSON object, or an argument that breaks the schema; ``details["field"]``
            names the offending argument.

    Example:
        >>> validate_tool_arguments("memory_search", '{"query": "favorite color"}')
        {'query': 'favorite color', 'limit': 5}

    """
    schema = _schema(name)
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        arguments = {}
    if isinstance(arguments, str):
        if _nesting(arguments) > MAX_ARGUMENT_DEPTH:
            raise _fail(name, "arguments", f"nests deeper than {MAX_ARGUMENT_DEPTH} levels; the "
                        "memory tools take flat arguments", arguments)
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as exc:
            raise _fail(name, "arguments", "is not valid JSON (check quoting and brackets)",
                        arguments) from exc
    if not isinstance(arguments, Mapping):
        raise _fail(
            name, "arguments", f"must be a JSON object, got {type(arguments).__name__}", arguments
        )
    properties: Mapping[str, Mapping[str, Any]] = schema["properties"]
    unknown = sorted(str(k) for k in arguments if k not in properties)
    if unknown:
        field = unknown[0] if _NAME.fullmatch(unknown[0]) else "<key>"  # a misspelt name only
        raise _fail(name, field, f"is not accepted; use only {sorted(properties)}", arguments)
    for required in schema["required"]:
        if required not in arguments:
            raise _fail(name, required, "is required", None)
    result: dict[str, Any] = {}
    for field, prop in properties.items():
        if field in arguments:
            result[field] = _check(name, prop, arguments[field], field)
        elif "default" in prop:
            default = prop["default"]
            result[field] = list(default) if isinstance(default, list) else default
    return result
