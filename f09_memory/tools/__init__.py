"""The tool-call surface of seed 001: ``memory_write`` / ``memory_search`` and the memory SOP.

Parts:

- :mod:`~f09_memory.tools.definitions` — the two tools' JSON Schemas in the OpenAI and
  Anthropic function-calling formats (:func:`tool_definitions`), and
  :func:`validate_tool_arguments`, which checks a model's arguments against them.
- :mod:`~f09_memory.tools.sop` — :func:`load_sop`, the fail-safe loader of the editable
  markdown SOP (shipped in ``resources/memory_sop.md``; ``MEMORY_SOP_PATH``,
  ``MEMORY_SOP_MAX_CHARS``).
"""

from f09_memory.tools.definitions import (
    MEMORY_SEARCH,
    MEMORY_SEARCH_LIMIT_DEFAULT,
    MEMORY_SEARCH_LIMIT_MAX,
    MEMORY_SEARCH_LIMIT_MIN,
    MEMORY_WRITE,
    MEMORY_WRITE_MAX_KEYWORDS,
    TOOL_FORMATS,
    TOOL_NAMES,
    ToolFormat,
    tool_definitions,
    tool_input_schema,
    validate_tool_arguments,
)
from f09_memory.tools.sop import (
    DEFAULT_SOP_MAX_CHARS,
    SOP_MAX_CHARS_ENV,
    SOP_PATH_ENV,
    load_sop,
)

__all__ = [
    "DEFAULT_SOP_MAX_CHARS",
    "MEMORY_SEARCH",
    "MEMORY_SEARCH_LIMIT_DEFAULT",
    "MEMORY_SEARCH_LIMIT_MAX",
    "MEMORY_SEARCH_LIMIT_MIN",
    "MEMORY_WRITE",
    "MEMORY_WRITE_MAX_KEYWORDS",
    "SOP_MAX_CHARS_ENV",
    "SOP_PATH_ENV",
    "TOOL_FORMATS",
    "TOOL_NAMES",
    "ToolFormat",
    "load_sop",
    "tool_definitions",
    "tool_input_schema",
    "validate_tool_arguments",
]
