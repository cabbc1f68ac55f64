"""Built-in redaction patterns and the one place patterns are compiled.

Built-ins (by name in ``MemoryConfig.redact_patterns``):

- ``EMAIL``: ``local@domain.tld``
- ``UUID``: 8-4-4-4-12 hex groups
- ``NUMSEQ16``: a run of 16 or more digits, single spaces or dashes allowed between digits
  (card and account numbers as people write them)

Any other entry is a custom regular expression. A pattern that does not compile, or that
matches the empty string (it would redact everywhere), is rejected with
``MEMORY_REDACTION_PATTERN_INVALID``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from f09_memory.errors import RedactionPatternInvalidError

__all__ = ["BUILTIN_PATTERNS", "CompiledPattern", "compile_patterns"]

BUILTIN_PATTERNS: dict[str, str] = {
    "EMAIL": r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}",
    "UUID": r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
    "NUMSEQ16": r"(?<!\d)\d(?:[ \-]?\d){15,}(?!\d)",
}

CompiledPattern = tuple[str, re.Pattern[str]]


def compile_patterns(names_or_regexes: Iterable[str]) -> tuple[CompiledPattern, ...]:
    """Compile built-in names and custom regexes, in the given order, once.

    Args:
        names_or_regexes: Built-in names (``EMAIL``, ``UUID``, ``NUMSEQ16``) or regexes.

    Returns:
        ``(label, compiled)`` pairs; the label is the built-in name or ``CUSTOM<i>``.

    Raises:
        RedactionPatternInvalidError: A custom pattern does not compile or matches "".
    """
    out: list[CompiledPattern] = []
    for i, entry in enumerate(names_or_regexes):
        if not isinstance(entry, str) or not entry.strip():
            raise RedactionPatternInvalidError(
                f"redaction pattern #{i} is empty: give a built-in name "
                f"({', '.join(BUILTIN_PATTERNS)}) or a non-empty regular expression",
                details={"index": i},
            )
        key = entry.strip()
        if key.upper() in BUILTIN_PATTERNS:
            out.append((key.upper(), re.compile(BUILTIN_PATTERNS[key.upper()])))
            continue
        try:
            compiled = re.compile(entry)
        except re.error as exc:
            raise RedactionPatternInvalidError(
                f"redaction pattern #{i} {entry!r} does not compile ({exc}); fix the regular "
                "expression or use a built-in name",
                details={"index": i, "pattern": entry, "reason": str(exc)},
            ) from exc
        if compiled.fullmatch("") is not None:
            raise RedactionPatternInvalidError(
                f"redaction pattern #{i} {entry!r} matches the empty string and would redact "
                "everywhere; require at least one character (e.g. use + instead of *)",
                details={"index": i, "pattern": entry},
            )
        out.append((f"CUSTOM{i}", compiled))
    return tuple(out)
