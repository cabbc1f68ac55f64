"""The tool-call surface of seed 001: ``memory_write`` / ``memory_search`` and the memory SOP.

Parts:

- :mod:`~f09_memory.tools.definitions` — the two tools' JSON Schemas with the engine's size
  limits (:func:`tool_input_schema`, :class:`ToolLimits`), and
  :func:`validate_tool_arguments`, which checks a model's arguments against them (a
  ``null`` optional argument counts as absent).
- :mod:`~f09_memory.tools.formats` — :func:`tool_definitions`: the tools in the OpenAI Chat
  Completions, OpenAI Responses, Anthropic and Gemini function-calling formats, with an
  OpenAI strict mode (:func:`strict_schema`, :func:`gemini_schema`).
- :mod:`~f09_memory.tools.sop` — :func:`load_sop`, the fail-safe loader of the editable
  markdown SOP (shipped in ``resources/memory_sop.md``; ``MEMORY_SOP_PATH``,
  ``MEMORY_SOP_MAX_CHARS``).
- :mod:`~f09_memory.tools.execute` — :func:`execute_tool`, the executor that runs a tool
  call on a :class:`~f09_memory.engine.MemoryEngine` and returns the seed's JSON payload
  (never raising to the model), :class:`ToolContext` and :func:`memory_entries`.
- :mod:`~f09_memory.tools.bootstrap` — :func:`bootstrap_messages`, the system messages of a
  new session: the SOP plus the newest entries (``MEMORY_BOOTSTRAP_MAX_ENTRIES``,
  ``MEMORY_BOOTSTRAP_MAX_CHARS``).
"""

from f09_memory.tools.bootstrap import (
    BOOTSTRAP_HEADER,
    BOOTSTRAP_MAX_CHARS_ENV,
    BOOTSTRAP_MAX_ENTRIES_ENV,
    DEFAULT_BOOTSTRAP_MAX_CHARS,
    DEFAULT_BOOTSTRAP_MAX_ENTRIES,
    bootstrap_entries,
    bootstrap_messages,
    format_entry,
)
from f09_memory.tools.definitions import (
    KEYWORD_TAG_PREFIX,
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
from f09_memory.tools.execute import (
    DEFAULT_TOOL_AGENT_ID,
    KEYWORD_MATCH_WEIGHT,
    MEMORY_VERSION_ATTRIBUTE,
    TOOL_INTERNAL_ERROR,
    TOOL_MEMORY_LAYER,
    TOOL_SOURCE_EVENT,
    MemoryEntry,
    ToolContext,
    dedupe_key,
    execute_tool,
    execute_tool_json,
    memory_entries,
)
from f09_memory.tools.formats import (
    STRICT_TOOL_FORMATS,
    TOOL_FORMATS,
    ToolFormat,
    gemini_schema,
    strict_schema,
    tool_definitions,
)
from f09_memory.tools.sop import (
    DEFAULT_SOP_MAX_CHARS,
    SOP_MAX_CHARS_ENV,
    SOP_PATH_ENV,
    load_sop,
)

__all__ = [
    "BOOTSTRAP_HEADER",
    "BOOTSTRAP_MAX_CHARS_ENV",
    "BOOTSTRAP_MAX_ENTRIES_ENV",
    "DEFAULT_BOOTSTRAP_MAX_CHARS",
    "DEFAULT_BOOTSTRAP_MAX_ENTRIES",
    "DEFAULT_SOP_MAX_CHARS",
    "DEFAULT_TOOL_AGENT_ID",
    "KEYWORD_MATCH_WEIGHT",
    "KEYWORD_TAG_PREFIX",
    "MEMORY_SEARCH",
    "MEMORY_SEARCH_LIMIT_DEFAULT",
    "MEMORY_SEARCH_LIMIT_MAX",
    "MEMORY_SEARCH_LIMIT_MIN",
    "MEMORY_SEARCH_MAX_QUERY_CHARS",
    "MEMORY_VERSION_ATTRIBUTE",
    "MEMORY_WRITE",
    "MEMORY_WRITE_MAX_CONTENT_CHARS",
    "MEMORY_WRITE_MAX_KEYWORDS",
    "MEMORY_WRITE_MAX_KEYWORD_CHARS",
    "MemoryEntry",
    "SOP_MAX_CHARS_ENV",
    "SOP_PATH_ENV",
    "STRICT_TOOL_FORMATS",
    "TOOL_FORMATS",
    "TOOL_INTERNAL_ERROR",
    "TOOL_MEMORY_LAYER",
    "TOOL_NAMES",
    "TOOL_SOURCE_EVENT",
    "ToolContext",
    "ToolFormat",
    "ToolLimits",
    "bootstrap_entries",
    "bootstrap_messages",
    "dedupe_key",
    "execute_tool",
    "execute_tool_json",
    "format_entry",
    "gemini_schema",
    "load_sop",
    "memory_entries",
    "strict_schema",
    "tool_definitions",
    "tool_description",
    "tool_input_schema",
    "validate_tool_arguments",
]
