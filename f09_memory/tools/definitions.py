"""The model-facing memory tools ``memory_write`` and ``memory_search`` (seed 001, 4.6/5.3).

An LLM manages durable memory only through these two tool calls. This module holds their
JSON Schemas (one source of truth, :func:`tool_input_schema`) and checks a model's
arguments against the same schemas by hand (:func:`validate_tool_arguments`) — no
jsonschema dependency. :mod:`~f09_memory.tools.formats` renders the schemas in each
function-calling wire format.

Contract (seed 001, section 5.3), with the engine's size limits in the schema:

- ``memory_write``: ``content`` (string, required, not blank, at most
  :data:`MEMORY_WRITE_MAX_CONTENT_CHARS` characters: the engine's ``max_content_chars``),
  ``keywords`` (array of non-blank strings, optional, at most
  :data:`MEMORY_WRITE_MAX_KEYWORDS` of at most :data:`MEMORY_WRITE_MAX_KEYWORD_CHARS`
  characters each: a keyword is stored as the tag ``kw:<keyword>`` under ``max_tag_chars``).
- ``memory_search``: ``query`` (string, required, not blank, at most
  :data:`MEMORY_SEARCH_MAX_QUERY_CHARS` characters), ``limit`` (integer, optional,
  :data:`MEMORY_SEARCH_LIMIT_MIN`..:data:`MEMORY_SEARCH_LIMIT_MAX`, default
  :data:`MEMORY_SEARCH_LIMIT_DEFAULT`).

Unknown argument names are rejected (``additionalProperties: false``). A ``null`` for an
optional argument means the argument is absent (OpenAI's strict mode sends every argument,
``null`` for the ones the model leaves out); a ``null`` for a required one is rejected.
Given a :class:`~f09_memory.config.MemoryConfig`, the limits follow its ``max_content_chars``,
``max_tag_chars`` and ``max_tags_per_record`` instead of the defaults.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from f09_memory._validate import is_text
from f09_memory.config.config import MemoryConfig
from f09_memory.errors import InputInvalidError
from f09_memory.ingestion.validation import DEFAULT_LIMITS, ItemLimits

__all__ = [
    "KEYWORD_TAG_PREFIX",
    "MAX_ARGUMENT_DEPTH",
    "MEMORY_SEARCH",
    "MEMORY_SEARCH_LIMIT_DEFAULT",
    "MEMORY_SEARCH_LIMIT_MAX",
    "MEMORY_SEARCH_LIMIT_MIN",
    "MEMORY_SEARCH_MAX_QUERY_CHARS",
    "MEMORY_WRITE",
    "MEMORY_WRITE_MAX_CONTENT_CHARS",
    "MEMORY_WRITE_MAX_KEYWORDS",
    "MEMORY_WRITE_MAX_KEYWORD_CHARS",
    "TOOL_NAMES",
    "ToolLimits",
    "tool_description",
    "tool_input_schema",
    "validate_tool_arguments",
]

MEMORY_WRITE: Final = "memory_write"
"""Name of the tool that persists a durable memory entry."""

MEMORY_SEARCH: Final = "memory_search"
"""Name of the tool that searches long-term memory."""

TOOL_NAMES: Final[tuple[str, ...]] = (MEMORY_WRITE, MEMORY_SEARCH)
"""The memory tools, in the order the formats list them."""

KEYWORD_TAG_PREFIX: Final = "kw:"
"""Prefix of the tags that hold an entry's keywords (``kw:<keyword>``)."""

MEMORY_WRITE_MAX_KEYWORDS: Final = 20
"""Most keywords one ``memory_write`` call may attach."""

MEMORY_WRITE_MAX_CONTENT_CHARS: Final = DEFAULT_LIMITS.content
"""Longest ``content`` of ``memory_write`` (65,536: the default ``max_content_chars``)."""

MEMORY_WRITE_MAX_KEYWORD_CHARS: Final = DEFAULT_LIMITS.tag - len(KEYWORD_TAG_PREFIX)
"""Longest keyword of ``memory_write`` (253: the default ``max_tag_chars`` less ``kw:``)."""

MEMORY_SEARCH_MAX_QUERY_CHARS: Final = 4_096
"""Longest ``query`` of ``memory_search`` (a search names a few words, not a document)."""

MEMORY_SEARCH_LIMIT_MIN: Final = 1
"""Smallest ``limit`` of ``memory_search``."""

MEMORY_SEARCH_LIMIT_MAX: Final = 20
"""Largest ``limit`` of ``memory_search`` (seed 001: "limit: number (optional, bounded)")."""

MEMORY_SEARCH_LIMIT_DEFAULT: Final = 5
"""``limit`` of ``memory_search`` when the model leaves it out (or sends ``null``)."""

MAX_ARGUMENT_DEPTH: Final = 32
"""Deepest nesting of arrays and objects accepted in a JSON argument string (the tools'
arguments nest two levels; a deeper text is rejected before it is parsed)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""An argument name worth naming back (anything else may be data: shown as ``<key>``)."""
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
"""JSON strings (skipped whole, so brackets inside them do not count) and brackets."""

_NOT_BLANK: Final = r"\S"


class ToolLimits(NamedTuple):
    """The size limits of the tools' arguments, as their schemas state them.

    Attributes:
        content_chars: Longest ``memory_write`` content (``max_content_chars``).
        keyword_chars: Longest keyword (``max_tag_chars`` less the ``kw:`` prefix).
        keywords: Most keywords per write (:data:`MEMORY_WRITE_MAX_KEYWORDS`, or
            ``max_tags_per_record`` if smaller; 0 when no keyword tag fits).
        query_chars: Longest ``memory_search`` query.
    """

    content_chars: int = MEMORY_WRITE_MAX_CONTENT_CHARS
    keyword_chars: int = MEMORY_WRITE_MAX_KEYWORD_CHARS
    keywords: int = MEMORY_WRITE_MAX_KEYWORDS
    query_chars: int = MEMORY_SEARCH_MAX_QUERY_CHARS

    @classmethod
    def of(cls, config: MemoryConfig | None) -> ToolLimits:
        """Return the limits an engine with ``config`` accepts (the defaults for ``None``).

        Args:
            config: The engine's config, or ``None`` for the default config.

        Returns:
            The limits.

        Raises:
            InputInvalidError: ``config`` is neither a MemoryConfig nor ``None``.
        """
        if config is None:
            return _DEFAULT_TOOL_LIMITS
        if not isinstance(config, MemoryConfig):
            raise InputInvalidError(
                f"config must be a MemoryConfig or None, got {type(config).__name__}",
                details={"field": "config"},
            )
        item = ItemLimits.of(config)
        keyword_chars = item.tag - len(KEYWORD_TAG_PREFIX)
        keywords = min(MEMORY_WRITE_MAX_KEYWORDS, item.tags) if keyword_chars > 0 else 0
        return cls(item.content, max(keyword_chars, 1), keywords, MEMORY_SEARCH_MAX_QUERY_CHARS)


_DEFAULT_TOOL_LIMITS: Final = ToolLimits()

_DESCRIPTIONS: Final[Mapping[str, str]] = {
    MEMORY_WRITE: (
        "Persist one durable long-term memory entry: a stable fact, preference, decision or "
        "commitment worth remembering in future sessions. Write one compact, self-contained "
        "statement per call; never store secrets or raw tool output. Writing a statement "
        "already stored returns its id and stores nothing new (new keywords are merged)."
    ),
    MEMORY_SEARCH: (
        "Search long-term memory for entries relevant to a query. Use it before answering "
        "questions about the user's preferences, past decisions or earlier sessions."
    ),
}


def _unknown_tool() -> InputInvalidError:
    return InputInvalidError(
        f"unknown tool name; the memory tools are {list(TOOL_NAMES)}",
        details={"field": "name"},
    )


def _schema(name: str, limits: ToolLimits) -> dict[str, Any]:
    if name == MEMORY_WRITE:
        return {
            "type": "object",
            "properties": {
                "content": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": limits.content_chars,
                    "pattern": _NOT_BLANK,
                    "description": (
                        "The memory to store: one compact, self-contained statement "
                        f"(at most {limits.content_chars:,} characters)."
                    ),
                },
                "keywords": {
                    "type": "array",
                    "items": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": limits.keyword_chars,
                        "pattern": _NOT_BLANK,
                    },
                    "maxItems": limits.keywords,
                    "default": [],
                    "description": (
                        f"Optional search keywords for the entry (at most {limits.keywords}, "
                        f"each at most {limits.keyword_chars:,} characters)."
                    ),
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
                    "maxLength": limits.query_chars,
                    "pattern": _NOT_BLANK,
                    "description": (
                        "Words to look for in stored memories "
                        f"(at most {limits.query_chars:,} characters)."
                    ),
                },
                "limit": {
                    "type": "integer",
                    "minimum": MEMORY_SEARCH_LIMIT_MIN,
                    "maximum": MEMORY_SEARCH_LIMIT_MAX,
                    "default": MEMORY_SEARCH_LIMIT_DEFAULT,
                    "description": (
                        "Maximum number of entries to return "
                        f"({MEMORY_SEARCH_LIMIT_MIN}-{MEMORY_SEARCH_LIMIT_MAX}, "
                        f"default {MEMORY_SEARCH_LIMIT_DEFAULT})."
                    ),
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        }
    raise _unknown_tool()


def tool_input_schema(name: str, *, config: MemoryConfig | None = None) -> dict[str, Any]:
    """Return the JSON Schema of one tool's arguments (a fresh copy each call).

    This is the canonical schema (the OpenAI chat, OpenAI Responses and Anthropic formats
    carry it unchanged); :mod:`~f09_memory.tools.formats` derives the strict and Gemini
    variants from it.

    Args:
        name: ``"memory_write"`` or ``"memory_search"``.
        config: The engine's config: its size limits go into the schema (default: the
            default config's).

    Returns:
        An ``{"type": "object", "properties", "required", "additionalProperties"}`` schema.

    Raises:
        InputInvalidError: ``name`` is not a memory tool, or ``config`` is not a MemoryConfig.

    """
    return _schema(name, ToolLimits.of(config))


def tool_description(name: str) -> str:
    """Return the description a format gives the model for one tool.

    Args:
        name: ``"memory_write"`` or ``"memory_search"``.

    Returns:
        The description text.

    Raises:
        InputInvalidError: ``name`` is not a memory tool.
    """
    if name not in _DESCRIPTIONS:
        raise _unknown_tool()
    return _DESCRIPTIONS[name]


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
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise _fail(tool, field, f"must be at most {schema['maxLength']:,} characters",
                        value)
        if not value.isascii() and not is_text(value):
            raise _fail(tool, field, "must be valid Unicode text (no lone surrogate)", value)
        if len(value) < schema.get("minLength", 0) or (
            "pattern" in schema and re.search(schema["pattern"], value) is None
        ):
            raise _fail(tool, field, "must be a non-blank string", value)
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


def validate_tool_arguments(
    name: str,
    arguments: Mapping[str, Any] | str | None,
    *,
    config: MemoryConfig | None = None,
) -> dict[str, Any]:
    """Check a model's tool-call arguments against the tool's schema.

    Checks the tool name, required fields, unknown fields, types (``bool`` is not an
    integer; an integral float such as ``3.0`` is accepted as ``3``), non-blank strings,
    string lengths, array sizes and ranges. A ``null`` (``None``) for an optional argument
    counts as absent, so the strict-mode arguments ``{"query": "q", "limit": null}`` mean
    ``{"query": "q"}``; a ``null`` for a required argument is rejected. Runtime complexity:
    ``O(size of arguments)``.

    Args:
        name: The tool name from the model's call.
        arguments: The arguments as a mapping, or as the JSON object string OpenAI-style
            APIs deliver; ``None`` or ``""`` mean no arguments.
        config: The engine's config, whose size limits apply (default: the default
            config's, those of :func:`tool_input_schema`).

    Returns:
        A new dict holding every schema property: the given values (validated, keywords as
        a list) and the schema default for an omitted (or ``null``) optional one
        (``keywords=[]``, ``limit=5``).

    Raises:
        InputInvalidError: Unknown tool (``details["field"] == "name"``), arguments that are
            not a JSON object, or an argument that breaks the schema; ``details["field"]``
            names the offending argument.

    Example:
        >>> validate_tool_arguments("memory_search", '{"query": "favorite color"}')
        {'query': 'favorite color', 'limit': 5}
        >>> validate_tool_arguments("memory_search", {"query": "color", "limit": None})
        {'query': 'color', 'limit': 5}

    """
    schema = _schema(name, ToolLimits.of(config))
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
        if arguments[required] is None:
            raise _fail(name, required, "is required and cannot be null", None)
    result: dict[str, Any] = {}
    for field, prop in properties.items():
        value = arguments.get(field)
        if value is not None:
            result[field] = _check(name, prop, value, field)
        elif "default" in prop:
            default = prop["default"]
            result[field] = list(default) if isinstance(default, list) else default
    return result
