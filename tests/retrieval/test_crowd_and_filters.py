"""retrieve_many equals retrieve one by one; request filters and limit; recent()."""

from __future__ import annotations

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, bundle_hash
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.retrieval.filters import candidate_mask, request_filter_mask, status_table
from f09_memory.testing import capture_events

WORDS = "smith well gold debt market guard fire bread river king queen sword".split()


def crowd(seed: int = 0, agents: int = 12) -> MemoryEngine:
    rng = np.random.default_rng(seed)
    engine = MemoryEngine(MemoryConfig(episodic_max=80), seed=seed)
    layers = ["episodic", "episodic", "semantic", "social", "procedural"]
    items = []
    for i in range(agents * 60):
        items.append({
            "agent_id": f"npc-{i % agents:02d}",
            "content": " ".join(rng.choice(WORDS, int(rng.integers(3, 12)))) + ".",
            "layer": layers[i % 5],
            "importance": round(float(rng.random()), 3),
            "tags": [str(rng.choice(WORDS))],
            "flagged": bool(rng.random() < 0.05),
            "ttl": 500 if i % 17 == 0 else None,
        })
    for k in range(0, len(items), 100):
        engine.ingest_batch(items[k:k + 100], now=k)
    engine.ingest_claim("npc-00", "The mill costs 5.", _claim("5"), now=900)
    engine.ingest_claim("npc-00", "The mill costs 9.", _claim("9"), now=901)
    return engine


def _claim(value: str):  # type: ignore[no-untyped-def]
    from f09_memory.ingestion import Claim
    return Claim("mill", "costs", value)


def requests(agents: int = 12) -> list[RetrievalRequest]:
    purposes = ["dialog", "reasoning", "navigation", "summary"]
    strategies = ["balanced", "recency", "importance", "semantic"]
    out = []
    for a in range(agents + 1):  # one unknown agent too
        out.append(RetrievalRequest(
            agent_id=f"npc-{a:02d}", purpose=purposes[a % 4], strategy=strategies[a % 3],
            max_tokens=[60, 200, 1800][a % 3], query=WORDS[a % 12] if a % 2 else None,
            pressure_state=["normal", "throttle", "exhausted", "soft"][a % 4],
            statuses=("active", "superseded") if a == 0 else None,
            tags_any=(WORDS[a % 12],) if a % 5 == 3 else None,
            limit=5 if a % 4 == 1 else None))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_retrieve_many_gives_the_bundles_of_retrieve_one_by_one(seed: int) -> None:
    engine = crowd(seed)
    many = engine.retrieve_many(requests(), now=1_000)
    single = [engine.retrieve(r, now=1_000) for r in requests()]
    assert [bundle_hash(b) for b in single] == [bundle_hash(b) for b in many]
    assert [[r.id for r in b.records] for b in single] == [
        [r.id for r in b.records] for b in many]
    engine._check()


@pytest.mark.parametrize("case", ["clean", "barred_layer", "dead_slot", "due_ttl",
                                  "superseded_claim"])
def test_retrieve_many_skips_only_the_masks_no_row_can_fail(case: str) -> None:
    """One purpose for the whole frame: the alive, deadline and layer-policy masks are
    skipped when no row can fail them, and applied when one agent needs them."""
    engine = MemoryEngine(MemoryConfig(episodic_max=80), seed=3)
    items = [{"agent_id": f"npc-{a}", "content": f"{WORDS[(a + i) % 12]} at dawn {i}.",
              "importance": round(0.1 + 0.01 * i, 3)} for a in range(4) for i in range(30)]
    engine.ingest_batch(items, now=0)
    if case == "barred_layer":  # dialog does not read procedural records
        engine.ingest("npc-2", "Bake bread at dawn.", layer="procedural", importance=1.0, now=1)
    if case == "dead_slot":
        engine.forget([engine.recent("npc-1", 3)[1].id])
    if case == "due_ttl":
        engine.ingest("npc-3", "The fair is today.", importance=1.0, ttl=5, now=1)
    if case == "superseded_claim":
        engine.ingest_claim("npc-0", "The fair is today.", _claim("5"), importance=1.0, now=1)
        engine.ingest_claim("npc-0", "The mill costs 9.", _claim("9"), now=2)
    frame = [RetrievalRequest(agent_id=f"npc-{a}", purpose="dialog", max_tokens=120)
             for a in range(4)]
    many = engine.retrieve_many(frame, now=50)
    single = [engine.retrieve(r, now=50) for r in frame]
    assert [[r.id for r in b.records] for b in many] == [
        [r.id for r in b.records] for b in single]
    assert [bundle_hash(b) for b in many] == [bundle_hash(b) for b in single]
    texts = {r.content for b in many for r in b.records}
    assert "Bake bread at dawn." not in texts and "The fair is today." not in texts
    assert many[0].diagnostics.candidate_count == 30 + (case == "superseded_claim")


def test_retrieve_many_emits_one_event_per_request_in_order() -> None:
    engine = crowd()
    with capture_events(engine.bus, "memory:retrieval") as log:
        engine.retrieve_many(requests(), now=1_000)
    assert [r.agent_id for r in requests()] == [e.agent_id for e in log.events]


def test_a_bad_request_in_a_frame_raises_before_any_is_served() -> None:
    engine = crowd()
    before = engine.state_hash()
    bad = [*requests(), {"agentId": "npc-01", "purpose": "dialog"}]
    with capture_events(engine.bus, "memory:retrieval") as log, \
            pytest.raises(MemoryEngineError) as info:
        engine.retrieve_many(bad, now=1_000)
    assert ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED == info.value.code
    assert [] == list(log.events) and before == engine.state_hash()
    with pytest.raises(MemoryEngineError) as info:
        engine.retrieve_many("npc-01", now=1_000)  # type: ignore[arg-type]
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code


def base(**kw: object) -> RetrievalRequest:
    return RetrievalRequest(agent_id="a", purpose="reasoning", **kw)  # type: ignore[arg-type]


def small() -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    engine.ingest("a", "north gate at dawn", tags=["gate", "dawn"], importance=0.9, now=10)
    engine.ingest("a", "ale at the tavern", tags=["tavern"], importance=0.5, now=20,
                  layer="semantic", metadata={"attributes": {"place": "tavern", "n": 2}})
    engine.ingest("a", "guard at the gate", tags=["gate"], importance=0.2, now=30,
                  layer="social", metadata={"attributes": {"place": "gate", "n": 2}})
    return engine


def contents(engine: MemoryEngine, request: RetrievalRequest) -> list[str]:
    return sorted(r.content for r in engine.retrieve(request, now=40).records)


def test_filters_narrow_the_candidates() -> None:
    engine = small()
    assert ["guard at the gate", "north gate at dawn"] == contents(
        engine, base(max_tokens=400, tags_any=("gate",)))
    assert ["north gate at dawn"] == contents(engine, base(max_tokens=400,
                                                           tags_all=("gate", "dawn")))
    assert ["ale at the tavern"] == contents(engine, base(max_tokens=400, layers=("semantic",)))
    assert ["ale at the tavern", "guard at the gate"] == contents(
        engine, base(max_tokens=400, since=20))
    assert ["north gate at dawn"] == contents(engine, base(max_tokens=400, until=20))
    assert ["guard at the gate"] == contents(
        engine, base(max_tokens=400, attributes={"place": "gate"}))
    assert ["ale at the tavern", "guard at the gate"] == contents(
        engine, base(max_tokens=400, attributes={"n": 2}))
    assert [] == contents(engine, base(max_tokens=400, attributes={"n": "2"}))  # typed equality
    bundle = engine.retrieve(base(max_tokens=400, tags_any=("gate",)), now=40)
    assert (2, 1) == (bundle.diagnostics.candidate_count, bundle.diagnostics.filtered_count)


def test_layers_filter_replaces_the_purpose_layer_policy() -> None:
    engine = small()
    dialog = RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=400)
    policy = {r.layer.value for r in engine.retrieve(dialog, now=40).records}
    chosen = dialog.model_copy(update={"layers": ("social",)})
    assert ["guard at the gate"] == contents(engine, chosen)
    assert policy  # the purpose reads its own layers without the filter


def test_tag_filters_match_redacted_tags() -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    engine.ingest("a", "a letter", tags=["from:ana@example.org"], now=1)
    engine.ingest("a", "a parcel", tags=["from:bob@example.org"], now=2)
    request = base(max_tokens=400, tags_any=("from:ana@example.org",))
    assert ["a letter"] == contents(engine, request)


def test_limit_returns_the_top_k_with_or_without_a_budget() -> None:
    engine = small()
    full = engine.retrieve(base(max_tokens=400), now=40)
    top2 = engine.retrieve(base(max_tokens=400, limit=2), now=40)
    assert [r.id for r in full.records][:2] == [r.id for r in top2.records] and top2.truncated
    nobudget = engine.retrieve(base(limit=2), now=40)
    assert [r.id for r in top2.records] == [r.id for r in nobudget.records]
    assert 0 == nobudget.diagnostics.budget
    assert sum(r.tokens_estimate or 0 for r in nobudget.records) == nobudget.total_tokens
    tight = engine.retrieve(base(max_tokens=4, limit=3), now=40)
    assert tight.total_tokens <= 4


def test_limit_on_a_large_agent_equals_the_full_order() -> None:
    engine = MemoryEngine(MemoryConfig(episodic_max=3_000), embedder=None)
    rng = np.random.default_rng(5)
    engine.ingest_many("a", [{"content": " ".join(rng.choice(WORDS, int(rng.integers(2, 30)))),
                              "importance": round(float(rng.random()), 2)}
                             for _ in range(2_000)], now=0)
    full = [r.id for r in engine.retrieve(base(max_tokens=1800), now=5).records]
    for limit in (1, 7, 63, 64, 65, 300):
        got = [r.id for r in engine.retrieve(base(max_tokens=1800, limit=limit),
                                             now=5).records]
        assert full[:limit] == got


@pytest.mark.parametrize("bad", [
    {"limit": 0}, {"limit": -1}, {"tags_any": ("",)}, {"since": -1},
    {"layers": ("attic",)}, {"attributes": {"k": [1]}},
])
def test_malformed_filters_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(MemoryEngineError) as info:
        RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=10, **bad)  # type: ignore[arg-type]
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code


def test_neither_budget_nor_limit_is_budget_undefined() -> None:
    with pytest.raises(MemoryEngineError) as info:
        small().retrieve(base(), now=40)
    assert ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED == info.value.code


def test_recent_returns_the_newest_first_and_builds_only_those() -> None:
    engine = small()
    assert ["guard at the gate", "ale at the tavern"] == [
        r.content for r in engine.recent("a", 2)]
    assert ["ale at the tavern"] == [r.content for r in engine.recent("a", 5, "semantic")]
    assert [] == engine.recent("nobody", 3) and [] == engine.recent("a", 0)
    with pytest.raises(MemoryEngineError) as info:
        engine.recent("a", -1)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code


@pytest.mark.parametrize("seed", [0, 1])
def test_frame_after_frame_the_kept_columns_follow_every_change(seed: int) -> None:
    """Consecutive frames over the same crowd reuse the unchanged agents' columns; every
    kind of change between two frames (new records, a forgotten one, an update, a claim,
    a TTL expiry, a new embedder) shows in the next frame as in ``retrieve``."""
    rng = np.random.default_rng(seed)
    engine = crowd(seed)
    frame = requests()
    for step in range(12):
        now = 1_000 + step * 100
        many = engine.retrieve_many(frame, now=now)
        assert [bundle_hash(b) for b in many] == [
            bundle_hash(engine.retrieve(r, now=now)) for r in frame], step
        agent = f"npc-{int(rng.integers(12)):02d}"
        kind = step % 6
        if kind == 0:
            engine.ingest(agent, f"{WORDS[step]} at the gate {step}.", importance=0.9, now=now)
        elif kind == 1:
            engine.forget([engine.recent(agent, 1)[0].id])
        elif kind == 2:
            engine.update(engine.recent(agent, 3)[-1].id, importance=1.0, tags=["moved"])
        elif kind == 3:
            engine.ingest_claim("npc-00", f"The mill costs {step}.", _claim(str(step)),
                                now=now)
        elif kind == 4:
            engine.tick(now + 600)  # past the TTLs
        else:
            engine.ingest_batch([{"agent_id": f"npc-{a:02d}", "content": f"rain {step}"}
                                 for a in range(0, 12, 3)], now=now)
    reordered = frame[::-1]  # another order: the columns are built again
    assert [bundle_hash(b) for b in engine.retrieve_many(reordered, now=3_000)] == [
        bundle_hash(engine.retrieve(r, now=3_000)) for r in reordered]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_candidate_mask_equals_every_test_applied(seed: int) -> None:
    """The single-agent mask skips the deadline and status tests only when no record can
    fail them (the maintained deadline bound, no inactive record ever held): it equals
    the four tests applied in full, before and after TTLs fall due."""
    engine = crowd(seed)
    retriever = engine._retriever
    for now in (100, 1_000, 10_000):
        for request in requests():
            am = engine._state.store.get(request.agent_id)
            if am is None:
                continue
            hi = am.hi
            policy = retriever.layer_policy(request)
            full = (am.alive[:hi] & (am.deadline[:hi] > now) & policy[am.layer[:hi]]
                    & status_table(request)[am.status[:hi]])
            if request.has_filters():
                full &= request_filter_mask(am, request)
            assert candidate_mask(am, request, now, policy).tolist() == full.tolist()
        engine.tick(now)
