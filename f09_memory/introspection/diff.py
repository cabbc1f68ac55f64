"""Comparing two captures: records added, removed and changed, matched by id.

Per agent, the two captures' key columns (both ascending) are matched with numpy; a
record in both changed iff its digest changed (the digest covers every stored field, so
this is exact and costs no per-record Python for unchanged records). Only the changed
records' field values are gathered, and each compared field (``views.COMPARED_FIELDS``)
that differs becomes a :class:`~f09_memory.introspection.models.FieldChange`. An agent
whose capture was reused (it did not change) is skipped at once.
"""

from __future__ import annotations

import numpy as np

from f09_memory.introspection.captures import AgentCapture
from f09_memory.introspection.models import FieldChange, RecordChange
from f09_memory.introspection.views import COMPARED_FIELDS, RedactMany, ViewFields, view_fields
from f09_memory.schema.base import trusted_factory

__all__ = ["compare"]

_new_change = trusted_factory(FieldChange)
_new_record_change = trusted_factory(RecordChange)


def compare(old: dict[str, AgentCapture], new: dict[str, AgentCapture],
            redact: RedactMany | None) -> tuple[list[ViewFields], list[str], list[RecordChange]]:
    """What changed from ``old`` to ``new`` (captured agents by id).

    Returns:
        ``(added, removed, changed)``: the added records' view values (one
        :class:`ViewFields` per agent), the removed ids sorted, and the changed records
        sorted by id (text redacted by ``redact`` when given).

    Runtime complexity: O(n log n) numpy over the captured records, plus O(k) for the k
    records added or changed.
    """
    added: list[ViewFields] = []
    removed: list[str] = []
    changed: list[RecordChange] = []
    for agent_id in sorted(old.keys() | new.keys()):
        was, now = old.get(agent_id), new.get(agent_id)
        if was is now:
            continue
        if now is None:
            assert was is not None
            removed.extend(f"{agent_id}:{key:010d}" for key in was.key.tolist())
            continue
        if was is None:
            added.append(view_fields(now, np.arange(now.size), redact))
            continue
        _, old_rows, new_rows = np.intersect1d(was.key, now.key, assume_unique=True,
                                               return_indices=True)
        gone = np.ones(was.size, dtype=np.bool_)
        gone[old_rows] = False
        fresh = np.ones(now.size, dtype=np.bool_)
        fresh[new_rows] = False
        removed.extend(f"{agent_id}:{key:010d}" for key in was.key[gone].tolist())
        if fresh.any():
            added.append(view_fields(now, np.flatnonzero(fresh), redact))
        moved = ((was.digest_hi[old_rows] != now.digest_hi[new_rows])
                 | (was.digest_lo[old_rows] != now.digest_lo[new_rows]))
        if moved.any():
            before = view_fields(was, old_rows[moved], redact)
            after = view_fields(now, new_rows[moved], redact)
            for i, rid in enumerate(after.ids()):
                a, b = before.compared(i), after.compared(i)
                changed.append(_new_record_change({"id": rid, "changes": [
                    _new_change({"field": name, "before": a[name], "after": b[name]})
                    for name in COMPARED_FIELDS if a[name] != b[name]]}))
    removed.sort()
    changed.sort(key=lambda c: c.id)
    return added, removed, changed
