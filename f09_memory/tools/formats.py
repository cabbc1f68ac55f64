"""The memory tools in each function-calling wire format (seed 001, 4.6).

:func:`tool_definitions` renders the canonical schemas of
:mod:`~f09_memory.tools.definitions` for one LLM API:

- ``"openai"`` — Chat Completions: ``{"type": "function", "function": {"name",
  "description", "parameters"}}`` (``"strict": true`` inside ``function`` in strict mode).
- ``"openai_responses"`` — the Responses API's flat function tool: ``{"type": "function",
  "name", "description", "parameters", "strict"}``. ``strict`` is always present: the
  Responses API makes a schema strict when it can if the key is left out.
- ``"anthropic"`` — Messages API: ``{"name", "description", "input_schema"}``.
- ``"gemini"`` — Gemini function declarations: ``{"name", "description", "parameters"}``,
  the parameters in Gemini's OpenAPI-subset ``Schema`` (:func:`gemini_schema`); pass them as
  ``types.Tool(function_declarations=tool_definitions("gemini"))``.

Strict mode (``strict=True``, OpenAI formats only; :func:`strict_schema`): OpenAI's
Structured Outputs requires every property in ``required`` and ``additionalProperties:
false``, so an optional argument becomes nullable (``"type": ["integer", "null"]``) and the
model sends ``null`` when it means "absent" — :func:`~f09_memory.tools.execute.execute_tool`
reads such a ``null`` as absent. Strict schemas also leave out the keywords Structured Outputs
does not accept (``default``, ``minLength``, ``maxLength``) and ``pattern``; the limits stay
in the descriptions and the executor enforces them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from f09_memory.config.config import MemoryConfig
from f09_memory.errors import InputInvalidError
from f09_memory.tools.definitions import TOOL_NAMES, tool_description, tool_input_schema

__all__ = [
    "STRICT_TOOL_FORMATS",
    "TOOL_FORMATS",
    "ToolFormat",
    "gemini_schema",
    "strict_schema",
    "tool_definitions",
]

ToolFormat = Literal["openai", "openai_responses", "anthropic", "gemini"]
"""A function-calling wire format."""

TOOL_FORMATS: Final[tuple[str, ...]] = ("openai", "openai_responses", "anthropic", "gemini")
"""The formats :func:`tool_definitions` accepts."""

STRICT_TOOL_FORMATS: Final[tuple[str, ...]] = ("openai", "openai_responses")
"""The formats that have a strict mode."""

_STRICT_DROPPED: Final = frozenset({"default", "minLength", "maxLength", "pattern"})
"""Keywords a strict schema leaves out: Structured Outputs rejects ``default``,
``minLength`` and ``maxLength``; ``pattern`` is left out because a constrained decoder may
read it anchored (``\\S`` would then mean one character), and the executor checks it."""

_GEMINI_KEPT: Final = frozenset(
    {"description", "required", "minLength", "maxLength", "maxItems", "minimum", "maximum"}
)
"""Keywords copied into a Gemini ``Schema`` besides ``type``, ``properties`` and ``items``.
Left out: ``additionalProperties`` (outside the Gemini Developer API's schema subset:
google-genai refuses it there, allowing it only on Vertex AI), ``default`` and ``pattern``
(stated in the descriptions, enforced by the executor)."""


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Return the OpenAI strict-mode variant of a canonical tool schema (a new dict).

    Every object lists all its properties in ``required`` with ``additionalProperties:
    false``; an optional property's type becomes ``[type, "null"]``; ``default``,
    ``minLength``, ``maxLength`` and ``pattern`` are dropped (nested ones too).

    Args:
        schema: A schema from :func:`~f09_memory.tools.definitions.tool_input_schema`.

    Returns:
        The strict schema.
    """
    return _strict(schema, nullable=False)


def _strict(schema: Mapping[str, Any], *, nullable: bool) -> dict[str, Any]:
    out = {key: value for key, value in schema.items() if key not in _STRICT_DROPPED}
    if schema["type"] == "object":
        required = set(schema["required"])
        properties: Mapping[str, Mapping[str, Any]] = schema["properties"]
        out["properties"] = {
            name: _strict(prop, nullable=name not in required) for name, prop in properties.items()
        }
        out["required"] = list(properties)
        out["additionalProperties"] = False
    elif schema["type"] == "array":
        out["items"] = _strict(schema["items"], nullable=False)
    if nullable:
        out["type"] = [schema["type"], "null"]
    return out


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Return a canonical tool schema as a Gemini ``Schema`` (OpenAPI 3.0 subset; a new dict).

    Types are upper case (``"OBJECT"``, ``"STRING"``, ...: the google-genai ``Type`` enum,
    which also reads lower case); ``additionalProperties``, ``default`` and ``pattern`` are
    left out; the size limits (``minLength``, ``maxLength``, ``maxItems``, ``minimum``,
    ``maximum``) stay.

    Args:
        schema: A schema from :func:`~f09_memory.tools.definitions.tool_input_schema`.

    Returns:
        The Gemini schema, in the API's camelCase field names.
    """
    out: dict[str, Any] = {"type": str(schema["type"]).upper()}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {name: gemini_schema(prop) for name, prop in value.items()}
        elif key == "items":
            out[key] = gemini_schema(value)
        elif key in _GEMINI_KEPT:
            out[key] = list(value) if isinstance(value, list) else value
    return out


def tool_definitions(
    format: ToolFormat = "openai",
    *,
    strict: bool = False,
    config: MemoryConfig | None = None,
) -> list[dict[str, Any]]:
    """Return the memory tools in a function-calling format, ready for an LLM request.

    Ordering guarantee: ``memory_write`` then ``memory_search``. Every call builds fresh
    dicts, so a caller may mutate the result. The result is JSON-serializable.

    Args:
        format: ``"openai"`` (Chat Completions), ``"openai_responses"`` (Responses API),
            ``"anthropic"`` or ``"gemini"``; see the module docstring for each shape.
        strict: OpenAI strict mode (Structured Outputs): all arguments required, optional
            ones nullable (a ``null`` means absent to the executor). Only for the OpenAI
            formats.
        config: The engine's config, whose size limits go into the schemas (default: the
            default config's: content up to 65,536 characters).

    Returns:
        One definition per tool in :data:`~f09_memory.tools.definitions.TOOL_NAMES`.

    Raises:
        InputInvalidError: ``format`` is not one of :data:`TOOL_FORMATS`, ``strict`` is not
            a bool or is set for a format without a strict mode, or ``config`` is not a
            MemoryConfig.

    Example:
        >>> [t["name"] for t in tool_definitions("openai_responses", strict=True)]
        ['memory_write', 'memory_search']
        >>> tool_definitions("openai_responses", strict=True)[1]["parameters"]["required"]
        ['query', 'limit']
    """
    if format not in TOOL_FORMATS:
        raise InputInvalidError(
            f"unknown tool format; use one of {list(TOOL_FORMATS)}", details={"field": "format"}
        )
    if not isinstance(strict, bool):
        raise InputInvalidError(
            f"strict must be a bool, got {type(strict).__name__}", details={"field": "strict"}
        )
    if strict and format not in STRICT_TOOL_FORMATS:
        raise InputInvalidError(
            f"strict mode is an OpenAI feature; use strict=True only with "
            f"{list(STRICT_TOOL_FORMATS)}",
            details={"field": "strict"},
        )
    return [_definition(format, name, strict, config) for name in TOOL_NAMES]


def _definition(
    format: str, name: str, strict: bool, config: MemoryConfig | None
) -> dict[str, Any]:
    schema = tool_input_schema(name, config=config)
    description = tool_description(name)
    if format == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    if format == "gemini":
        return {"name": name, "description": description, "parameters": gemini_schema(schema)}
    parameters = strict_schema(schema) if strict else schema
    if format == "openai_responses":
        return {"type": "function", "name": name, "description": description,
                "parameters": parameters, "strict": strict}
    function: dict[str, Any] = {"name": name, "description": description,
                                "parameters": parameters}
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}
