"""Candidate masks: which of an agent's records a request may return.

The base mask is the spec's candidate filter (live, TTL not passed, a layer the purpose
reads, an allowed status); the request's own filters (layers, tags, time range, attribute
equality) narrow it further. Everything is numpy over the agent's columns except the
attribute filter, which visits only the records that carry attributes (a sparse map).
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

__all__ = ["ACTIVE_ONLY", "redact_filters", "request_filter_mask", "status_table"]

ACTIVE_ONLY = np.array([True, False, False])
"""Allowed statuses by code when a request names none: active only."""


def status_table(request: RetrievalRequest) -> NDArray[np.bool_]:
    """Allowed flag per status code for ``request``."""
    if request.statuses is None:
        return ACTIVE_ONLY
    return np.array([name in request.statuses for name in CLAIM_STATUSES])


def request_filter_mask(am: AgentMemory, request: RetrievalRequest) -> NDArray[np.bool_]:
    """The request's own filters over ``am``'s slots ``[0, hi)`` (all True if none).

    Runtime complexity: O(hi) numpy, plus O(records with attributes) for ``attributes``.
    """
    hi = am.hi
    mask = np.ones(hi, dtype=np.bool_)
    if request.layers is not None:
        wanted = np.array([layer in request.layers for layer in LAYERS_BY_CODE])
        mask &= wanted[am.layer[:hi]]
    if request.tags_any is not None:
        mask &= am.tags.matches(request.tags_any, "any")[am.tagset[:hi]]
    if request.tags_all is not None:
        mask &= am.tags.matches(request.tags_all, "all")[am.tagset[:hi]]
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
