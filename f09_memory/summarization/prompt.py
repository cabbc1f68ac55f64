"""Prompt assembly (spec section 8, step 3): the versioned summary template.

The template ships as ``resources/summary_prompt_v1.md``: a system block and a user block
with ``{placeholders}``. The user block lists the events group by group, one line each
(``- t=<time>: <content> [tags: ...]``), and asks for a thematic synthesis and key facts.

Privacy (spec section 14, QG5): the prompt is built only from the sources' stored content,
tags and times (never agent ids or metadata), and every line, group headers included, goes
through ``redact`` before it enters the prompt, even though stored content is already
redacted when redaction mode is ON: defense in depth, and the only guard when it is OFF.
Lines are clipped *after* redaction, so a clip can never cut a secret in half and let the
half slip past the patterns. Newlines inside content are folded to spaces, so a record
cannot fake prompt structure.

Pure and deterministic: the same sources give the same prompt byte for byte.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Final

from f09_memory.errors import InputInvalidError
from f09_memory.summarization.sources import Source, key_terms, tags_of

__all__ = [
    "SUMMARY_PROMPT_VERSION",
    "SummaryPrompt",
    "build_summary_prompt",
    "load_summary_template",
]

SUMMARY_PROMPT_VERSION: Final = "v1"
"""Version of the shipped template; recorded on every prompt built from it."""

ELLIPSIS: Final = "…"
_COMMENT: Final = re.compile(r"<!--.*?-->\s*", re.DOTALL)
_SYSTEM_MARK: Final = "=== system ==="
_USER_MARK: Final = "=== user ==="
_PLACEHOLDER: Final = re.compile(
    r"\{(event_count|first_time|last_time|group_count|events|max_facts|max_words)\}"
)
_HEADER_TERMS: Final = 4


@dataclass(frozen=True, slots=True)
class SummaryPrompt:
    """A built prompt: pass ``user`` as the prompt and ``system`` as the system text.

    Attributes:
        system: The system text of the template.
        user: The filled user text (the events list and the instructions).
        version: The template version (``SUMMARY_PROMPT_VERSION``).
    """

    system: str
    user: str
    version: str = SUMMARY_PROMPT_VERSION


@functools.cache
def load_summary_template(version: str = SUMMARY_PROMPT_VERSION) -> tuple[str, str]:
    """Return ``(system, user_template)`` of the shipped template ``version`` (read once).

    Raises:
        InputInvalidError: No template of that version ships with the package, or it lacks
            a block.
    """
    name = f"summary_prompt_{version}.md"
    path = resources.files("f09_memory") / "summarization" / "resources" / name
    if not re.fullmatch(r"v\d+", str(version)) or not path.is_file():
        raise InputInvalidError(f"no summary prompt template {version!r:.20}; use "
                                f"{SUMMARY_PROMPT_VERSION!r}", details={"version": str(version)})
    text = _COMMENT.sub("", path.read_text(encoding="utf-8"), count=1)
    head, sep, user = text.partition(_USER_MARK)
    pre, sep2, system = head.partition(_SYSTEM_MARK)
    if not sep or not sep2 or pre.strip():
        raise InputInvalidError(f"summary template {name} must hold a {_SYSTEM_MARK} block "
                                f"then a {_USER_MARK} block", details={"version": version})
    return system.strip(), user.strip()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


def build_summary_prompt(
    groups: Sequence[Sequence[Source]],
    *,
    redact: Callable[[str], str],
    event_max_chars: int = 500,
    max_facts: int = 8,
    max_words: int = 300,
    redact_lines: Callable[[list[str]], list[str]] | None = None,
    entities: Sequence[Sequence[Sequence[str]]] | None = None,
) -> SummaryPrompt:
    """Fill the template with the events of ``groups`` (see the module doc).

    Args:
        groups: Non-empty groups of sources (from :func:`group_batches`), in prompt order;
            each group is listed in the order given.
        redact: Applied to every line before it enters the prompt.
        event_max_chars: Longest event line (after redaction; longer lines end in ``…``).
        max_facts: How many key-fact lines the model may write.
        max_words: Word limit stated to the model.
        redact_lines: ``redact`` for all the lines at once (a redactor's batch path, e.g.
            ``lambda lines: redactor.redact_many(lines)[0]``); each line gives what
            ``redact`` gives it.
        entities: Each group's ``entities_of(group)``, if the caller has them (computed
            here otherwise).

    Returns:
        The prompt.

    Raises:
        InputInvalidError: No sources, or an empty group.

    Runtime complexity: O(total content length) plus one ``redact`` call per line (or one
    ``redact_lines`` call).
    """
    if not groups or any(len(g) == 0 for g in groups):
        raise InputInvalidError("nothing to summarize: pass non-empty groups of records",
                                details={"field": "groups"})
    system, template = load_summary_template(SUMMARY_PROMPT_VERSION)
    lines: list[str] = []
    first = min(s.recency_anchor for g in groups for s in g)
    last = max(s.recency_anchor for g in groups for s in g)
    count = 0
    for n, group in enumerate(groups, start=1):
        terms = key_terms(group, _HEADER_TERMS,
                          entities=None if entities is None else entities[n - 1])
        about = ", ".join(t.text for t in terms)
        size = f"{len(group)} event{'' if len(group) == 1 else 's'}"
        header = f"Group {n} ({size}; about: {about}):" if about else f"Group {n} ({size}):"
        if n > 1:
            lines.append("")
        lines.append(" ".join(header.split()))
        for src in group:
            tags = tags_of(src)
            tag_part = f" [tags: {', '.join(tags)}]" if tags else ""
            lines.append(" ".join(f"- t={src.recency_anchor}: {src.content}{tag_part}".split()))
            count += 1
    redacted = redact_lines(lines) if redact_lines is not None else [
        redact(line) if line else line for line in lines]
    lines = [_clip(line, event_max_chars) if line else line for line in redacted]
    values = {
        "event_count": str(count),
        "first_time": str(first),
        "last_time": str(last),
        "group_count": str(len(groups)),
        "events": "\n".join(lines),
        "max_facts": str(max_facts),
        "max_words": str(max_words),
    }
    user = _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
    return SummaryPrompt(system=system, user=user)
