"""Candidate masks: which of an agent's records a request may return.

The base mask is the spec's candidate filter (live, TTL not passed, a layer the purpose
reads, an allowed status); the request's own filters (layers, tags, time range, attribute
equality) narrow it further. Everything is numpy over the agent's columns except the
attribute filter, which visits only the records that carry attributes (a sparse map).

:func:`candidate_mask` is the one-agent retrieval's mask; :func:`exclusion_reasons` says,
from the same tests, why each live record that is not a candidate was left out (for
``introspection.explain``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.schema.enums import LAYERS_BY_CODE
from f09_memory.schema.retrieval import RetrievalRequest
from f09_memory.store.agent import AgentMemory
from f09_memory.store.records import CLAIM_STATUSES

__all__ = [
    "ACTIVE_ONLY",
    "ALL_LAYERS",
    "EXCLUSION_REASONS",
    "candidate_mask",
    "exclusion_reasons",
    "redact_filters",
    "request_filter_mask",
    "status_table",
]

ACTIVE_ONLY = np.array([True, False, False])
"""Allowed statuses by code when a request names none: active only."""
ALL_LAYERS = np.ones(len(LAYERS_BY_CODE), dtype=np.bool_)
"""The layer policy of a request that names its own ``layers`` (they filter instead)."""
EXCLUSION_REASONS = ("", "layer_policy", "status", "ttl", "filter")
"""Reason by code of :func:`exclusion_reasons` (0: a candidate)."""


def status_table(request: RetrievalRequest) -> NDArray[np.bool_]:
    """Allowed flag per status code for ``request``."""
    if request.statuses is None:
        return ACTIVE_ONLY
    return np.array([name in request.statuses for name in CLAIM_STATUSES])


def candidate_mask(am: AgentMemory, request: RetrievalRequest, now: int,
                   policy: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """The candidates of ``request`` among ``am``'s slots ``[0, hi)``.

    Live, TTL deadline after ``now``, a layer ``policy`` allows (per layer code: the
    purpose's layer policy, or :data:`ALL_LAYERS` when the request names ``layers``), an
    allowed status, and the request's own filters.

    Runtime complexity: O(hi) numpy (plus the attribute filter's sparse visit).
    """
    hi = am.hi
    alive = am.alive[:hi]
    # No deadline at or before now (a maintained lower bound): the live are the candidates.
    mask = alive & (am.deadline[:hi] > now) if am.min_deadline <= now else alive.copy()
    mask &= policy.take(am.layer[:hi])  # take: an int8 index array costs [] 2.5x as much
    if request.statuses is not None or am.inactive_seen:  # else every record is active
        mask &= status_table(request).take(am.status[:hi])
    if request.has_filters():
        mask &= request_filter_mask(am, request)
    return mask


def exclusion_reasons(am: AgentMemory, request: RetrievalRequest, now: int,
                      policy: NDArray[np.bool_]) -> tuple[NDArray[np.intp], NDArray[np.int8]]:
    """Why each live record of ``am`` that is not a candidate was left out.

    The tests of :func:`candidate_mask`, each on its own; a record failing several gets the
    first in this order: ``layer_policy`` (code 1), ``status`` (2), ``ttl`` (3: its deadline
    is at or before ``now``, not yet swept), ``filter`` (4: the request's own filters,
    ``layers`` included).

    Returns:
        ``(slots, codes)``: the live non-candidate slots, ascending, and each one's reason
        code (an index into :data:`EXCLUSION_REASONS`).
    """
    hi = am.hi
    live = np.flatnonzero(am.alive[:hi])
    codes = np.zeros(live.shape[0], dtype=np.int8)
    filtered = (request_filter_mask(am, request)[live] if request.has_filters()
                else np.ones(live.shape[0], dtype=np.bool_))
    checks = (
        (policy.take(am.layer[live]), 1),
        (status_table(request).take(am.status[live]), 2),
        (am.deadline[live] > now, 3),
        (filtered, 4),
    )
    for passed, code in reversed(checks):  # the first failing test wins
        codes[~passed] = code
    out = codes != 0
    return live[out], codes[out]


def request_filter_mask(am: AgentMemory, request: RetrievalRequest) -> NDArray[np.bool_]:
    """The request's own filters over ``am``'s slots ``[0, hi)`` (all True if none).

    Runtime complexity: O(hi) numpy, plus O(records with attributes) for ``attributes``.
    """
    hi = am.hi
    mask = np.ones(hi, dtype=np.bool_)
    if request.layers is not None:
        wanted = np.array([layer in request.layers for layer in LAYERS_BY_CODE])
        mask &= wanted.take(am.layer[:hi])
    if request.tags_any is not None:
        mask &= am.tags.matches(request.tags_any, "any").take(am.tagset[:hi])
    if request.tags_all is not None:
        mask &= am.tags.matches(request.tags_all, "all").take(am.tagset[:hi])
    if request.since is not None:
        mask &= am.anchor[:hi] >= request.since
    if request.until is not None:
        mask &= am.anchor[:hi] < request.until
    if request.attributes is not None:
        wanted_attrs = request.attributes.items()
        keep = np.zeros(hi, dtype=np.bool_)
        slot_of = am.slot_of
        for key, extra in am.extras.items():
            attrs = extra.attributes
            if all(k in attrs and attrs[k] == v and type(attrs[k]) is type(v)
                   for k, v in wanted_attrs):
                keep[slot_of[key]] = True
        mask &= keep
    return mask


def redact_filters(request: RetrievalRequest, redact: Callable[[str], str]) -> RetrievalRequest:
    """``request`` with its tag and attribute filters redacted like stored records.

    Stored tags, attribute keys and string attribute values are redacted at ingest, so a
    filter naming a raw value must be redacted the same way to match (and the raw value
    goes no further). The query text is redacted where it is embedded (``semantic``).
    """
    if not (request.tags_any or request.tags_all or request.attributes):
        return request
    update: dict[str, Any] = {}
    if request.tags_any:
        update["tags_any"] = tuple(redact(t) for t in request.tags_any)
    if request.tags_all:
        update["tags_all"] = tuple(redact(t) for t in request.tags_all)
    if request.attributes:
        update["attributes"] = {redact(k): redact(v) if isinstance(v, str) else v
                                for k, v in request.attributes.items()}
    return request.model_copy(update=update)
