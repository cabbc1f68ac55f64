"""JSON value types for public signatures (base layer: imports nothing).

:data:`JsonValue` is what ``json.loads`` returns and ``json.dumps`` accepts without a
custom encoder: the type of error ``details``, of ``to_json_dict()`` forms and of other
JSON-shaped data the public API hands out. It replaces ``Any`` there, so a caller's type
checker sees a real type (narrow it with ``isinstance`` before indexing).
"""

from __future__ import annotations

from typing import TypeAlias

__all__ = ["JsonObject", "JsonValue"]

JsonValue: TypeAlias = (
    str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None
)
"""A JSON value: a string, number, boolean, null, array or object (recursive)."""

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object: string keys, :data:`JsonValue` values."""
