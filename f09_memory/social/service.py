"""SocialService: the social layer behind ``engine.interact*``, ``hear``, ``opinion`` (index 15).

A batch of interactions (``social.interactions``) is validated whole, then applied to the
ledger (``social.ledger``) in order; each notable change (first meeting, first hearsay about
an unknown agent, trust crossing ``trust_threshold``, betrayal: see ``SocialSettings``)
becomes a social record through the writer (so redaction, caps, events, journaling and the
state hash apply as to any record) and a ``memory:social:changed`` event.

Hearsay: an item of kind ``hearsay`` weighs ``weight * kind_weights["hearsay"]`` times, per
hop of ``(source, *chain)``, ``hop_factor * (1 + t) / 2`` where ``t`` is the trust of the
hop's listener in its teller (the agent in ``source``, ``source`` in ``chain[0]``, ...),
read from the ledger as it stands when the item is applied. Its record keeps the chain as
ids in metadata attributes (``via0``, ``via1``, ... and ``hearsayDepth``).

All or nothing: a bad item raises before anything changes; a batch whose records would
pass ``max_records_per_agent`` raises with the ledger rolled back.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.bus import SocialChanged
from f09_memory.core.state import EngineState
from f09_memory.core.writer import Writer
from f09_memory.errors import CapacityExceededError, InputInvalidError
from f09_memory.ingestion.validation import validate_agent_id
from f09_memory.schema.base import trusted
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.records import RecordMetadata, SocialMeta
from f09_memory.social.interactions import HEARSAY, ParsedBatch, parse_interactions
from f09_memory.social.ledger import LedgerBatch, LedgerOutcome, LedgerRules, SocialLedger
from f09_memory.social.opinion import Opinion

__all__ = ["SocialService", "record_metadata"]

_ORDERS = ("trust", "count", "recent")


def record_metadata(other: str, sentiment: float,
                    attributes: dict[str, Any]) -> RecordMetadata:
    """A social record's metadata, built from values validated here (no pydantic pass)."""
    social = trusted(SocialMeta, {"other_agent_id": other, "sentiment": sentiment})
    return trusted(RecordMetadata, {
        "tags": (), "source_event": None, "source_ref_ids": (), "spatial": None,
        "social": social, "procedural": None, "flagged": False, "attributes": attributes})


class SocialService:
    """The social layer of one engine.

    Args:
        state: The engine state (the ledger is registered in it).
        writer: The write path (social records).
    """

    def __init__(self, state: EngineState, writer: Writer) -> None:
        self.state = state
        self.writer = writer
        self.settings = state.config.social
        self.ledger = SocialLedger()
        state.register(self.ledger)
        self._limit = writer.ingestor.limits.agent_id
        self._rules = LedgerRules(self.settings.betrayal_trust,
                                  self.settings.betrayal_sentiment,
                                  self.settings.trust_threshold, self.settings.trust_margin)
        self._cleared: set[str] = set()
        """Ids that passed the private-data check (a cache: the check is pure)."""
        writer.forget_hooks.append(self.forget_agent)

    def forget_agent(self, agent_id: str) -> None:
        """Drop the agent's own opinions (``forget(agent_id=...)``).

        Others' opinions of the agent are their memories: they stay.
        """
        others = sorted(self.ledger.others(agent_id))
        self.ledger.delete([(agent_id, other) for other in others])

    # ------------------------------------------------------------------ checks
    def _refuse_private(self, ids: Sequence[str], field: str) -> None:
        redactor = self.writer.ingestor.redactor
        if not redactor.enabled:
            return
        cleared = self._cleared
        for value in dict.fromkeys(ids):
            if value not in cleared:
                redactor.refuse_private(value, field=field)

    def _pair(self, agent_id: object, other_agent_id: object) -> tuple[str, str]:
        agent = validate_agent_id(agent_id, self._limit)
        other = validate_agent_id(other_agent_id, self._limit)
        if agent == other:
            raise InputInvalidError("other_agent_id must differ from agent_id (no opinion "
                                    "of oneself)", details={"field": "other_agent_id"})
        return agent, other

    # ------------------------------------------------------------------ writing
    def parse(self, items: object, now: int) -> ParsedBatch:
        """Validate a batch of interactions (all of it, changing nothing) as columns.

        Raises:
            InputInvalidError: A malformed item (its index in the message) or a private id.
        """
        parsed = parse_interactions(items, self.settings, self._limit, now)
        self._refuse_private(parsed.agents, "agent_id")
        self._refuse_private(parsed.others, "other_agent_id")
        if parsed.hearsay:
            self._refuse_private([c for chain in parsed.chains for c in chain], "chain")
        return parsed

    def apply(self, items: object, now: int) -> list[SocialChanged]:
        """Validate and apply a batch of interactions; return the notable changes in order.

        Raises:
            InputInvalidError: A malformed item (its index in the message) or a private id.
            CapacityExceededError: The notable records would pass ``max_records_per_agent``.
        """
        return self.apply_parsed(self.parse(items, now))

    def apply_parsed(self, parsed: ParsedBatch) -> list[SocialChanged]:
        """Apply a batch :meth:`parse` accepted; see :meth:`apply`.

        Raises:
            CapacityExceededError: The notable records would pass ``max_records_per_agent``
                (the ledger is rolled back).
        """
        n = len(parsed.agents)
        if n == 0:
            return []
        ledger = self.ledger
        keys = list(zip(parsed.agents, parsed.others, strict=True))
        slots, saved = ledger.rows_saved(keys)
        outcomes = [self._apply_segment(parsed, slots, lo, hi)
                    for lo, hi in self._segments(parsed, keys)]
        out = outcomes[0] if len(outcomes) == 1 else LedgerOutcome(
            *(np.concatenate([getattr(o, f) for o in outcomes]) for f in
              ("trust_before", "trust_after", "count_before", "hearsay_before", "betrayal",
               "flip")))
        changes = self._changes(parsed, out)
        try:
            ids = self._records(parsed, changes, out.flip)
        except (CapacityExceededError, InputInvalidError):  # raised before any record
            ledger.restore(saved)
            raise
        if self.writer.ingestor.redactor.enabled:
            self._cleared.update(parsed.agents)
            self._cleared.update(parsed.others)
            for chain in parsed.chains:
                self._cleared.update(chain)
        events = [SocialChanged(agent_id=parsed.agents[i], other_agent_id=parsed.others[i],
                                change=change, trust=float(out.trust_after[i]),
                                record_id=rid)
                  for (i, change), rid in zip(changes, ids, strict=True)]
        if events and self.writer.wants(SocialChanged.name):
            self.writer.publish(list(events))
        return events

    @staticmethod
    def _segments(parsed: ParsedBatch, keys: list[tuple[str, str]]) -> list[tuple[int, int]]:
        """Cut the batch where a hearsay item reads a trust an earlier item of it changed."""
        n = len(keys)
        if not parsed.hearsay:
            return [(0, n)]
        bounds = []
        start = 0
        written: set[tuple[str, str]] = set()
        for i, key in enumerate(keys):
            chain = parsed.chains[i]
            if chain and i > start:
                reads = [(key[0], chain[0]), *pairwise(chain)]
                if any(r in written for r in reads):
                    bounds.append((start, i))
                    start = i
                    written = set()
            written.add(key)
        bounds.append((start, n))
        return bounds

    def _apply_segment(self, parsed: ParsedBatch, slots: NDArray[np.intp], lo: int,
                       hi: int) -> LedgerOutcome:
        s = self.settings
        kw = s.kind_weights
        if parsed.plain:
            w = np.full(hi - lo, 1.0 * kw["interaction"])
            betrayal_kind = np.zeros(hi - lo, dtype=np.bool_)
        else:
            w = np.array([w * kw[k] for w, k in zip(parsed.weights[lo:hi],
                                                     parsed.kinds[lo:hi], strict=True)],
                         dtype=np.float64)
            betrayal_kind = np.array([k == "betrayal" for k in parsed.kinds[lo:hi]],
                                     dtype=np.bool_)
        hearsay = np.zeros(hi - lo, dtype=np.bool_)
        if parsed.hearsay:
            trust = self.ledger.column("trust")
            slot = self.ledger.slot
            for j in range(hi - lo):
                chain = parsed.chains[lo + j]
                if not chain:
                    continue
                hearsay[j] = True
                listener = parsed.agents[lo + j]
                discount = 1.0
                for teller in chain:
                    row = slot((listener, teller))
                    t = 0.0 if row is None else float(trust[row])
                    discount *= s.hop_factor * (1.0 + t) / 2.0
                    listener = teller
                w[j] *= discount
        batch = LedgerBatch(
            slots=slots[lo:hi], sentiment=np.array(parsed.sentiments[lo:hi], dtype=np.float64),
            sentiment_rate=np.minimum(s.sentiment_alpha * w, 1.0),
            trust_rate=np.minimum(s.trust_alpha * w, 1.0), weight=w, hearsay=hearsay,
            betrayal_kind=betrayal_kind,
            times=np.array(parsed.times[lo:hi], dtype=np.int64))
        return self.ledger.apply(batch, self._rules)

    def _changes(self, parsed: ParsedBatch, out: LedgerOutcome) -> list[tuple[int, str]]:
        """The notable changes as ``(item index, change)``, in input order."""
        hearsay = (np.array([bool(c) for c in parsed.chains], dtype=np.bool_) if parsed.hearsay
                   else np.zeros(len(parsed.chains), dtype=np.bool_))
        before = out.count_before + out.hearsay_before
        first_meeting = ~hearsay & (out.count_before == 0)
        first_heard = hearsay & (before == 0)
        flip = out.flip != 0
        notable = np.flatnonzero(first_meeting | first_heard | flip | out.betrayal)
        changes: list[tuple[int, str]] = []
        for i in notable.tolist():
            if first_meeting[i]:
                changes.append((i, "first-meeting"))
            if first_heard[i]:
                changes.append((i, "hearsay"))
            if out.betrayal[i]:
                changes.append((i, "betrayal"))
            if flip[i]:
                changes.append((i, "trust-flip"))
        return changes

    def _records(self, parsed: ParsedBatch, changes: list[tuple[int, str]],
                 flip: NDArray[np.int64]) -> list[str | None]:
        """Create the changes' social records; return their ids (``None``: records off).

        The records are stored with one ``ingest_batch`` per run of equal times (each
        agent's records in input order); ``ingest_batch`` checks every agent's capacity
        before it stores anything, and with several runs every agent is checked first here.

        Raises:
            CapacityExceededError: Before any record is stored.
        """
        if not changes or not self.settings.records:
            return [None] * len(changes)
        runs: list[tuple[int, list[dict[str, Any]]]] = []
        for i, change in changes:
            t = parsed.times[i]
            if not runs or runs[-1][0] != t:
                runs.append((t, []))
            item = self._record_item(parsed, i, change, int(flip[i]))
            item["agent_id"] = parsed.agents[i]
            runs[-1][1].append(item)
        if len(runs) > 1:
            per_agent: dict[str, list[dict[str, Any]]] = {}
            for _, items in runs:
                for item in items:
                    per_agent.setdefault(item["agent_id"], []).append(item)
            store = self.state.store
            for agent in sorted(per_agent):
                pending = self.writer.validate_items(
                    [{k: v for k, v in it.items() if k != "agent_id"} for it in per_agent[agent]])
                self.writer.check_capacity(store.get(agent), agent, pending)
        ids: list[str | None] = []
        for t, items in runs:
            ids.extend(self.writer.ingest_batch(items, t).ids)
        return ids

    def _record_item(self, parsed: ParsedBatch, i: int, change: str,
                     flip: int) -> dict[str, Any]:
        s = self.settings
        other = parsed.others[i]
        chain = parsed.chains[i]
        attributes: dict[str, Any] = {}
        tags = [change]
        if change == "first-meeting":
            content, importance = f"Met {other} for the first time.", s.first_meeting_importance
        elif change == "hearsay":
            content, importance = f"Heard about {other} from {chain[0]}.", s.hearsay_importance
        elif change == "betrayal":
            content, importance = f"Betrayed by {other}.", s.betrayal_importance
        else:
            gained = flip > 0
            content = f"Came to trust {other}." if gained else f"Stopped trusting {other}."
            tags.append("trust-gained" if gained else "trust-lost")
            importance = s.trust_flip_importance
        if chain:
            if change != HEARSAY:
                tags.append(HEARSAY)
            attributes["hearsayDepth"] = len(chain)
            attributes.update({f"via{k}": teller for k, teller in enumerate(chain)})
        return {"content": content, "layer": MemoryLayer.SOCIAL, "importance": importance,
                "tags": tags, "metadata": record_metadata(other, parsed.sentiments[i],
                                                          attributes)}

    # ------------------------------------------------------------------ reading
    def opinion(self, agent_id: object, other_agent_id: object) -> Opinion:
        """The agent's opinion of the other (neutral for a stranger).

        Raises:
            InputInvalidError: An invalid or private id, or the same id twice.
        """
        agent, other = self._pair(agent_id, other_agent_id)
        slot = self.ledger.slot((agent, other))
        if slot is None:
            self._refuse_private((agent, other), "agent_id")
            return Opinion(agent, other)
        return self._opinion(agent, other, slot)

    def _opinion(self, agent: str, other: str, slot: int) -> Opinion:
        col = self.ledger.column
        direct, heard = float(col("direct_weight")[slot]), float(col("hearsay_weight")[slot])
        total = direct + heard
        return Opinion(agent, other, float(col("sentiment")[slot]), float(col("trust")[slot]),
                       int(col("count")[slot]), int(col("hearsay_count")[slot]),
                       int(col("betrayals")[slot]), int(col("first_at")[slot]),
                       int(col("last_at")[slot]), heard / total if total > 0 else 0.0)

    def acquaintances(self, agent_id: object, k: object, by: object,
                      include_hearsay: object) -> list[Opinion]:
        """The agent's ``k`` first others by ``by`` (quantized, descending), then id.

        Raises:
            InputInvalidError: A bad id, ``k``, ``by`` or ``include_hearsay``.
        """
        agent = validate_agent_id(agent_id, self._limit)
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InputInvalidError("k must be a non-negative integer", details={"field": "k"})
        if by not in _ORDERS or not isinstance(by, str):
            raise InputInvalidError(f"by must be one of {list(_ORDERS)}",
                                    details={"field": "by"})
        if not isinstance(include_hearsay, bool):
            raise InputInvalidError("include_hearsay must be a bool",
                                    details={"field": "include_hearsay"})
        row = self.ledger.others(agent)
        if not row:
            self._refuse_private((agent,), "agent_id")
            return []
        others = sorted(row)
        slots = np.array([row[o] for o in others], dtype=np.intp)
        col = self.ledger.column
        if not include_hearsay:
            keep = col("count")[slots] > 0
            slots = slots[keep]
            others = [o for o, kept in zip(others, keep.tolist(), strict=True) if kept]
        if by == "trust":
            quantum = self.state.config.score_quantum
            key = -np.round(col("trust")[slots] * quantum).astype(np.int64)
        elif by == "count":
            key = -col("count")[slots]
        else:
            key = -col("last_at")[slots]
        order = np.lexsort((np.arange(slots.shape[0]), key))[:k]  # others are sorted: id last
        return [self._opinion(agent, others[j], int(slots[j])) for j in order.tolist()]
