"""Opinion: what one agent thinks of another, read from the social ledger (index 15)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["AcquaintanceOrder", "Opinion"]

AcquaintanceOrder = Literal["trust", "count", "recent"]
"""How ``engine.acquaintances`` orders: by trust, by direct interactions, or by the latest
evidence (each descending, quantized, then the other id ascending)."""


@dataclass(frozen=True, slots=True)
class Opinion:
    """One agent's view of another (neutral, with ``count == 0``, for a stranger).

    Attributes:
        agent_id: Whose opinion.
        other_agent_id: Of whom.
        sentiment: The sentiment EMA in [-1, 1] (0 neutral).
        trust: The trust EMA in [-1, 1] (0 neutral; above ``social.trust_threshold``:
            trusted).
        count: Direct interactions.
        hearsay_count: Hearsay heard about the other.
        betrayals: Betrayals suffered from the other.
        first_at: Logical time of the first evidence (``None``: none).
        last_at: Logical time of the latest evidence (``None``: none).
        hearsay_share: The share of the evidence weight that came by hearsay, in [0, 1].
    """

    agent_id: str
    other_agent_id: str
    sentiment: float = 0.0
    trust: float = 0.0
    count: int = 0
    hearsay_count: int = 0
    betrayals: int = 0
    first_at: int | None = None
    last_at: int | None = None
    hearsay_share: float = 0.0
