"""SocialLedger: one row per (agent, other agent), updated in columnar batches (index 15).

Columns (a :class:`~f09_memory.core.tables.KeyedTable`, so saved, hashed and journaled):

- ``sentiment``, ``trust`` (float64 in [-1, 1], 0 neutral): EMAs of the interactions'
  sentiment, at the rates the caller passes per interaction (``SocialSettings``);
- ``direct_weight``, ``hearsay_weight`` (float64, >= 0): the evidence weight seen first hand
  and by hearsay (the opinion's ``hearsay_share``);
- ``count``, ``hearsay_count``, ``betrayals`` (int64, >= 0): direct interactions, hearsay
  heard and betrayals;
- ``stance`` (int64 in {-1, 0, 1}): the side of the trust threshold last passed by more than
  the margin (1 trusted, -1 distrusted, 0 not yet): a trust flip is a change of stance, so
  trust wandering around the threshold does not flip at every step (hysteresis);
- ``first_at``, ``last_at`` (int64 logical time): the first and latest evidence applied.

:meth:`SocialLedger.apply` updates many rows at once: the interactions on one pair are applied
in input order, so a batch gives exactly (bit for bit) the values of applying its
interactions one by one. Distinct pairs are updated together in numpy "rounds" (round ``r``
applies each pair's ``r``-th interaction of the batch); the few interactions left once
rounds get small (one pair repeated many times) run in a scalar loop doing the same float
operations in the same order.

Runtime complexity: ``apply`` O(n log n) for the sort plus O(rounds) numpy passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from f09_memory.core.tables import KeyedTable

__all__ = ["LedgerBatch", "LedgerOutcome", "LedgerRules", "SocialLedger"]

_SMALL_ROUND = 16
"""Below this many interactions in a round the rest run in the scalar loop."""


@dataclass(frozen=True, slots=True)
class LedgerBatch:
    """Validated interactions as columns, in application order.

    Attributes:
        slots: Each interaction's ledger row.
        sentiment: Its sentiment in [-1, 1].
        sentiment_rate: Its sentiment EMA rate in [0, 1].
        trust_rate: Its trust EMA rate in [0, 1].
        weight: Its evidence weight (>= 0).
        hearsay: Whether it is hearsay.
        betrayal_kind: Whether its kind is ``betrayal``.
        times: Its logical time.
    """

    slots: NDArray[np.intp]
    sentiment: NDArray[np.float64]
    sentiment_rate: NDArray[np.float64]
    trust_rate: NDArray[np.float64]
    weight: NDArray[np.float64]
    hearsay: NDArray[np.bool_]
    betrayal_kind: NDArray[np.bool_]
    times: NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class LedgerRules:
    """The notable-change thresholds the kernel applies (``SocialSettings``).

    Attributes:
        betrayal_trust: Trust needed before a betrayal.
        betrayal_sentiment: Sentiment at most which a direct interaction can betray.
        trust_threshold: The trust threshold of the stance.
        trust_margin: How far past the threshold trust must go to change the stance.
    """

    betrayal_trust: float
    betrayal_sentiment: float
    trust_threshold: float
    trust_margin: float


@dataclass(frozen=True, slots=True)
class LedgerOutcome:
    """What each interaction saw and left (for the notable-change rules).

    Attributes:
        trust_before: Trust before it.
        trust_after: Trust after it.
        count_before: Direct interactions before it.
        hearsay_before: Hearsay heard before it.
        betrayal: Whether it was a betrayal (direct, negative enough, trusted enough).
        flip: The trust flip it caused: 1 (came to trust), -1 (stopped trusting), 0 none
            (a first stance is no flip).
    """

    trust_before: NDArray[np.float64]
    trust_after: NDArray[np.float64]
    count_before: NDArray[np.int64]
    hearsay_before: NDArray[np.int64]
    betrayal: NDArray[np.bool_]
    flip: NDArray[np.int64]


class SocialLedger(KeyedTable):
    """The relationship ledger: key ``(agent_id, other_agent_id)``; see the module docstring.

    Keeps an index of each agent's others (rebuilt with the rows, never saved).

    Args:
        initial_capacity: Slots allocated at first.
    """

    NAME: ClassVar[str] = "social"
    KEY_ARITY: ClassVar[int] = 2
    FLOATS: ClassVar[tuple[str, ...]] = ("sentiment", "trust", "direct_weight",
                                         "hearsay_weight")
    INTS: ClassVar[tuple[str, ...]] = ("count", "hearsay_count", "betrayals", "first_at",
                                       "last_at", "stance")

    def reset(self) -> None:
        """Back to an empty, never used ledger."""
        super().reset()
        self._others: dict[str, dict[str, int]] = {}

    def _new_row(self, key: tuple[str, ...]) -> int:
        slot = super()._new_row(key)
        self._others.setdefault(key[0], {})[key[1]] = slot
        created = getattr(self, "_created", None)
        if created is not None:
            created.append(key)
        return slot

    def delete(self, keys: Any) -> int:
        """Remove rows (see :meth:`KeyedTable.delete`), keeping the per-agent index."""
        keys = list(keys)
        gone = super().delete(keys)
        for agent, other in keys:
            row = self._others.get(agent)
            if row is not None and other in row and (agent, other) not in self:
                del row[other]
                if not row:
                    del self._others[agent]
        return gone

    def others(self, agent_id: str) -> dict[str, int]:
        """The agent's others and their slots (do not mutate)."""
        return self._others.get(agent_id, {})

    # ------------------------------------------------------------------ rollback
    def rows_saved(self, keys: list[tuple[str, str]]
                   ) -> tuple[NDArray[np.intp], tuple[Any, ...]]:
        """:meth:`rows`, plus what :meth:`restore` needs to undo changes to those rows."""
        used = self._used
        self._created: list[tuple[str, ...]] = []
        try:
            slots = self.rows(keys)
            created = self._created
        finally:
            del self._created
        unique = np.unique(slots)
        return slots, (unique, {n: c[unique].copy() for n, c in self._cols.items()},
                       created, used)

    def restore(self, saved: tuple[Any, ...]) -> None:
        """Undo changes since :meth:`rows_saved`: old values back, rows created since gone.

        Runtime complexity: O(rows saved).
        """
        slots, values, created, used = saved
        self.delete(created)
        for name, col in self._cols.items():
            col[slots] = values[name]
        live = np.array([s for s in slots.tolist() if self._keys[s] is not None],
                        dtype=np.intp)
        self.touch(live)
        self._used = used

    # ------------------------------------------------------------------ updates
    def apply(self, batch: LedgerBatch, rules: LedgerRules) -> LedgerOutcome:
        """Apply validated interactions in order (their rows made and touched by :meth:`rows`).

        Args:
            batch: The interactions.
            rules: The betrayal and stance thresholds.

        Returns:
            Each interaction's before/after values.
        """
        n = batch.slots.shape[0]
        out = LedgerOutcome(np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int64),
                            np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.bool_),
                            np.zeros(n, dtype=np.int64))
        if n == 0:
            return out
        slots = batch.slots
        order = np.argsort(slots, kind="stable")
        ranked = slots[order]
        starts = np.ones(n, dtype=np.bool_)
        starts[1:] = ranked[1:] != ranked[:-1]
        first = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n) - first
        by_round = np.lexsort((np.arange(n), rank))
        sizes = np.bincount(rank)
        done = 0
        for size in sizes.tolist():
            if size < _SMALL_ROUND and n - done > size:
                break
            self._round(by_round[done:done + size], batch, out, rules)
            done += size
        if done < n:
            self._scalar(np.sort(by_round[done:]), batch, out, rules)
        return out

    def _round(self, idx: NDArray[np.intp], b: LedgerBatch, out: LedgerOutcome,
               rules: LedgerRules) -> None:
        c = self._cols
        s = b.slots[idx]
        x = b.sentiment[idx]
        hs = b.hearsay[idx]
        direct = ~hs
        sent = c["sentiment"][s]
        trust = c["trust"][s]
        count = c["count"][s]
        heard = c["hearsay_count"][s]
        new_s = np.minimum(np.maximum(sent + b.sentiment_rate[idx] * (x - sent), -1.0), 1.0)
        new_t = np.minimum(np.maximum(trust + b.trust_rate[idx] * (x - trust), -1.0), 1.0)
        betrayal = direct & (trust >= rules.betrayal_trust) & (
            (x <= rules.betrayal_sentiment) | b.betrayal_kind[idx])
        stance = c["stance"][s]
        new_stance = np.where(new_t > rules.trust_threshold + rules.trust_margin, 1,
                              np.where(new_t < rules.trust_threshold - rules.trust_margin, -1,
                                       stance))
        out.flip[idx] = np.where((stance != 0) & (new_stance != stance), new_stance, 0)
        c["stance"][s] = new_stance
        out.trust_before[idx] = trust
        out.trust_after[idx] = new_t
        out.count_before[idx] = count
        out.hearsay_before[idx] = heard
        out.betrayal[idx] = betrayal
        w = b.weight[idx]
        t = b.times[idx]
        c["sentiment"][s] = new_s
        c["trust"][s] = new_t
        c["count"][s] = count + direct
        c["hearsay_count"][s] = heard + hs
        c["betrayals"][s] += betrayal
        c["direct_weight"][s] += np.where(direct, w, 0.0)
        c["hearsay_weight"][s] += np.where(hs, w, 0.0)
        c["first_at"][s] = np.where(count + heard == 0, t, c["first_at"][s])
        c["last_at"][s] = np.where(count + heard == 0, t, np.maximum(c["last_at"][s], t))

    def _scalar(self, idx: NDArray[np.intp], b: LedgerBatch, out: LedgerOutcome,
                rules: LedgerRules) -> None:
        c = self._cols
        sent_c, trust_c, count_c, heard_c = (c["sentiment"], c["trust"], c["count"],
                                             c["hearsay_count"])
        first_c, last_c, betray_c = c["first_at"], c["last_at"], c["betrayals"]
        dw_c, hw_c, stance_c = c["direct_weight"], c["hearsay_weight"], c["stance"]
        high = rules.trust_threshold + rules.trust_margin
        low = rules.trust_threshold - rules.trust_margin
        for i in idx.tolist():
            s = int(b.slots[i])
            x = float(b.sentiment[i])
            hs = bool(b.hearsay[i])
            sent = float(sent_c[s])
            trust = float(trust_c[s])
            count = int(count_c[s])
            heard = int(heard_c[s])
            new_t = min(max(trust + float(b.trust_rate[i]) * (x - trust), -1.0), 1.0)
            betrayal = (not hs and trust >= rules.betrayal_trust
                        and (x <= rules.betrayal_sentiment or bool(b.betrayal_kind[i])))
            stance = int(stance_c[s])
            new_stance = 1 if new_t > high else -1 if new_t < low else stance
            out.flip[i] = new_stance if stance != 0 and new_stance != stance else 0
            stance_c[s] = new_stance
            out.trust_before[i] = trust
            out.trust_after[i] = new_t
            out.count_before[i] = count
            out.hearsay_before[i] = heard
            out.betrayal[i] = betrayal
            sent_c[s] = min(max(sent + float(b.sentiment_rate[i]) * (x - sent), -1.0), 1.0)
            trust_c[s] = new_t
            t = int(b.times[i])
            if count + heard == 0:
                first_c[s] = t
                last_c[s] = t
            else:
                last_c[s] = max(int(last_c[s]), t)
            if hs:
                heard_c[s] = heard + 1
                hw_c[s] = float(hw_c[s]) + float(b.weight[i])
            else:
                count_c[s] = count + 1
                dw_c[s] = float(dw_c[s]) + float(b.weight[i])
            betray_c[s] += int(betrayal)

    # ------------------------------------------------------------------ loading
    def validate(self, columns: dict[str, NDArray[Any]]) -> None:
        """Refuse loaded rows out of range.

        Raises:
            ValueError: sentiment or trust outside [-1, 1], a negative weight or count, or
                ``first_at`` after ``last_at``.
        """
        for name in ("sentiment", "trust"):
            col = columns[name]
            if col.shape[0] and (col.min() < -1.0 or col.max() > 1.0):
                raise ValueError(f"{self.NAME}: {name} outside [-1, 1]")
        for name in ("direct_weight", "hearsay_weight", "count", "hearsay_count",
                     "betrayals", "first_at"):
            col = columns[name]
            if col.shape[0] and col.min() < 0:
                raise ValueError(f"{self.NAME}: {name} is negative")
        if (columns["first_at"] > columns["last_at"]).any():
            raise ValueError(f"{self.NAME}: first_at after last_at")
        if (columns["betrayals"] > columns["count"]).any():
            raise ValueError(f"{self.NAME}: more betrayals than interactions")
        if (np.abs(columns["stance"]) > 1).any():
            raise ValueError(f"{self.NAME}: stance outside -1..1")

    def _check(self) -> None:
        """Assert the base invariants, value ranges and the per-agent index."""
        super()._check()
        live = np.array(sorted(self._slot_of.values()), dtype=np.intp)
        self.validate({n: c[live] for n, c in self._cols.items()})
        indexed = {(a, o): s for a, row in self._others.items() for o, s in row.items()}
        assert indexed == self._slot_of
        assert all(self._others.values())
