"""explain: the retrieval's own ranking, bundle and scores, and why each record is left out."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.ingestion import Claim
from f09_memory.introspection import Explanation, RecordView

WORDS = ("smith well gold debt market guard fire bread river king queen sword horse tavern "
         "mill chapel rain storm harvest festival wolf bridge lantern cellar").split()
LAYERS = ["episodic", "episodic", "episodic", "semantic", "social", "procedural", "spatial",
          "system"]
NOW = 50_000


def populate(engine: MemoryEngine, n: int, seed: int, agent: str = "npc") -> None:
    """Mixed layers, tags, attributes, positions, TTLs (some passed, not swept), claims."""
    rng = np.random.default_rng(seed)
    items: list[dict[str, Any]] = []
    for _ in range(n):
        layer = LAYERS[int(rng.integers(len(LAYERS)))]
        item: dict[str, Any] = {
            "content": " ".join(rng.choice(WORDS, int(rng.integers(2, 30))).tolist()),
            "layer": layer,
            "importance": round(float(rng.random()), 3),
            "tags": rng.choice(WORDS[:6], int(rng.integers(0, 3)), replace=False).tolist(),
            "flagged": bool(rng.random() < 0.05),
        }
        if rng.random() < 0.2:
            item["ttl"] = int(rng.integers(1_000, 80_000))
        meta: dict[str, Any] = {}
        if layer == "spatial" or rng.random() < 0.1:
            meta["spatial"] = {"x": float(rng.normal(0, 20)), "y": float(rng.normal(0, 20))}
        if rng.random() < 0.3:
            meta["attributes"] = {"kind": str(rng.choice(["deal", "threat", "rumour"]))}
        if meta:
            item["metadata"] = meta
        items.append(item)
    for k in range(0, n, 50):
        engine.ingest_many(agent, items[k:k + 50], now=k * 40)
    for i in range(6):
        engine.ingest_claim(agent, f"the {WORDS[i]} is {WORDS[i + 6]}",
                            Claim(subject=WORDS[i], predicate="is", value=WORDS[i + 6]),
                            now=n * 40 + i)
        engine.ingest_claim(agent, f"the {WORDS[i]} is {WORDS[i + 7]}",
                            Claim(subject=WORDS[i], predicate="is", value=WORDS[i + 7]),
                            now=n * 40 + 10 + i)


def random_request(rng: np.random.Generator, agent: str = "npc") -> dict[str, Any]:
    req: dict[str, Any] = {
        "agentId": agent,
        "purpose": str(rng.choice(["reasoning", "dialog", "navigation", "summary"])),
        "strategy": str(rng.choice(["balanced", "recency", "importance", "semantic"])),
    }
    if rng.random() < 0.8:
        req["maxTokens"] = int(rng.integers(1, 2_000))
    if "maxTokens" not in req or rng.random() < 0.3:
        req["limit"] = int(rng.integers(1, 40))
    if rng.random() < 0.4:
        req["pressureState"] = str(rng.choice(["normal", "soft", "throttle", "exhausted"]))
    if rng.random() < 0.5:
        req["query"] = " ".join(rng.choice(WORDS, int(rng.integers(1, 4))).tolist())
    if rng.random() < 0.3:
        req["position"] = [float(rng.normal(0, 20)), float(rng.normal(0, 20))]
    if rng.random() < 0.15:
        req["layers"] = sorted(set(rng.choice(LAYERS, 2).tolist()))
    if rng.random() < 0.15:
        req["tagsAny"] = [str(rng.choice(WORDS[:6]))]
    if rng.random() < 0.1:
        req["tagsAll"] = rng.choice(WORDS[:6], 2, replace=False).tolist()
    if rng.random() < 0.1:
        req["since"] = int(rng.integers(0, 20_000))
    if rng.random() < 0.1:
        req["until"] = int(rng.integers(5_000, 60_000))
    if rng.random() < 0.1:
        req["attributes"] = {"kind": str(rng.choice(["deal", "threat"]))}
    if rng.random() < 0.1:
        req["statuses"] = ["active", "superseded"]
    return req


def reason_of(view: RecordView, engine: MemoryEngine, request: RetrievalRequest,
              now: int) -> str:
    """The expected exclusion reason of a record left out before scoring (brute force)."""
    policy = engine.config.scoring.layer_policy[request.purpose]
    if request.layers is None and view.layer not in policy:  # named layers are a filter
        return "layer_policy"
    if view.status not in (request.statuses or ("active",)):
        return "status"
    if view.expires_at is not None and view.expires_at <= now:
        return "ttl"
    return "filter"


def check(engine: MemoryEngine, request: dict[str, Any], now: int) -> Explanation:
    """explain agrees with retrieve, and its candidates are consistent (see the asserts)."""
    bundle = engine.retrieve(request, now=now)
    x = engine.introspection.explain(request, now=now, redact=False)
    diag = bundle.diagnostics
    assert [r.id for r in bundle.records] == x.bundle_ids
    assert (bundle.total_tokens, bundle.truncated) == (x.total_tokens, x.truncated)
    assert diag.compression_applied == x.compression_applied
    assert (diag.candidate_count, diag.filtered_count) == (x.candidate_count, x.filtered_count)
    assert diag.semantic_fallback == x.semantic_fallback
    assert diag.pressure_state == x.pressure_state
    assert (diag.budget or None) == x.budget
    assert [(c.key, c.weight) for c in diag.scoring_breakdown] == [
        (k, round(w, 9)) for k, w in x.weights.items()]
    cands = x.candidates
    scored = [c for c in cands if c.rank is not None]
    assert [c.rank for c in scored] == list(range(1, len(scored) + 1))
    assert len(scored) == x.candidate_count
    assert cands[:len(scored)] == scored  # scored first, in rank order
    quantum = engine.config.score_quantum
    assert [(-c.quantized_score, c.id) for c in scored] == sorted(
        (-c.quantized_score, c.id) for c in scored)
    for c in scored:
        assert c.quantized_score == round(c.score * quantum)
        assert abs(sum(t.contribution for t in c.terms) - c.score) < 1e-9
        assert [t.key for t in c.terms] == list(x.weights)
    assert [c.id for c in scored if c.included] == x.bundle_ids
    parsed = RetrievalRequest.parse(request)
    before = 0  # bundle members ranked above
    for c in scored:
        if not c.included:
            limited = parsed.limit is not None and before >= parsed.limit
            assert c.excluded == ("limit" if limited else "budget")
        else:
            assert c.excluded is None
            before += 1
    rest = cands[len(scored):]
    assert [(c.excluded or "", c.id) for c in rest] == sorted((c.excluded or "", c.id)
                                                              for c in rest)
    views = {v.id: v for v in engine.introspection.snapshot(parsed.agent_id,
                                                            redact=False).records}
    for c in rest:
        assert not c.included and c.terms == [] and c.rank is None
        assert c.excluded == reason_of(views[c.id], engine, parsed, now)
    assert len(cands) == (engine.count(parsed.agent_id) if parsed.agent_id in engine.agents()
                          else 0)
    return x


def test_explain_equals_retrieve_for_many_random_requests() -> None:
    engine = MemoryEngine(MemoryConfig(embedding_dim=32), seed=3)
    populate(engine, 400, seed=1)
    populate(engine, 30, seed=2, agent="small")
    rng = np.random.default_rng(7)
    seen: set[str | None] = set()
    for i in range(120):
        if i % 40 == 20:
            engine.set_pressure(["soft", "throttle", "normal"][i // 40])
        request = random_request(rng, agent="small" if i % 10 == 9 else "npc")
        x = check(engine, request, NOW + 1_000 * (i % 5))
        seen.update(c.excluded for c in x.candidates)
    assert {None, "layer_policy", "status", "ttl", "filter", "budget", "limit"} <= seen


@pytest.mark.parametrize("exact_max", [100_000, 200])
def test_a_preselected_agent_is_explained_with_every_candidate_scored_exactly(
        exact_max: int) -> None:
    cfg = {"embedding_dim": 32, "semantic_preselect_threshold": 100,
           "semantic_preselect_min_ratio": 0,
           "semantic_preselect_k": 16, "exact_index_max": exact_max}
    pre = MemoryEngine(MemoryConfig(**cfg), seed=5)  # type: ignore[arg-type]
    full = MemoryEngine(MemoryConfig(**{**cfg, "semantic_preselect_threshold": 10**9}),
                        seed=5)  # type: ignore[arg-type]
    for engine in (pre, full):
        populate(engine, 600, seed=4)
        engine.tick(NOW - 1)  # builds the index
    rng = np.random.default_rng(11)
    for _ in range(25):
        request = {**random_request(rng), "query": str(rng.choice(WORDS)),
                   "strategy": "semantic"}
        request.pop("layers", None)
        x = check(pre, request, NOW)
        y = full.introspection.explain(request, now=NOW, redact=False)
        # the preselection scores a subset; the explanation scores every candidate exactly
        assert [(c.id, c.quantized_score, c.rank) for c in x.candidates] == [
            (c.id, c.quantized_score, c.rank) for c in y.candidates]
        if exact_max > 600:  # an exact index: the preselected bundle is full scoring's
            assert x.bundle_ids == y.bundle_ids


def small_engine() -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(), seed=0, embedder=None)
    engine.ingest("npc", "a long story " * 40, importance=1.0, tags=["tale"], now=0)
    engine.ingest("npc", "the smith owes gold", importance=0.9, tags=["debt"], now=0)
    engine.ingest("npc", "saw a wolf", importance=0.8, now=0)
    engine.ingest("npc", "the mill burned", importance=0.5, ttl=10, now=0)
    engine.ingest("npc", "how to bake bread", layer="procedural", importance=0.9, now=0)
    engine.ingest_claim("npc", "the king is old", Claim(subject="king", predicate="is",
                                                         value="old"), now=1)
    engine.ingest_claim("npc", "the king is young", Claim(subject="king", predicate="is",
                                                           value="young"), now=2)
    return engine


def reasons(x: Explanation) -> dict[str, str | None]:
    return {c.id: c.excluded for c in x.candidates}


def test_each_exclusion_reason_has_its_scenario() -> None:
    engine = small_engine()
    intro = engine.introspection
    ids = [r.id for r in engine.records("npc")]
    story, debt, wolf, mill, bread, old_king, young_king = sorted(ids)
    x = intro.explain({"agentId": "npc", "purpose": "dialog", "maxTokens": 40}, now=100)
    why = reasons(x)
    assert why[bread] == "layer_policy"  # dialog does not read the procedural layer
    assert why[old_king] == "status"  # superseded by the younger claim
    assert why[mill] == "ttl"  # expired at 10, not swept (no tick)
    assert why[story] == "budget"  # the best score, but 40 tokens do not hold it
    assert why[debt] is None and why[wolf] is None and why[young_king] is None
    x = intro.explain({"agentId": "npc", "purpose": "dialog", "maxTokens": 40,
                       "tagsAny": ["debt"]}, now=100)
    assert reasons(x)[wolf] == "filter" and reasons(x)[debt] is None
    x = intro.explain({"agentId": "npc", "purpose": "dialog", "limit": 1}, now=100)
    assert x.budget is None and x.bundle_ids == [story]
    assert reasons(x)[debt] == "limit" and reasons(x)[wolf] == "limit"
    x = intro.explain({"agentId": "npc", "purpose": "reasoning", "maxTokens": 400,
                       "statuses": ["superseded"]}, now=100)
    assert x.bundle_ids == [old_king] and reasons(x)[debt] == "status"


def test_an_unknown_or_empty_agent_gets_an_empty_explanation() -> None:
    engine = small_engine()
    x = engine.introspection.explain({"agentId": "nobody", "purpose": "dialog",
                                      "maxTokens": 100}, now=100)
    assert (x.bundle_ids, x.candidates, x.candidate_count) == ([], [], 0)
    assert x.semantic_fallback == engine.retrieve(
        {"agentId": "nobody", "purpose": "dialog", "maxTokens": 100},
        now=100).diagnostics.semantic_fallback
    engine.forget(agent_id="npc")
    assert engine.introspection.explain({"agentId": "npc", "purpose": "dialog",
                                         "limit": 3}).candidates == []


BAD: list[tuple[Any, dict[str, Any]]] = [
    ({"agentId": "npc", "purpose": "dialog"}, {}),  # no budget, no limit
    ({"agentId": "npc", "purpose": "dialog", "maxTokens": 0}, {}),
    ({"agentId": "npc", "purpose": "dialog", "maxTokens": -5}, {}),
    ({"agentId": "npc", "purpose": "flirting", "maxTokens": 10}, {}),
    ({"agentId": "npc", "purpose": "dialog", "maxTokens": 10, "bogus": 1}, {}),
    ({"agentId": "", "purpose": "dialog", "maxTokens": 10}, {}),
    ({"agentId": "x.leak@example.org", "purpose": "dialog", "maxTokens": 10}, {}),
    ({"agentId": "npc", "purpose": "dialog", "maxTokens": 10, "queryVector": [0.1, 0.2]}, {}),
    ("not a request", {}),
    ({"agentId": "npc", "purpose": "dialog", "maxTokens": 10}, {"now": -1}),
    ({"agentId": "npc", "purpose": "dialog", "maxTokens": 10}, {"now": 1.5}),
]


@pytest.mark.parametrize(("request_", "kwargs"), BAD)
def test_a_bad_request_raises_what_retrieve_raises_and_changes_nothing(
        request_: Any, kwargs: dict[str, Any]) -> None:
    engine = MemoryEngine(MemoryConfig(embedding_dim=16), seed=0)
    engine.ingest("npc", "the smith owes gold", now=0)
    before = engine.state_hash()
    with pytest.raises(MemoryEngineError) as expected:
        engine.retrieve(request_, **kwargs)
    with pytest.raises(MemoryEngineError) as got:
        engine.introspection.explain(request_, **kwargs)
    assert (got.value.code, got.value.message) == (expected.value.code, expected.value.message)
    assert got.value.code in (ErrorCode.MEMORY_INPUT_INVALID,
                              ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED)
    assert before == engine.state_hash()
    if isinstance(request_, dict) and "maxTokens" not in request_:
        assert got.value.code is ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED


def test_redact_must_be_a_bool() -> None:
    engine = small_engine()
    with pytest.raises(MemoryEngineError) as err:
        engine.introspection.explain({"agentId": "npc", "purpose": "dialog", "limit": 2},
                                     redact="no")  # type: ignore[arg-type]
    assert err.value.details["field"] == "redact"


def test_an_explanation_round_trips_through_its_json() -> None:
    engine = small_engine()
    x = engine.introspection.explain({"agentId": "npc", "purpose": "dialog", "maxTokens": 40},
                                     now=100)
    data = x.model_dump(by_alias=True, mode="json")
    assert len(data["candidates"]) == 7 and data["candidates"][0]["rank"] == 1
    again = Explanation.parse(data)
    assert again.model_dump(by_alias=True, mode="json") == data
    assert again.candidates == x.candidates
    with pytest.raises(MemoryEngineError):
        Explanation.parse({**data, "candidates": [{"id": 3}]})
