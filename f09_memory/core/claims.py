"""Claims on the engine: reinforcement, trust-gated supersession, quarantine.

The rules are in :mod:`f09_memory.ingestion.claims`; this module applies them to the
columns. A claim lives in the record's sparse attributes (``claimKey``, ``claimValue``,
``claimStatus``...) and its status in the ``status`` column, so snapshots and state hashes
carry it with no extra state.
"""

from __future__ import annotations

from collections.abc import Sequence

from f09_memory._validate import check_now
from f09_memory.core.records import RecordReader
from f09_memory.core.writer import Writer
from f09_memory.errors import InputInvalidError
from f09_memory.ingestion.claims import TRUST, Claim, ClaimOutcome, normalize_value
from f09_memory.ingestion.validation import validate_item
from f09_memory.schema.enums import MemoryLayer
from f09_memory.store.records import STATUS_CODE, RecordExtra

__all__ = ["ingest_claim"]


def ingest_claim(
    writer: Writer,
    reader: RecordReader,
    agent_id: str,
    content: str,
    claim: Claim,
    *,
    layer: MemoryLayer | str,
    importance: float | None,
    tags: Sequence[str] | None,
    now: int,
) -> ClaimOutcome:
    """Store ``content`` carrying ``claim`` (see ``MemoryEngine.ingest_claim``).

    Raises:
        InputInvalidError: A malformed argument, or a temporal claim whose ``valid_to`` is
            not after ``now`` (state unchanged).
    """
    if not isinstance(claim, Claim):
        raise InputInvalidError("claim must be an f09_memory.ingestion.claims.Claim",
                                details={"field": "claim"})
    ttl = None
    if claim.scope == "temporal":
        assert claim.valid_to is not None
        if check_now(claim.valid_to, "claim.valid_to") <= now:
            raise InputInvalidError("claim.valid_to must be after now",
                                    details={"field": "claim.valid_to"})
        ttl = claim.valid_to - now
    limits = writer.ingestor.limits
    validate_item(content, layer, importance, tags, None, ttl, limits=limits)
    # The claim's key and value are stored redacted (string attributes): compare them so.
    redact = writer.ingestor.redactor.stored_form
    am = writer.state.store.get(agent_id)
    current = am.claims.get(redact(claim.key)) if am is not None else None
    previous = am.extras[current] if am is not None and current is not None else None
    if am is not None and current is not None and previous is not None:
        attrs = previous.attributes
        if attrs.get("claimValue") == redact(normalize_value(claim.value)):
            slot = am.slot_of[current]
            boosted = min(1.0, round(float(am.importance[slot]) + 0.05, 6))
            reinforced = RecordExtra(
                previous.source_ref_ids, previous.spatial, previous.social,
                previous.procedural,
                {**attrs, "claimReinforced": int(attrs.get("claimReinforced", 0)) + 1})
            am.update(current, importance=boosted, extra=reinforced)
            return ClaimOutcome(reader.build(am, slot), "reinforced", am.id_of(current))
    trust_ok = previous is None or TRUST[claim.provenance] >= TRUST[
        str(previous.attributes.get("claimProvenance", "inference"))]
    status = "active" if trust_ok else "quarantined"
    attributes = claim.attributes(status)
    previous_id = am.id_of(current) if am is not None and current is not None else None
    if previous_id is not None and not trust_ok:
        attributes["conflictsWith"] = previous_id
    item = validate_item(content, layer, importance, tags, {"attributes": attributes}, ttl,
                         limits=limits)
    (new_id,) = writer.ingest_items(agent_id, [item], now)
    record = reader.get(new_id)
    if previous is None or current is None or am is None:
        return ClaimOutcome(record, "created")
    if not trust_ok:
        return ClaimOutcome(record, "quarantined", previous_id)
    superseded = RecordExtra(
        previous.source_ref_ids, previous.spatial, previous.social, previous.procedural,
        {**previous.attributes, "claimStatus": "superseded", "supersededBy": record.id})
    am.update(current, extra=superseded, status=STATUS_CODE["superseded"])
    return ClaimOutcome(record, "superseded", previous_id)
