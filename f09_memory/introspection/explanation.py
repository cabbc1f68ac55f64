"""The explanation models: why each record was, or was not, recalled.

- :class:`ScoreTerm`: one term of the hybrid score (value, weight, contribution);
- :class:`CandidateExplanation`: one record: its terms, score, quantized score, rank, and
  whether it is in the bundle or why not;
- :class:`Explanation`: the retrieval's settings and bundle, and every candidate.

``Explanation.candidates`` is built on first access (then kept) from a
:class:`CandidateTable` of columns that ``explain`` filled: explaining a retrieval of
thousands of candidates costs numpy passes, and the per-candidate objects (and their text
redaction) are made only when they are read or serialized. The table holds copies, never
the engine's columns, so reading it later (on another thread too) sees the state of the
``explain`` call. The field serializes like any other and is accepted on input, so an
explanation's JSON parses back into an equal explanation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import (
    ModelWrapValidatorHandler,
    PrivateAttr,
    TypeAdapter,
    computed_field,
    model_validator,
)

from f09_memory.introspection.views import RedactMany
from f09_memory.schema.base import BoundaryModel, trusted_factory
from f09_memory.schema.enums import LAYERS_BY_CODE, MemoryLayer, PressureState, Purpose, Strategy

__all__ = [
    "EXCLUDED",
    "CandidateExplanation",
    "CandidateTable",
    "ExclusionReason",
    "Explanation",
    "ScoreTerm",
    "TermKey",
]

TermKey = Literal["importance", "recency", "semantic", "structural", "proximity"]
"""The keys of the hybrid score's terms (``proximity`` for a request with a position)."""
ExclusionReason = Literal["layer_policy", "status", "ttl", "filter", "budget", "limit"]
"""Why a live record is not in the bundle.

``layer_policy``: its layer is not one the purpose reads; ``status``: a superseded or
quarantined claim the request did not ask for; ``ttl``: expired (not yet swept by a tick);
``filter``: the request's own filters (layers, tags, time range, attributes); ``budget``:
scored, but it did not fit the token budget left; ``limit``: scored, after the request's
``limit`` was reached."""
EXCLUDED: tuple[ExclusionReason | None, ...] = (
    None, "layer_policy", "status", "ttl", "filter", "budget", "limit")
"""Exclusion reason by code in a :class:`CandidateTable` (0: none)."""


class ScoreTerm(BoundaryModel):
    """One term of a candidate's score: ``contribution = value * weight``.

    ``value`` is the term's raw value (0..1; importance includes the flag boost, so a
    flagged record's may pass 1); ``weight`` the effective weight (purpose, strategy,
    pressure, semantic availability and position applied; the weights sum to 1).
    """

    key: TermKey
    value: float
    weight: float
    contribution: float


class CandidateExplanation(BoundaryModel):
    """One live record of the agent, as the retrieval saw it.

    Scored candidates have their ``terms``, ``score`` (the float the retrieval computed),
    ``quantized_score`` (the integer it ordered by) and ``rank`` (1-based, in the order
    quantized score descending, then id). Records left out before scoring have no terms, a
    zero score and no rank. ``excluded`` is ``None`` for a record in the bundle.
    ``tokens_estimate`` is what the record costs against the budget (its compressed
    budget under a compressing pressure).
    """

    id: str
    layer: MemoryLayer
    terms: list[ScoreTerm]
    score: float
    quantized_score: int
    rank: int | None
    included: bool
    excluded: ExclusionReason | None
    tokens_estimate: int
    content: str


_new_term = trusted_factory(ScoreTerm)
_new_candidate = trusted_factory(CandidateExplanation)
_CANDIDATES = TypeAdapter(list[CandidateExplanation])


@dataclass(frozen=True, slots=True)
class CandidateTable:
    """The columns of an explanation's candidates, in output order (see the module doc).

    The first ``scored`` rows are the scored candidates in rank order; the rest were left
    out before scoring (their ``terms`` rows are unused).
    """

    agent_id: str
    keys: NDArray[np.int64]
    layers: NDArray[np.int8]
    names: tuple[str, ...]
    """Term keys, aligned with the columns of ``terms`` and with ``weights``."""
    weights: NDArray[np.float64]
    terms: NDArray[np.float64]
    scores: NDArray[np.float64]
    quantized: NDArray[np.int64]
    scored: int
    included: NDArray[np.bool_]
    excluded: NDArray[np.int8]
    """Reason codes (:data:`EXCLUDED`)."""
    tokens: NDArray[np.int64]
    content: list[str]
    """The stored texts (redacted when built if ``redact`` is set)."""
    redact: RedactMany | None

    def _terms(self) -> list[list[ScoreTerm]]:
        """The scored rows' terms; a column of few distinct values shares its objects."""
        scored = self.scored
        columns: list[list[ScoreTerm]] = []
        for j, (name, weight) in enumerate(zip(self.names, self.weights.tolist(),
                                               strict=True)):
            column = self.terms[:scored, j]
            distinct, inverse = np.unique(column, return_inverse=True)
            if distinct.shape[0] * 4 <= scored:  # layer weights, zeros: one object each
                shared = [_new_term({"key": name, "value": v, "weight": weight,
                                     "contribution": v * weight})
                          for v in distinct.tolist()]
                columns.append([shared[i] for i in inverse.tolist()])
            else:
                columns.append([
                    _new_term({"key": name, "value": v, "weight": weight, "contribution": c})
                    for v, c in zip(column.tolist(), (column * weight).tolist(), strict=True)])
        return [list(row) for row in zip(*columns, strict=True)]

    def build(self) -> list[CandidateExplanation]:
        """The candidates as models (the only per-candidate Python work of an explanation)."""
        n = int(self.keys.shape[0])
        content = self.content if self.redact is None else self.redact(list(self.content))
        scored = self.scored
        terms = self._terms() + [[] for _ in range(n - scored)]
        agent_id = self.agent_id
        layers = LAYERS_BY_CODE
        return [
            _new_candidate({
                "id": f"{agent_id}:{key:010d}", "layer": layers[code], "terms": row,
                "score": score, "quantized_score": q, "rank": i + 1 if i < scored else None,
                "included": inc, "excluded": EXCLUDED[why], "tokens_estimate": tokens,
                "content": text,
            })
            for i, key, code, row, score, q, inc, why, tokens, text in zip(
                range(n), self.keys.tolist(), self.layers.tolist(), terms,
                self.scores.tolist(), self.quantized.tolist(), self.included.tolist(),
                self.excluded.tolist(), self.tokens.tolist(), content, strict=True)
        ]


class Explanation(BoundaryModel):
    """Why a retrieval returned what it did (``Introspector.explain``).

    The settings the request was served with (``pressure_state``, the token ``budget``
    granted, or ``None`` for a ``limit`` without ``max_tokens``, the effective ``weights``
    by term key, unrounded, and ``semantic_fallback`` when the semantic term was off), the
    counts and the bundle exactly as ``retrieve`` gives it (``bundle_ids`` in bundle
    order, ``total_tokens``, ``truncated``, ``compression_applied``), and ``candidates``:
    every scored candidate in rank order, then the live records left out before scoring,
    sorted by (reason, id).
    """

    agent_id: str
    purpose: Purpose
    strategy: Strategy
    pressure_state: PressureState
    now: int
    budget: int | None
    weights: dict[str, float]
    semantic_fallback: str | None
    candidate_count: int
    filtered_count: int
    bundle_ids: list[str]
    total_tokens: int
    truncated: bool
    compression_applied: bool
    _source: CandidateTable | list[CandidateExplanation] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _given_candidates(cls, data: Any,
                          handler: ModelWrapValidatorHandler[Explanation]) -> Explanation:
        given = None
        if isinstance(data, Mapping) and "candidates" in data:
            data = dict(data)
            given = data.pop("candidates")
        model = handler(data)
        if given is not None:
            model._source = _CANDIDATES.validate_python(given)
        return model

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def candidates(self) -> list[CandidateExplanation]:
        """Every scored candidate in rank order, then the records left out before scoring.

        Built on first access from the explanation's columns, then kept.
        """
        source = self._source
        if source is None:
            return []
        if isinstance(source, list):
            return source
        return source.build()

    @classmethod
    def of(cls, values: dict[str, Any], table: CandidateTable | None) -> Explanation:
        """An explanation from already-valid ``values`` (every field) and its table."""
        model = _new_explanation(values)
        object.__setattr__(model, "__pydantic_private__", {"_source": table})
        return model


_new_explanation = trusted_factory(Explanation)
