r"""Typed memory extraction (seed 002): the classifier prompt, and the layers of its memories.

An LLM reads a log or note and answers with ```` ```typed_memory ```` fenced blocks, each a
YAML frontmatter (``name``, ``description``, ``type``) followed by a body, or with the word
``NONE``. This module builds that prompt (two-phase: the host sends it to its own model) and
turns parsed memories into ingest items. The answer's side, :func:`parse_typed_memories`
and the types it returns, is :mod:`f09_memory.ingestion.typed_parsing` (re-exported here).
Nothing here calls a model, reads the clock or touches engine state.

Prompt. The system prompt and the user template ship as package resources
(``resources/typed_extraction_system.md`` and ``resources/typed_extraction_user.md``) with
the seed's wording and section tags ``<SOURCE_TEXT>``, ``<TYPE_DEFINITIONS>``,
``<EXCLUSION_RULES>``, ``<INSTRUCTIONS>``. Only two placeholders are substituted,
``{input_text}`` and ``{today_date}``, in one pass, so braces in the source text (or the
template's own ``{short_title}``-style hints to the model) are never interpreted. The seed's
text lost the closing fence of the example block in conversion; the template restores it
after ``{content body}`` (the parsing regex of the seed requires it) and writes the seed's
bullets as markdown ``-`` items.

Layers. :data:`DEFAULT_TYPE_LAYERS` sends ``feedback`` to the procedural layer (the seed
structures it as a rule with "Why" and "How to apply": guidance on how to act) and the other
three types, which are facts and pointers, to the semantic layer.
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any, Final

from f09_memory.errors import InputInvalidError
from f09_memory.ingestion.typed_parsing import (
    TYPED_NAME_SLUG_MAX_LENGTH,
    TypedDiagnosticReason,
    TypedExtractionDiagnostic,
    TypedExtractionResult,
    TypedMemory,
    TypedMemoryType,
    parse_typed_memories,
    slugify_typed_name,
    typed_memory_filename,
)
from f09_memory.schema.enums import MemoryLayer

__all__ = [
    "DEFAULT_TYPE_LAYERS",
    "TYPED_EXTRACTION_MAX_TOKENS",
    "TYPED_EXTRACTION_TEMPERATURE",
    "TYPED_NAME_SLUG_MAX_LENGTH",
    "TypedDiagnosticReason",
    "TypedExtractionDiagnostic",
    "TypedExtractionPrompt",
    "TypedExtractionResult",
    "TypedMemory",
    "TypedMemoryType",
    "build_typed_extraction_prompt",
    "parse_typed_memories",
    "slugify_typed_name",
    "typed_memory_filename",
    "typed_memory_items",
    "typed_memory_tags",
]

TYPED_EXTRACTION_TEMPERATURE: Final[float] = 0.1
"""Sampling temperature of the extraction call (seed: classification, not generation)."""

TYPED_EXTRACTION_MAX_TOKENS: Final[int] = 2048
"""Completion token limit of the extraction call (seed: ``maxTokens: 2048``)."""

_RESOURCE_DIR: Final = ("ingestion", "resources")
_SYSTEM_RESOURCE: Final = "typed_extraction_system.md"
_USER_RESOURCE: Final = "typed_extraction_user.md"
_PLACEHOLDER_RE: Final = re.compile(r"\{(input_text|today_date)\}")
_DATE_RE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")


DEFAULT_TYPE_LAYERS: Final[Mapping[TypedMemoryType, MemoryLayer]] = MappingProxyType(
    {
        TypedMemoryType.USER: MemoryLayer.SEMANTIC,
        TypedMemoryType.FEEDBACK: MemoryLayer.PROCEDURAL,
        TypedMemoryType.PROJECT: MemoryLayer.SEMANTIC,
        TypedMemoryType.REFERENCE: MemoryLayer.SEMANTIC,
    }
)
"""The layer a typed memory is ingested into by default (read-only; copy it to customise).

``feedback`` is procedural (a rule for how to act, with "How to apply"); the rest semantic.
"""


@dataclass(frozen=True, slots=True)
class TypedExtractionPrompt:
    """A ready-to-send extraction call for ``LLMClient.complete``.

    Send it as ``llm.complete(p.user, system=p.system, temperature=p.temperature,
    max_tokens=p.max_tokens)`` and pass the answer to :func:`parse_typed_memories`.

    Attributes:
        system: The classifier system prompt.
        user: The user prompt with the (redacted) source text and today's date filled in.
        temperature: :data:`TYPED_EXTRACTION_TEMPERATURE`.
        max_tokens: :data:`TYPED_EXTRACTION_MAX_TOKENS`.

    """

    system: str
    user: str
    temperature: float = TYPED_EXTRACTION_TEMPERATURE
    max_tokens: int = TYPED_EXTRACTION_MAX_TOKENS


@functools.cache
def _resource_text(name: str) -> str:
    """Read a shipped template once (read-only, identical on every call)."""
    path = resources.files("f09_memory")
    for part in _RESOURCE_DIR:
        path = path / part
    return (path / name).read_text(encoding="utf-8").rstrip("\n")


def build_typed_extraction_prompt(
    source_text: str,
    *,
    today_date: str,
    redact: Callable[[str], str] | None = None,
) -> TypedExtractionPrompt:
    """Build the seed's extraction prompt for ``source_text``.

    ``redact`` runs on the source text before it is placed in the prompt, so the model only
    ever sees redacted text. Pure and deterministic: the date comes from the caller, never
    from the clock. Runtime complexity: ``O(len(source_text))`` plus the redactor's cost.

    Args:
        source_text: The log or note to extract from; surrounding whitespace is trimmed.
        today_date: The reference date for converting relative dates, ``YYYY-MM-DD``
            (the host's calendar date, e.g. the game's logical day).
        redact: Optional redactor applied to ``source_text`` first; must return ``str``.

    Returns:
        The system prompt, user prompt, temperature and token limit.

    Raises:
        InputInvalidError: ``MEMORY_INPUT_INVALID`` if ``source_text`` is not a non-blank
            string (before or after redaction), ``today_date`` is not a valid
            ``YYYY-MM-DD`` date, ``redact`` is not callable or returns a non-string.
            Anything the redactor itself raises propagates; no prompt is built then.

    """
    if not isinstance(source_text, str):
        raise InputInvalidError(
            f"source_text must be a str, got {type(source_text).__name__}: pass the log or "
            "note text to extract typed memories from",
            details={"field": "source_text"},
        )
    if not source_text.strip():
        raise InputInvalidError(
            "source_text is empty: pass the non-blank log or note text to extract typed "
            "memories from",
            details={"field": "source_text"},
        )
    date = _check_date(today_date)
    text = source_text
    if redact is not None:
        if not callable(redact):
            raise InputInvalidError(
                "redact must be a callable str -> str (or None for no redaction)",
                details={"field": "redact"},
            )
        text = redact(source_text)
        if not isinstance(text, str):
            raise InputInvalidError(
                f"redact returned {type(text).__name__}: the redactor must return the "
                "redacted text as a str",
                details={"field": "redact"},
            )
        if not text.strip():
            raise InputInvalidError(
                "source_text is empty after redaction: nothing is left to extract from; "
                "check the redactor or pass other text",
                details={"field": "source_text"},
            )
    values = {"input_text": text.strip(), "today_date": date}
    user = _PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], _resource_text(_USER_RESOURCE))
    return TypedExtractionPrompt(system=_resource_text(_SYSTEM_RESOURCE), user=user)


def _check_date(today_date: object) -> str:
    """Return ``today_date`` if it is a valid ``YYYY-MM-DD`` date string, else raise."""
    if isinstance(today_date, str) and _DATE_RE.fullmatch(today_date):
        try:
            _dt.date.fromisoformat(today_date)
        except ValueError:
            pass
        else:
            return today_date
    raise InputInvalidError(
        "today_date must be a calendar date as 'YYYY-MM-DD' (e.g. '2024-05-17'): pass the "
        "host's current (logical) date",
        details={"field": "today_date"},
    )


def typed_memory_tags(memory: TypedMemory) -> tuple[str, ...]:
    """Return the tags to attach when ingesting ``memory`` as a record.

    Args:
        memory: An extracted memory.

    Returns:
        ``("typed:<type>", "typed-name:<slug>")``, e.g.
        ``("typed:user", "typed-name:prefers_dark_mode")``; always in this order.

    """
    return (f"typed:{memory.type.value}", f"typed-name:{slugify_typed_name(memory.name)}")


def typed_memory_items(
    result: TypedExtractionResult, layers: Mapping[str, MemoryLayer | str]
) -> list[dict[str, Any]]:
    """``ingest_many`` items for the memories of ``result``, in block order.

    Each memory becomes ``"<name>: <description>"``, a new line and its body, in the layer
    ``layers`` maps its type to (else :data:`DEFAULT_TYPE_LAYERS`), tagged by
    :func:`typed_memory_tags`, with ``typedName``, ``typedType`` and ``filename``
    attributes.
    """
    items = []
    for memory in result.memories:
        items.append({
            "content": f"{memory.name}: {memory.description}\n{memory.body}".strip(),
            "layer": layers.get(memory.type.value, DEFAULT_TYPE_LAYERS[memory.type]),
            "tags": list(typed_memory_tags(memory)),
            "metadata": {"attributes": {"typedName": memory.name,
                                        "typedType": memory.type.value,
                                        "filename": memory.filename}},
        })
    return items
