"""Interactions: the social layer's input, validated into columns (index 15).

An interaction is what one agent experienced of another: a sentiment in [-1, 1], at a
logical time, of a kind (``SocialSettings.kind_weights``: ``interaction``, ``help``,
``gift``, ``betrayal``, ``trade``, ``hearsay``...) and a weight. A batch item is either

- an :class:`Interaction` (or a plain tuple in its field order:
  ``(agent_id, other_agent_id, sentiment[, now[, kind[, weight[, source[, chain]]]]])``), or
- a mapping (the shape engine events are routed in)::

      {"agent_id": "bob", "other_agent_id": "alice", "sentiment": -0.8,
       "kind": "betrayal", "weight": 1.0, "now": 1200}
      {"agentId": "bob", "otherAgentId": "carol", "sentiment": 0.5, "kind": "hearsay",
       "source": "alice", "chain": ["dave"]}

  (snake_case or camelCase keys; only ``agent_id``, ``other_agent_id`` and ``sentiment``
  are required; an unknown key is refused).

Hearsay (kind ``hearsay``) names who told the agent (``source``) and, in ``chain``, who told
the source, and so on back to the witness: ``(source, *chain)`` is at most
``max_hearsay_depth`` distinct ids, none of them the agent.

Every item is checked before any is applied; the first bad one raises with its index, and
messages name the field and the rule, never the value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from f09_memory._validate import check_now
from f09_memory.config.social import SocialSettings
from f09_memory.core.frames import indexed
from f09_memory.errors import InputInvalidError, MemoryEngineError
from f09_memory.ingestion.validation import validate_agent_id

__all__ = ["HEARSAY", "Interaction", "ParsedBatch", "hearsay_item", "parse_interactions"]

HEARSAY = "hearsay"
"""The interaction kind of second-hand evidence."""

_ALIASES = {"agent_id": "agent_id", "agentId": "agent_id",
            "other_agent_id": "other_agent_id", "otherAgentId": "other_agent_id",
            "sentiment": "sentiment", "now": "now", "kind": "kind", "weight": "weight",
            "source": "source", "chain": "chain"}


class Interaction(NamedTuple):
    """One interaction of ``agent_id`` with (or hearsay about) ``other_agent_id``.

    Attributes:
        agent_id: Whose ledger changes.
        other_agent_id: Whom it is about.
        sentiment: How it went for the agent, in [-1, 1].
        now: Its logical time (``None``: the batch's).
        kind: A kind of ``SocialSettings.kind_weights``.
        weight: Multiplies the kind's weight, in (0, ``max_weight``].
        source: Hearsay only: who told the agent.
        chain: Hearsay only: who told the source, and so on (ids only).
    """

    agent_id: str
    other_agent_id: str
    sentiment: float
    now: int | None = None
    kind: str = "interaction"
    weight: float = 1.0
    source: str | None = None
    chain: tuple[str, ...] = ()


_NO_CHAIN: tuple[str, ...] = ()
_DEFAULTS: tuple[Any, ...] = (None, "interaction", 1.0, None, _NO_CHAIN)
"""The values of the optional fields, from ``now`` on."""


@dataclass(frozen=True, slots=True)
class ParsedBatch:
    """A validated batch as columns, in input order.

    Attributes:
        agents: Each item's agent.
        others: Each item's other agent.
        sentiments: Each item's sentiment.
        kinds: Each item's kind.
        weights: Each item's caller weight.
        times: Each item's logical time.
        chains: Each hearsay item's ``(source, *chain)`` (empty for direct ones).
        hearsay: Whether any item is hearsay.
        plain: Whether every item is of kind ``interaction`` with weight 1.
    """

    agents: list[str]
    others: list[str]
    sentiments: list[float]
    kinds: list[str]
    weights: list[float]
    times: list[int]
    chains: list[tuple[str, ...]]
    hearsay: bool
    plain: bool


def hearsay_item(agent_id: str, about: str, source: str, sentiment: float,
                 chain: Sequence[str], weight: float) -> dict[str, object]:
    """The interaction item of ``engine.hear``: ``source`` told ``agent_id`` about ``about``."""
    return {"agent_id": agent_id, "other_agent_id": about, "sentiment": sentiment,
            "kind": HEARSAY, "weight": weight, "source": source, "chain": chain}


def _bad(field: str, rule: str) -> InputInvalidError:
    return InputInvalidError(f"{field} {rule}", details={"field": field})


def _number(value: object, field: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        out = float(value)
    else:
        raise _bad(field, "must be a number")
    if not math.isfinite(out):
        raise _bad(field, "must be finite (not NaN or infinite)")
    return out


def _item_fields(item: object) -> tuple[Any, ...]:
    if isinstance(item, Mapping):
        values: dict[str, Any] = {}
        for key, value in item.items():
            name = _ALIASES.get(key) if isinstance(key, str) else None
            if name is None:
                raise _bad("interaction", "has an unknown key: use agent_id, other_agent_id, "
                                          "sentiment, now, kind, weight, source, chain")
            if name in values:
                raise _bad(name, "is given twice (snake_case and camelCase)")
            values[name] = value
        for name in ("agent_id", "other_agent_id", "sentiment"):
            if name not in values:
                raise _bad(name, "is required")
        return (values["agent_id"], values["other_agent_id"], values["sentiment"],
                values.get("now"), values.get("kind", "interaction"),
                values.get("weight", 1.0), values.get("source"), values.get("chain", ()))
    if isinstance(item, tuple | list) and 3 <= len(item) <= 8:
        return tuple(item) + _DEFAULTS[len(item) - 3:]
    raise _bad("interaction", "must be an Interaction, a tuple (agent_id, other_agent_id, "
                              "sentiment, ...) or a mapping")


def _empty(chain: object) -> bool:
    return chain is None or (isinstance(chain, tuple | list) and not chain)


def _chain(source: object, chain: object, agent: str, limit: int,
           settings: SocialSettings) -> tuple[str, ...]:
    if source is None:
        raise _bad("source", "is required for hearsay (who told the agent)")
    if chain is None:
        chain = ()
    if isinstance(chain, str | bytes | Mapping) or not isinstance(chain, Iterable):
        raise _bad("chain", "must be a list of agent ids")
    hops = (source, *chain)
    if len(hops) > settings.max_hearsay_depth:
        raise _bad("chain", f"is deeper than social.max_hearsay_depth="
                            f"{settings.max_hearsay_depth} (source included)")
    out = tuple(validate_agent_id(h, limit) for h in hops)
    if agent in out:
        raise _bad("chain", "must not name the listening agent")
    if len(set(out)) != len(out):
        raise _bad("chain", "must not repeat an id")
    return out


def _plain_frame(items: list[Any] | tuple[Any, ...], limit: int,
                 default_now: int) -> ParsedBatch | None:
    """A frame of plain ``(agent, other, sentiment)`` tuples checked column by column.

    ``None`` when the frame is not plain or holds a bad item: the item-by-item path then
    gives the same batch or raises for the first bad item.
    """
    if not all(type(it) is tuple and len(it) == 3 for it in items):
        return None
    if not items:
        return None
    agents, others, sentiments = (list(col) for col in zip(*items, strict=True))
    ids = set(agents)
    ids.update(others)
    if not set(map(type, ids)) <= {str} or not set(map(type, sentiments)) <= {float, int}:
        return None
    if not all(0 < len(i) <= limit and i.isascii() for i in ids):
        return None
    if any(map(str.__eq__, agents, others)):
        return None
    values = np.array(sentiments, dtype=np.float64)
    if not ((values >= -1.0) & (values <= 1.0)).all():  # NaN fails too
        return None
    n = len(items)
    return ParsedBatch(agents, others, values.tolist(), ["interaction"] * n, [1.0] * n,
                       [default_now] * n, [_NO_CHAIN] * n, False, True)


def parse_interactions(items: object, settings: SocialSettings, limit: int,
                       default_now: int) -> ParsedBatch:
    """Validate a batch of interactions (all before any is applied).

    Args:
        items: Interactions, tuples or mappings (see the module docstring).
        settings: The social settings (kinds, weight and depth limits).
        limit: The longest agent id (``max_agent_id_chars``).
        default_now: The time of items without their own.

    Returns:
        The batch as columns.

    Raises:
        InputInvalidError: ``items`` is not a list, or an item is malformed (the message
            gives its index): an empty or overlong id, an interaction with oneself, a
            sentiment that is not a finite number in [-1, 1], an unknown kind, a weight out
            of (0, max_weight], a bad time, hearsay without a source or with a bad chain,
            or a source/chain on a direct interaction.
    """
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise _bad("interactions", "must be a list of interactions")
    if isinstance(items, list | tuple):
        fast = _plain_frame(items, limit, default_now)
        if fast is not None:
            return fast
    kinds_ok = settings.kind_weights
    max_weight = settings.max_weight
    agents: list[str] = []
    others: list[str] = []
    sentiments: list[float] = []
    kinds: list[str] = []
    weights: list[float] = []
    times: list[int] = []
    chains: list[tuple[str, ...]] = []
    hearsay = False
    plain = True
    for i, item in enumerate(items):
        try:
            if type(item) is tuple and len(item) == 3:  # the common case
                agent, other, sentiment = item
                now, kind, weight, source, chain = None, "interaction", 1.0, None, _NO_CHAIN
            else:
                agent, other, sentiment, now, kind, weight, source, chain = _item_fields(item)
                plain = plain and kind == "interaction" and weight == 1.0
            if not (type(agent) is str and 0 < len(agent) <= limit and agent.isascii()):
                agent = validate_agent_id(agent, limit)
            if not (type(other) is str and 0 < len(other) <= limit and other.isascii()):
                other = validate_agent_id(other, limit)
            if agent == other:
                raise _bad("other_agent_id", "must differ from agent_id (no opinion of "
                                             "oneself)")
            if type(sentiment) is not float or not -1.0 <= sentiment <= 1.0:
                sentiment = _number(sentiment, "sentiment")
                if not -1.0 <= sentiment <= 1.0:
                    raise _bad("sentiment", "must be in [-1, 1]")
            if type(kind) is not str or kind not in kinds_ok:
                raise _bad("kind", f"must be one of {sorted(kinds_ok)} "
                                   "(social.kind_weights)")
            if weight != 1.0 or type(weight) is not float:
                weight = _number(weight, "weight")
                if not 0.0 < weight <= max_weight:
                    raise _bad("weight", f"must be in (0, social.max_weight={max_weight}]")
            t = default_now if now is None else check_now(now)
            if kind == HEARSAY:
                chains.append(_chain(source, chain, agent, limit, settings))
                hearsay = True
            else:
                if source is not None or (chain is not _NO_CHAIN and not _empty(chain)):
                    raise _bad("source", "and chain are for hearsay only (kind 'hearsay')")
                chains.append(_NO_CHAIN)
        except MemoryEngineError as exc:
            raise indexed(exc, i) from None
        agents.append(agent)
        others.append(other)
        sentiments.append(sentiment)
        kinds.append(kind)
        weights.append(weight)
        times.append(t)
    return ParsedBatch(agents, others, sentiments, kinds, weights, times, chains, hearsay,
                       plain and not hearsay)

