r"""Typed memory extraction, the answer's side (seed 002): parsing a model's typed blocks.

An LLM given :func:`~f09_memory.ingestion.typed_extraction.build_typed_extraction_prompt`
answers with ```` ```typed_memory ```` fenced blocks, each a YAML frontmatter (``name``,
``description``, ``type``) followed by a body, or with the word ``NONE``.
:func:`parse_typed_memories` turns the answer into :class:`TypedMemory` values and a
:class:`TypedExtractionDiagnostic` per rejected block. Nothing here calls a model, reads the
clock or touches engine state.

Parsing. Blocks are found as the seed's regex ``typed_memory\n([\s\S]*?)`` between
triple backticks, in order of appearance, after CRLF/CR line endings are normalized to LF.
Two tolerances beyond the seed: trailing spaces after the ``typed_memory`` label, and a block
whose closing fence is missing but which is directly followed by the next opening fence (it
ends there). A block that is never closed (an answer cut off by the token limit) is rejected.
A malformed block never raises: it is skipped and described by a
:class:`TypedExtractionDiagnostic`. Rejected: no frontmatter, YAML that does not parse or is
not a mapping, a missing or non-text ``name``/``description``/``type``, a ``type`` outside
the four, an empty body (the seed's template always has one), and a block whose filename is
already taken by an earlier block (the seed's filename is the memory's identity, so the
later one would overwrite it; the first is kept). The same name under two types gives two
filenames and both are kept.

Filenames are ``{type}_{slug}.md`` as the seed says. The slug is deterministic: casefold,
NFKD, non-ASCII dropped, every run of other characters becomes one ``_``, trimmed, at most
:data:`TYPED_NAME_SLUG_MAX_LENGTH` characters; a name with no ASCII letter or digit gets
``memory_`` plus the first 12 hex digits of the sha256 of its UTF-8 bytes.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import unicodedata
from enum import StrEnum
from typing import Any, Final

from f09_memory.errors import InputInvalidError
from f09_memory.schema.base import BoundaryModel

__all__ = [
    "TYPED_NAME_SLUG_MAX_LENGTH",
    "TypedDiagnosticReason",
    "TypedExtractionDiagnostic",
    "TypedExtractionResult",
    "TypedMemory",
    "TypedMemoryType",
    "parse_typed_memories",
    "slugify_typed_name",
    "typed_memory_filename",
]

TYPED_NAME_SLUG_MAX_LENGTH: Final[int] = 64
"""Longest slug :func:`slugify_typed_name` returns, in characters."""

_OPEN_FENCE: Final = "```typed_memory"
_FENCE: Final = "```"
_NONE_ANSWER: Final = "NONE"
_SLUG_SPLIT_RE: Final = re.compile(r"[^a-z0-9]+")
_REQUIRED_FIELDS: Final = ("name", "description", "type")


class TypedMemoryType(StrEnum):
    """The four memory types of the seed's ``<TYPE_DEFINITIONS>``."""

    USER = "user"
    """Facts about a person's role, preferences, expertise or working style."""
    FEEDBACK = "feedback"
    """Guidance on how to approach work, corrections or validated approaches, with why."""
    PROJECT = "project"
    """Decisions, goals, timelines or context about ongoing work."""
    REFERENCE = "reference"
    """Pointers to external resources: URLs, tools, dashboards, channels, trackers."""


class TypedDiagnosticReason(StrEnum):
    """Why a block (or the whole answer) produced no memory."""

    NO_BLOCKS = "no_blocks"
    """The answer is neither ``NONE`` nor contains any typed_memory block."""
    UNTERMINATED = "unterminated"
    """A block was opened but never closed (typically an answer cut at the token limit)."""
    FRONTMATTER_MISSING = "frontmatter_missing"
    """The block does not start with a ``---`` ... ``---`` frontmatter."""
    YAML_INVALID = "yaml_invalid"
    """The frontmatter is not valid YAML, or not a mapping."""
    FIELD_MISSING = "field_missing"
    """``name``, ``description`` or ``type`` is absent or blank."""
    FIELD_INVALID = "field_invalid"
    """``name``, ``description`` or ``type`` is not a text value (a list, a mapping, a bool)."""
    TYPE_UNKNOWN = "type_unknown"
    """``type`` is not one of user, feedback, project, reference."""
    BODY_EMPTY = "body_empty"
    """Nothing follows the frontmatter."""
    DUPLICATE = "duplicate"
    """An earlier block already produced the same filename; the earlier one is kept."""


class TypedMemory(BoundaryModel):
    """One extracted memory.

    Attributes:
        name: Short title (whitespace runs collapsed to one space).
        description: One-line description for search indexing (whitespace collapsed).
        type: The memory type.
        body: The content after the frontmatter, surrounding blank space trimmed.
        filename: ``{type}_{slug}.md`` (see :func:`typed_memory_filename`).

    """

    name: str
    description: str
    type: TypedMemoryType
    body: str
    filename: str


class TypedExtractionDiagnostic(BoundaryModel):
    """Why one block, or the whole answer, was rejected. Carries no block content.

    Attributes:
        index: 0-based position of the block among the answer's typed_memory blocks, in
            order of appearance; ``None`` when the diagnostic is about the whole answer.
        reason: The rejection category.
        message: A human-readable explanation (may name the offending field or filename).

    """

    index: int | None
    reason: TypedDiagnosticReason
    message: str


class TypedExtractionResult(BoundaryModel):
    """The parse of one model answer.

    Attributes:
        memories: The accepted memories, in the order their blocks appear.
        diagnostics: One entry per rejected block (and per answer-level problem), in order.
        none: ``True`` when the model answered ``NONE`` (bare, or as the only content of its
            blocks) and nothing was extracted or rejected.

    """

    memories: tuple[TypedMemory, ...] = ()
    diagnostics: tuple[TypedExtractionDiagnostic, ...] = ()
    none: bool = False


def slugify_typed_name(name: str) -> str:
    """Turn a memory name into a filename-safe slug, deterministically.

    Casefold, NFKD-normalize, drop non-ASCII, replace each run of other characters with one
    ``_``, trim ``_`` from both ends, cut to :data:`TYPED_NAME_SLUG_MAX_LENGTH` (trimmed
    again). A name with no ASCII letter or digit left yields ``memory_`` followed by 12 hex
    digits of the sha256 of its UTF-8 bytes. Runtime complexity: ``O(len(name))``.

    Args:
        name: The memory's name.

    Returns:
        A non-empty slug of ``[a-z0-9_]``.

    Raises:
        InputInvalidError: ``MEMORY_INPUT_INVALID`` if ``name`` is not a str.

    """
    if not isinstance(name, str):
        raise InputInvalidError(
            f"name must be a str, got {type(name).__name__}", details={"field": "name"}
        )
    ascii_text = (
        unicodedata.normalize("NFKD", name.casefold()).encode("ascii", "ignore").decode("ascii")
    )
    slug = _SLUG_SPLIT_RE.sub("_", ascii_text.lower()).strip("_")
    slug = slug[:TYPED_NAME_SLUG_MAX_LENGTH].rstrip("_")
    if not slug:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
        slug = f"memory_{digest[:12]}"
    return slug


def typed_memory_filename(memory_type: TypedMemoryType | str, name: str) -> str:
    """Return the seed's filename for a memory: ``{type}_{slugified_name}.md``.

    Args:
        memory_type: The memory type (enum or its string value).
        name: The memory's name.

    Returns:
        For example ``"user_prefers_dark_mode.md"``.

    Raises:
        InputInvalidError: ``MEMORY_INPUT_INVALID`` for an unknown type or a non-str name.

    """
    try:
        kind = TypedMemoryType(memory_type)
    except ValueError as exc:
        raise InputInvalidError(
            "unknown typed memory type: use one of "
            f"{', '.join(t.value for t in TypedMemoryType)}",
            details={"field": "type"},
        ) from exc
    return f"{kind.value}_{slugify_typed_name(name)}.md"


def parse_typed_memories(text: str) -> TypedExtractionResult:
    """Parse a model's answer to the extraction prompt. Never raises on any string.

    Runtime complexity: ``O(len(text))`` plus YAML parsing of each frontmatter. Memories and
    diagnostics are in the order their blocks appear.

    Args:
        text: The model's completion.

    Returns:
        The accepted memories, a diagnostic per rejected block, and whether the model
        answered ``NONE``.

    Raises:
        InputInvalidError: ``MEMORY_INPUT_INVALID`` if ``text`` is not a str.

    """
    if not isinstance(text, str):
        raise InputInvalidError(
            f"text must be a str, got {type(text).__name__}: pass the model's completion text",
            details={"field": "text"},
        )
    normalized = text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufeff", "")
    blocks, diagnostics = _split_blocks(normalized)
    memories: list[TypedMemory] = []
    seen: set[str] = set()
    none_blocks = 0
    for index, content in blocks:
        if content.strip() == _NONE_ANSWER:
            none_blocks += 1
            continue
        outcome = _parse_block(index, content)
        if isinstance(outcome, TypedExtractionDiagnostic):
            diagnostics.append(outcome)
        elif outcome.filename in seen:
            diagnostics.append(
                _diag(
                    index,
                    TypedDiagnosticReason.DUPLICATE,
                    f"filename {outcome.filename!r} already produced by an earlier block; "
                    "kept the first",
                )
            )
        else:
            seen.add(outcome.filename)
            memories.append(outcome)
    diagnostics.sort(key=lambda d: -1 if d.index is None else d.index)
    none = False
    if not blocks and not diagnostics:
        bare = normalized.replace(_OPEN_FENCE, "").replace(_FENCE, "").strip()
        if bare == _NONE_ANSWER:
            none = True
        else:
            diagnostics.append(
                _diag(
                    None,
                    TypedDiagnosticReason.NO_BLOCKS,
                    "the answer is empty"
                    if not bare
                    else "the answer has no typed_memory block and is not NONE",
                )
            )
    elif none_blocks and none_blocks == len(blocks) and not diagnostics:
        none = True
    return TypedExtractionResult(
        memories=tuple(memories), diagnostics=tuple(diagnostics), none=none
    )


def _diag(
    index: int | None, reason: TypedDiagnosticReason, message: str
) -> TypedExtractionDiagnostic:
    return TypedExtractionDiagnostic(index=index, reason=reason, message=message)


def _split_blocks(text: str) -> tuple[list[tuple[int, str]], list[TypedExtractionDiagnostic]]:
    """Find the typed_memory blocks in order: ``(index, content)`` and unterminated ones."""
    blocks: list[tuple[int, str]] = []
    diagnostics: list[TypedExtractionDiagnostic] = []
    pos = 0
    index = 0
    while True:
        start = _find_opener(text, pos)
        if start < 0:
            break
        line_end = text.find("\n", start)
        close = -1 if line_end < 0 else text.find(_FENCE, line_end + 1)
        if close < 0:
            diagnostics.append(
                _diag(
                    index,
                    TypedDiagnosticReason.UNTERMINATED,
                    "block opened but never closed with ``` (answer cut off?)",
                )
            )
            break
        blocks.append((index, text[line_end + 1 : close]))
        index += 1
        # A missing closing fence directly followed by the next opener ends the block there.
        pos = close if _find_opener(text, close) == close else close + len(_FENCE)
    return blocks, diagnostics


def _find_opener(text: str, pos: int) -> int:
    """Index of the next ```` ```typed_memory ```` label followed by a line end, or -1."""
    while True:
        start = text.find(_OPEN_FENCE, pos)
        if start < 0:
            return -1
        rest_end = text.find("\n", start)
        rest = text[start + len(_OPEN_FENCE) : len(text) if rest_end < 0 else rest_end]
        if not rest.strip(" \t"):
            return start
        pos = start + len(_FENCE)


def _parse_block(index: int, content: str) -> TypedMemory | TypedExtractionDiagnostic:
    """Parse one block's content into a memory, or say why it is rejected."""
    lines = content.split("\n")
    first = 0
    while first < len(lines) and not lines[first].strip():
        first += 1
    if first == len(lines) or lines[first].strip() != "---":
        return _diag(
            index,
            TypedDiagnosticReason.FRONTMATTER_MISSING,
            "block does not start with a '---' YAML frontmatter",
        )
    end = next((i for i in range(first + 1, len(lines)) if lines[i].strip() == "---"), -1)
    if end < 0:
        return _diag(
            index,
            TypedDiagnosticReason.FRONTMATTER_MISSING,
            "frontmatter is not closed by a '---' line",
        )
    import yaml  # here, not at the top: start-up of programs that never parse frontmatter

    try:
        data: Any = yaml.safe_load("\n".join(lines[first + 1 : end]))
    except Exception as exc:  # parser boundary: PyYAML also raises ValueError etc.
        return _diag(
            index,
            TypedDiagnosticReason.YAML_INVALID,
            f"frontmatter is not valid YAML ({type(exc).__name__})",
        )
    if not isinstance(data, dict):
        return _diag(
            index,
            TypedDiagnosticReason.YAML_INVALID,
            f"frontmatter must be a YAML mapping, got {type(data).__name__}",
        )
    fields: dict[str, str] = {}
    for key in _REQUIRED_FIELDS:
        value = _field_text(data.get(key))
        if value is None:
            return _diag(
                index,
                TypedDiagnosticReason.FIELD_INVALID,
                f"frontmatter field {key!r} must be text, got {type(data.get(key)).__name__}",
            )
        if not value:
            return _diag(
                index,
                TypedDiagnosticReason.FIELD_MISSING,
                f"frontmatter field {key!r} is missing or blank",
            )
        fields[key] = value
    try:
        kind = TypedMemoryType(fields["type"].lower())
    except ValueError:
        return _diag(
            index,
            TypedDiagnosticReason.TYPE_UNKNOWN,
            f"type {fields['type'][:40]!r} is not one of "
            f"{', '.join(t.value for t in TypedMemoryType)}",
        )
    body = "\n".join(lines[end + 1 :]).strip()
    if not body:
        return _diag(
            index, TypedDiagnosticReason.BODY_EMPTY, "block has no body after the frontmatter"
        )
    return TypedMemory(
        name=fields["name"],
        description=fields["description"],
        type=kind,
        body=body,
        filename=typed_memory_filename(kind, fields["name"]),
    )


def _field_text(value: object) -> str | None:
    """Frontmatter scalar as collapsed text; ``""`` if absent, ``None`` if not text-like.

    YAML turns ``name: 2024`` into an int and ``name: 2024-05-01`` into a date; such scalars
    are read back as text. Booleans, lists and mappings are rejected.
    """
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int | float | _dt.date):
        return None
    return " ".join(str(value).split())


