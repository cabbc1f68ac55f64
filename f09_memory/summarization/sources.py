"""Source events of a summary and the key terms (entities, tags) they mention.

A :class:`SourceEvent` is the light snapshot of one record that a pending task keeps: the
summarizer never holds on to store objects, so a record retired or expired while its task
is pending changes nothing here. Its content and tags are redacted (by the store at ingest
when redaction mode is ON, by the summarizer otherwise); everything that leaves the
summarizer (prompt lines, summary texts, reasons) goes through the redactor again.

Entities are runs of capitalized words (``Old Tom``), minus a fixed list of function words
(``The``, ``She``, ``After`` ...). A name at the start of a sentence counts only when it
also appears *inside* a sentence somewhere in the batch, so ``Bram`` in "Bram sold a
sword. Paid Bram." is an entity but ``Paid`` is not (see :func:`entities_of`). Everything
here is deterministic: ordered lists, never set iteration, ties broken by the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, NamedTuple

from f09_memory.schema.records import MemoryRecord

__all__ = [
    "STOPWORDS",
    "KeyTerm",
    "Source",
    "SourceEvent",
    "caps_words",
    "entities_of",
    "key_terms",
    "tags_of",
    "term_in",
    "word_set",
]

_ENDS: Final = frozenset(".!?\n")
_LEAD_CHARS: Final = frozenset(" \t\r\"'([*-\u2018\u201c")
_UPPER: Final = r"A-Z\u00c0-\u00d6\u00d8-\u00de"
_RUN: Final = re.compile(rf"[{_UPPER}][\w'\u2019-]*(?:[ \t]+[{_UPPER}][\w'\u2019-]*)*")
_POSSESSIVE: Final = ("'s", "\u2019s")
_WORD: Final = re.compile(r"\w+")
STOPWORDS: Final = frozenset(
    """A About After Again All Also Am An And Any Are As At Be Because Been Before Being Both
    But By Can Could Did Do Does During Each Every Few For From Had Has Have He Her Here Hers
    Him His How However I If In Into Is It Its Just Last Later Me More Most My Next No Nor
    Not Now Of Off Ok On Once Only Or Other Our Ours Out Over She Should So Some Soon Still
    Such Than That The Their Theirs Them Then There These They This Those Through To Today
    Tomorrow Too Under Until Up Us Very Was We Were What When Where Which While Who Whom Why
    Will With Would Yes Yesterday Yet You Your Yours REDACT""".split()
)
"""Capitalized words that are never entities (function words and the redaction marker)."""


def caps_words(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Capitalized names in ``text``: ``(inside_sentences, at_sentence_starts)``.

    Adjacent capitalized words form one name (``Old Tom``); stopwords and single letters
    split a run; a possessive ``'s`` is dropped. A run that opens a sentence is reported as
    sentence-initial (:func:`entities_of` decides whether it is a name).

    Runtime complexity: one regex pass, O(len(text)).
    """
    inside: list[str] = []
    initial: list[str] = []
    for match in _RUN.finditer(text):
        j = match.start() - 1
        while j >= 0 and text[j] in _LEAD_CHARS:
            j -= 1
        opens = j < 0 or text[j] in _ENDS
        cur: list[str] = []
        cur_start = 0
        names: list[tuple[int, list[str]]] = []
        for i, word in enumerate(match.group(0).split()):
            if word.endswith(_POSSESSIVE):
                word = word[:-2]
            if word in STOPWORDS or len(word) < 2:
                if cur:
                    names.append((cur_start, cur))
                cur = []
                continue
            if not cur:
                cur_start = i
            cur.append(word)
        if cur:
            names.append((cur_start, cur))
        for start, words in names:
            (initial if opens and start == 0 else inside).append(" ".join(words))
    return tuple(inside), tuple(initial)


@dataclass(frozen=True, slots=True)
class SourceEvent:
    """A snapshot of one source record (capitalized names extracted once, on first use).

    Attributes:
        key: The record's per-agent sequence number.
        id: The record id.
        recency_anchor: Logical time of the event.
        importance: The record's importance (0..1).
        content: The stored content.
        tags: The stored tags.
        names: ``caps_words(content)``, computed on first use.
    """

    key: int
    id: str
    recency_anchor: int
    importance: float
    content: str
    tags: tuple[str, ...] = ()
    _names: tuple[tuple[str, ...], tuple[str, ...]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def names(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``caps_words(content)``, computed once."""
        names = self._names
        if names is None:
            names = caps_words(self.content)
            object.__setattr__(self, "_names", names)
        return names

    @classmethod
    def from_record(
        cls, record: MemoryRecord, key: int, redact: Callable[[str], str] | None = None
    ) -> SourceEvent:
        """Snapshot ``record`` (stored under ``key``); ``redact`` its content and tags if given."""
        if redact is None:
            return cls(key, record.id, record.recency_anchor, record.importance,
                       record.content, record.metadata.tags)
        return cls(key, record.id, record.recency_anchor, record.importance,
                   redact(record.content), tuple(redact(t) for t in record.metadata.tags))

    def to_state(self) -> list[object]:
        """A JSON-safe list (``[key, id, anchor, importance, content, tags]``)."""
        return [self.key, self.id, self.recency_anchor, self.importance, self.content,
                list(self.tags)]

    @classmethod
    def from_state(cls, data: Sequence[object]) -> SourceEvent:
        """Inverse of :meth:`to_state`.

        Raises:
            ValueError: ``data`` is not what :meth:`to_state` produced.
        """
        key, rid, anchor, importance, content, tags = data
        if not (isinstance(key, int) and isinstance(rid, str) and isinstance(anchor, int)
                and isinstance(importance, int | float) and isinstance(content, str)
                and isinstance(tags, list | tuple) and all(isinstance(t, str) for t in tags)):
            raise ValueError("malformed source event")
        return cls(key, rid, anchor, float(importance), content, tuple(tags))


Source = MemoryRecord | SourceEvent
"""What the grouping, prompt and heuristic functions accept."""


def tags_of(source: Source) -> tuple[str, ...]:
    """The tags of a record or source event."""
    return source.tags if isinstance(source, SourceEvent) else source.metadata.tags


def entities_of(sources: Sequence[Source]) -> list[list[str]]:
    """Entities of each source, in first-appearance order, without duplicates.

    A sentence-initial run counts whole if the batch also names it elsewhere (inside a
    sentence, or after a dropped first word: ``Old Tom stayed.`` after ``Met Old Tom.``);
    otherwise its first word is taken for a verb and dropped (``Met Old Tom`` ->
    ``Old Tom``, ``Paid`` -> none).
    So a name seen only at sentence starts is missed: precision over recall, since the
    coverage check must not demand words that are not names.
    """
    parts = [s.names if isinstance(s, SourceEvent) else caps_words(s.content)
             for s in sources]
    known = {w for inside, _ in parts for w in inside}
    known.update(run.partition(" ")[2] for _, initial in parts for run in initial)
    out: list[list[str]] = []
    for inside, initial in parts:
        seen: dict[str, None] = dict.fromkeys(inside)
        for run in initial:
            if run in known:
                seen.setdefault(run)
            else:
                _, _, tail = run.partition(" ")
                if tail:
                    seen.setdefault(tail)
        out.append(list(seen))
    return out


class KeyTerm(NamedTuple):
    """A term of the sources: its text, how many sources mention it, and its kind."""

    text: str
    mentions: int
    kind: Literal["entity", "tag"]


def key_terms(sources: Sequence[Source], limit: int, *,
              entities: Sequence[Sequence[str]] | None = None) -> list[KeyTerm]:
    """The ``limit`` dominant terms of ``sources``.

    Terms are entities and tags, counted once per source that mentions them (a tag and an
    entity with the same lowercase text are one term, shown as the entity). Ordered by
    count descending, then lowercase text, then text: deterministic. ``entities``:
    ``entities_of(sources)`` if the caller has it already (computed here otherwise).

    Runtime complexity: O(total content length + T log T) for T distinct terms.
    """
    ents = entities_of(sources) if entities is None else entities
    shown: dict[str, str] = {}  # lowercase -> displayed text
    is_entity: dict[str, bool] = {}
    count: dict[str, int] = {}
    for source, source_ents in zip(sources, ents, strict=True):
        mentioned: set[str] = set()
        for e in source_ents:
            low = e.lower()
            if low not in mentioned:
                mentioned.add(low)
                if not is_entity.get(low, False):
                    shown[low], is_entity[low] = e, True
                count[low] = count.get(low, 0) + 1
        for t in tags_of(source):
            tag = t.strip()
            low = tag.lower()
            if low and low not in mentioned:
                mentioned.add(low)
                if low not in shown:
                    shown[low], is_entity[low] = tag, False
                count[low] = count.get(low, 0) + 1
    ordered = sorted(
        (KeyTerm(shown[low], n, "entity" if is_entity[low] else "tag")
         for low, n in count.items()),
        key=lambda k: (-k.mentions, k.text.lower(), k.text),
    )
    return ordered[:limit]


def word_set(text: str) -> frozenset[str]:
    """Lowercase word tokens of ``text`` (for presence checks of terms)."""
    return frozenset(_WORD.findall(text.lower()))


def term_in(term: str, words: frozenset[str]) -> bool:
    """Whether every word of ``term`` is in ``words`` (a :func:`word_set`)."""
    parts = _WORD.findall(term.lower())
    return bool(parts) and all(p in words for p in parts)
