"""diff: exactly the brute-force comparison of two full snapshots, through every change."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.errors import InputInvalidError
from f09_memory.ingestion import Claim
from f09_memory.introspection import CAPTURES_KEPT, MemoryDiff
from f09_memory.testing import ScriptedLLM, capture_events

AGENTS = ("ada", "bo", "bo-2", "cy")
WORDS = "smith well gold debt market guard fire bread river king queen sword".split()
CONFIG: dict[str, Any] = {
    "episodic_max": 10, "episodic_window": 0, "summarization_min_interval_ms": 0,
    "summarization_batch_size": 4, "summarization_keep_recent": 2,
    "retention_policy": {"semantic_max": 8, "social_max": 6, "protected_min": 2},
    "hard_cap_slack": 1.0, "embedding_dim": 16,
}
COMPARED = ("content", "createdAt", "digest", "expiresAt", "importance", "layer",
            "recencyAnchor", "redacted", "sourceEvent", "status", "tags", "tokensEstimate",
            "ttl")

Views = dict[str, dict[str, Any]]


def full(engine: MemoryEngine, agent: str | None = None) -> tuple[int, Views]:
    snap = engine.introspection.snapshot(agent, redact=False)
    assert snap.total == len(snap.records)
    return snap.version, {r.id: r.model_dump(by_alias=True, mode="json") for r in snap.records}


def brute(old: Views, new: Views) -> dict[str, Any]:
    """The diff of two full snapshots, field by field."""
    common = sorted(old.keys() & new.keys())
    changed = []
    for rid in common:
        fields = [{"field": f, "before": old[rid][f], "after": new[rid][f]}
                  for f in COMPARED if old[rid][f] != new[rid][f]]
        if fields:
            changed.append({"id": rid, "changes": fields})
    return {"added": [new[r] for r in sorted(new.keys() - old.keys())],
            "removed": sorted(old.keys() - new.keys()), "changed": changed}


def step(engine: MemoryEngine, rng: np.random.Generator, now: int) -> int:
    """One random change: ingest, update, forget, claims, ticks (expiry, compaction,
    summaries replacing records)."""
    agent = str(rng.choice(AGENTS))
    op = int(rng.integers(13))
    text = " ".join(rng.choice(WORDS, int(rng.integers(1, 8))).tolist())
    live = engine.records(agent) if agent in engine.agents() else []
    if op <= 2 or not live:
        items = [{"content": f"{text} {i}", "layer": str(rng.choice(
            ["episodic", "episodic", "semantic", "social", "procedural"])),
                  "importance": float(rng.random()), "tags": rng.choice(
                      WORDS, int(rng.integers(0, 3)), replace=False).tolist(),
                  "ttl": int(rng.integers(50, 400)) if rng.random() < 0.3 else None,
                  "source_event": f"ev-{i}" if rng.random() < 0.3 else None}
                 for i in range(int(rng.integers(1, 12)))]
        engine.ingest_many(agent, items, now=now)
    elif op <= 5:
        record = live[int(rng.integers(len(live)))]
        change: dict[str, Any] = [{"importance": float(rng.random())}, {"tags": ["changed"]},
                                  {"content": f"rewritten {text}"}][int(rng.integers(3))]
        engine.update(record.id, **change)
    elif op == 6:
        engine.forget([live[int(rng.integers(len(live)))].id])
    elif op == 7 and rng.random() < 0.2:
        engine.forget(agent_id=agent)
    elif op in (8, 12):
        subject = str(rng.choice(WORDS[:3]))
        value = str(rng.choice(WORDS[3:6]))
        engine.ingest_claim(agent, f"the {subject} is {value}",
                            Claim(subject=subject, predicate="is", value=value), now=now)
    elif op == 9:
        engine.summarize_pending(ScriptedLLM([f"{agent} remembers {text} at the well."]),
                                 now=now)
    else:
        now += int(rng.integers(1, 200))
        engine.tick(now)
    return now


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_diff_equals_the_brute_force_comparison_through_random_changes(mode: str) -> None:
    engine = MemoryEngine(MemoryConfig(**CONFIG, embedding_mode=mode), seed=2)
    rng = np.random.default_rng(5 if mode == "sync" else 6)
    now = 0
    kept: dict[int, tuple[str | None, Views]] = {}
    compared = {"added": 0, "removed": 0, "changed": 0}
    fields: set[str] = set()
    with capture_events(engine.bus, "memory:*") as log:
        for i in range(260):
            now = _round(engine, rng, now, i, kept, compared, fields)
    assert min(compared.values()) > 15, compared
    assert {"content", "digest", "importance", "status", "tags"} <= fields
    reasons = {e.reason for e in log.of("memory:record:expired")}
    assert {"ttl", "retention", "summarized", "forgotten", "overflow"} <= reasons, reasons


def _round(engine: MemoryEngine, rng: np.random.Generator, now: int, i: int,
           kept: dict[int, tuple[str | None, Views]], compared: dict[str, int],
           fields: set[str]) -> int:
    """One random change, a snapshot now and then, and a diff checked now and then."""
    now = step(engine, rng, now)
    if i % 3 == 0:
        scope = None if rng.random() < 0.5 else str(rng.choice(AGENTS))
        version, views = full(engine, scope)
        kept[version] = (scope, views)
    usable = [v for v, (s, _) in kept.items() if v > engine.introspection.version - 12]
    if i % 4 == 1 and usable:
        since = int(rng.choice(usable))
        scope, old = kept[since]
        target = scope if scope is not None or rng.random() < 0.5 else str(
            rng.choice(AGENTS))
        if target is not None and scope is None:
            old = {k: v for k, v in old.items() if v["agentId"] == target}
        got = engine.introspection.diff(since, target, redact=False)
        now_views = full(engine, target)[1]
        expected = brute(old, now_views)
        data = got.model_dump(by_alias=True, mode="json")
        assert {k: data[k] for k in ("added", "removed", "changed")} == expected
        assert (data["since"], data["agentId"]) == (since, target)
        assert data["version"] == engine.introspection.version - 1
        for kind in compared:
            compared[kind] += len(expected[kind])
        fields.update(c["field"] for r in expected["changed"] for c in r["changes"])
        again = engine.introspection.diff(data["version"], target)
        assert (again.added, again.removed, again.changed) == ([], [], [])
    return now


def test_a_record_changed_only_by_its_embedding_shows_its_digest() -> None:
    engine = MemoryEngine(MemoryConfig(embedding_dim=16, embedding_mode="async",
                                       embedding_latency_ms=10), seed=0)
    engine.ingest("ada", "the smith owes gold", now=0)
    v = engine.introspection.snapshot("ada").version
    engine.tick(10)  # the vector lands: the stored record changed
    got = engine.introspection.diff(v, "ada")
    ((change,),) = [c.changes for c in got.changed]
    assert change.field == "digest" and change.before != change.after


def test_since_must_be_a_kept_capture_of_the_same_scope() -> None:
    engine = MemoryEngine(MemoryConfig(), seed=0, embedder=None)
    engine.ingest("ada", "hello", now=0)
    intro = engine.introspection
    one = intro.snapshot("ada").version
    every = intro.snapshot().version
    assert isinstance(intro.diff(every, "ada"), MemoryDiff)  # all agents serve any scope
    before = (engine.state_hash(), intro.version)
    for since, scope in [(one, None), (one, "bo"), (999, "ada"), (0, None), (True, None),
                         ("1", None), (None, None)]:
        with pytest.raises(InputInvalidError) as err:
            intro.diff(since, scope)  # type: ignore[arg-type]
        assert err.value.details["field"] == "since"
        assert "snapshot" in err.value.message
    assert before == (engine.state_hash(), intro.version)
    for _ in range(CAPTURES_KEPT):
        intro.snapshot("ada", limit=1)
    with pytest.raises(InputInvalidError):
        intro.diff(one, "ada")  # fell out of the ring
    intro.diff(intro.version, "ada")
