"""Claims and supersession (PRD sections 4.4, 8.1, 8.2, 8.5).

A claim is an optional structured statement attached to a record: ``subject`` (``user``,
``agent``, ``project:<x>``), ``predicate`` (``prefers``, ``budget_is``, ``decision``...),
``value``, ``scope`` (``session`` for "this time only", ``global``, or ``temporal`` with a
validity end) and a provenance whose trust decides conflicts:
``user_explicit`` > ``tool_output`` > ``inference``.

For one claim key (subject, predicate, and the session for session scope):

- the same value again reinforces the active claim (no new record);
- a different value from a source at least as trusted supersedes it: the old record is kept,
  marked ``superseded`` and excluded from retrieval unless asked for;
- a different value from a less trusted source is stored ``quarantined`` (kept for review,
  excluded from retrieval by default), and the active claim stays.

Claims live in record attributes (``claimKey``, ``claimValue``, ``claimStatus``...), so
snapshots and state hashes carry them with no extra state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from f09_memory.errors import InputInvalidError
from f09_memory.schema.records import MemoryRecord

__all__ = ["TRUST", "Claim", "ClaimOutcome", "ClaimScope", "Provenance", "normalize_value"]

Provenance = Literal["user_explicit", "tool_output", "inference"]
"""Where a claim comes from, most trusted first (ranks in :data:`TRUST`)."""
ClaimScope = Literal["session", "global", "temporal"]
"""How far a claim holds: this session, always, or for a period."""
TRUST: dict[str, int] = {"user_explicit": 3, "tool_output": 2, "inference": 1}
"""Provenance trust ranks: a conflicting write supersedes only at equal or higher trust."""

_SPACES = re.compile(r"\s+")


def normalize_value(value: str) -> str:
    """Casefolded, whitespace-collapsed form used to compare claim values and keys."""
    return _SPACES.sub(" ", value).strip().casefold()


@dataclass(frozen=True, slots=True)
class Claim:
    """A validated claim.

    ``valid_to`` (logical time) is required for temporal scope and becomes the record's TTL;
    ``session_id`` is required for session scope.
    """

    subject: str
    predicate: str
    value: str
    scope: ClaimScope = "global"
    provenance: Provenance = "user_explicit"
    session_id: str | None = None
    valid_to: int | None = None

    def __post_init__(self) -> None:
        for name in ("subject", "predicate", "value"):
            text = getattr(self, name)
            if not isinstance(text, str) or not text.strip():
                raise InputInvalidError(f"claim {name} must be a non-empty string",
                                        details={"field": f"claim.{name}"})
        if self.scope not in ("session", "global", "temporal"):
            raise InputInvalidError("claim scope must be session, global or temporal",
                                    details={"field": "claim.scope"})
        if self.provenance not in TRUST:
            raise InputInvalidError(f"claim provenance must be one of {sorted(TRUST)}",
                                    details={"field": "claim.provenance"})
        if self.scope == "session" and not self.session_id:
            raise InputInvalidError("a session-scoped claim needs session_id",
                                    details={"field": "claim.session_id"})
        if self.scope == "temporal" and (
            isinstance(self.valid_to, bool) or not isinstance(self.valid_to, int)
        ):
            raise InputInvalidError("a temporal claim needs valid_to (logical time)",
                                    details={"field": "claim.valid_to"})

    @property
    def key(self) -> str:
        """The supersession key: subject, predicate, and the session for session scope."""
        session = self.session_id if self.scope == "session" else ""
        return "\x1f".join((normalize_value(self.subject), normalize_value(self.predicate),
                            session or ""))

    def attributes(self, status: str) -> dict[str, str | int]:
        """The record attributes that carry this claim with ``status``."""
        attrs: dict[str, str | int] = {
            "claimKey": self.key, "claimSubject": self.subject,
            "claimPredicate": self.predicate, "claimValue": normalize_value(self.value),
            "claimScope": self.scope, "claimProvenance": self.provenance,
            "claimStatus": status, "claimReinforced": 0,
        }
        if self.session_id:
            attrs["sessionId"] = self.session_id
        if self.valid_to is not None:
            attrs["claimValidTo"] = self.valid_to
        return attrs


@dataclass(frozen=True, slots=True)
class ClaimOutcome:
    """What ``engine.ingest_claim`` did.

    Attributes:
        record: The record now holding the claim (the reinforced one, or the new one).
        action: ``created``, ``reinforced``, ``superseded`` (the new claim replaced an older
            one) or ``quarantined`` (the new claim conflicts with a more trusted one).
        previous_id: The conflicting or reinforced record's id, if any.
    """

    record: MemoryRecord
    action: Literal["created", "reinforced", "superseded", "quarantined"]
    previous_id: str | None = None
