"""SocialSettings: the relationship ledger's rates and the notable-change thresholds (index 15).

The social layer (``f09_memory.social``) keeps, per (agent, other agent), a sentiment EMA
and a trust EMA, both in [-1, 1] (0 is neutral). One interaction of sentiment ``x`` (in
[-1, 1]) and weight ``w`` moves them by

    sentiment += min(1, sentiment_alpha * w * kind_weight) * (x - sentiment)
    trust     += min(1, trust_alpha * w * kind_weight) * (x - trust)

so trust moves slower than sentiment by default. Hearsay (an interaction of kind
``hearsay``) is weighted down once per hop of its chain by
``hop_factor * (1 + t) / 2``, where ``t`` is the listener's trust in the teller at that hop
(a stranger, trust 0, halves the weight; full distrust gives it none).
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field, StrictBool, StrictInt, field_validator

from f09_memory.errors import ErrorCode
from f09_memory.schema.base import BoundaryModel

__all__ = ["DEFAULT_KIND_WEIGHTS", "SocialSettings"]

Rate = Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False)]
Signed = Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False)]
Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]

DEFAULT_KIND_WEIGHTS: dict[str, float] = {
    "interaction": 1.0, "trade": 1.0, "help": 1.5, "gift": 1.5, "betrayal": 3.0,
    "hearsay": 1.0,
}
"""Weight of each interaction kind (multiplies the caller's weight); ``hearsay`` is the
base weight of hearsay before its per-hop discount."""


class SocialSettings(BoundaryModel):
    """The social ledger's settings (``MemoryConfig.social``).

    Notable changes create a social record (when ``records`` is on) and emit
    ``memory:social:changed``: the first direct interaction with an agent
    (``first-meeting``); trust passing ``trust_threshold`` by more than ``trust_margin`` to
    the other side than it last took (``trust-flip``; taking a first side is none); a
    strongly negative interaction (sentiment at most ``betrayal_sentiment``, or kind
    ``betrayal``) while trust was at least ``betrayal_trust`` (``betrayal``); and the first
    hearsay about an agent the listener knew nothing of (``hearsay``).

    Raises:
        ConfigInvalidError: A value out of range, a kind name that is not a short
            lowercase word, or no ``interaction``/``hearsay`` kind.
    """

    _default_code: ClassVar[ErrorCode] = ErrorCode.MEMORY_CONFIG_INVALID

    sentiment_alpha: Rate = 0.3
    """EMA rate of sentiment per unit of interaction weight."""
    trust_alpha: Rate = 0.1
    """EMA rate of trust per unit of interaction weight (slower than sentiment)."""
    kind_weights: dict[str, Annotated[float, Field(gt=0.0, le=100.0, allow_inf_nan=False)]] = (
        Field(default_factory=lambda: dict(DEFAULT_KIND_WEIGHTS)))
    """Weight per interaction kind; an interaction of a kind not listed is refused."""
    trust_threshold: Annotated[float, Field(ge=-0.99, le=0.99, allow_inf_nan=False)] = 0.0
    """Trust above it is trust; crossing it either way is a ``trust-flip``."""
    trust_margin: Annotated[float, Field(ge=0.0, le=0.5, allow_inf_nan=False)] = 0.05
    """Hysteresis: trust must pass ``trust_threshold`` by this much to take a side, and a
    flip is a change of side, so trust hovering at the threshold does not flip each step."""
    betrayal_trust: Signed = 0.5
    """A betrayal needs trust at least this before the interaction."""
    betrayal_sentiment: Annotated[float, Field(ge=-1.0, le=0.0, allow_inf_nan=False)] = -0.5
    """An interaction at most this negative (or of kind ``betrayal``) can be a betrayal."""
    hop_factor: Unit = 0.5
    """Hearsay weight kept per hop, times ``(1 + trust in the teller) / 2``."""
    max_hearsay_depth: Annotated[StrictInt, Field(ge=1, le=16)] = 3
    """Longest accepted hearsay chain (the teller plus who told them, ...)."""
    max_weight: Annotated[float, Field(gt=0.0, le=1_000.0, allow_inf_nan=False)] = 10.0
    """Largest weight a caller may give one interaction."""
    records: StrictBool = True
    """Create a social record for each notable change (off: the ledger and events only)."""
    first_meeting_importance: Unit = 0.4
    trust_flip_importance: Unit = 0.6
    betrayal_importance: Unit = 0.8
    hearsay_importance: Unit = 0.3

    @field_validator("kind_weights")
    @classmethod
    def _check_kinds(cls, value: dict[str, float]) -> dict[str, float]:
        for kind in value:
            if not (0 < len(kind) <= 32 and kind.isascii() and kind.replace("-", "").isalpha()
                    and kind.islower()):
                raise ValueError("kind names are lowercase ASCII words of at most 32 "
                                 "characters (letters and '-')")
        missing = [k for k in ("interaction", "hearsay") if k not in value]
        if missing:
            raise ValueError(f"kind_weights must name the kinds {missing}")
        return dict(sorted(value.items()))
