"""Introspection (index 17): explain of a 2,000-candidate retrieval, a 2,000-record snapshot.

Issue 12 targets (goals here; the enforced bounds are looser for a shared machine):
``explain`` of a 2k-candidate retrieval <= 2 ms (the engine of ``bench_retrieval``: no
query, 1,800-token budget; the explanation with its columns, the candidates' objects
built on first access); ``/api/agents/{id}/snapshot`` of 2k records <= 20 ms, measured as
``snapshot(agent)`` (redacted, the default) plus ``model_dump_json(by_alias=True)``.
Reported beside them: explain with its 2k candidate objects built and serialized (what
``POST /api/agents/{id}/explain`` costs), and ``diff`` of an unchanged agent.
``F09_BENCH_SHORT=1``: fewer rounds.
"""

from __future__ import annotations

import numpy as np
from bench_retrieval import engine_with
from targets import record, rounds, timings_ms

from f09_memory import RetrievalRequest

N = 2_000
NOW = N * 10 + 1_000
REQUEST = RetrievalRequest(agent_id="npc", purpose="reasoning", max_tokens=1800)


def test_explain_2k_candidates(benchmark) -> None:
    benchmark.group = "introspection"
    engine = engine_with(N)
    intro = engine.introspection
    x = benchmark.pedantic(intro.explain, args=(REQUEST,), kwargs={"now": NOW},
                           rounds=rounds(2_000, 300), iterations=1, warmup_rounds=30)
    assert x.candidate_count == N
    assert x.bundle_ids == [r.id for r in engine.retrieve(REQUEST, now=NOW).records]
    ms = timings_ms(benchmark)
    record("explain 2k cand, p50", np.percentile(ms, 50), "ms", spec=5.0, goal=2.0)
    record("explain 2k cand, p95", np.percentile(ms, 95), "ms", spec=10.0, goal=None)


def test_explain_2k_candidates_built_and_serialized(benchmark) -> None:
    benchmark.group = "introspection"
    intro = engine_with(N).introspection

    def explain_json() -> str:
        return intro.explain(REQUEST, now=NOW).model_dump_json(by_alias=True)

    body = benchmark.pedantic(explain_json, rounds=rounds(100, 20), iterations=1,
                              warmup_rounds=3)
    assert body.count('"rank"') == N
    ms = timings_ms(benchmark)
    record("explain 2k cand + JSON, p50", np.percentile(ms, 50), "ms", spec=None, goal=None)


def test_snapshot_2k_records_as_json(benchmark) -> None:
    benchmark.group = "introspection"
    intro = engine_with(N).introspection

    def snapshot_json() -> str:
        return intro.snapshot("npc").model_dump_json(by_alias=True)

    body = benchmark.pedantic(snapshot_json, rounds=rounds(300, 40), iterations=1,
                              warmup_rounds=5)
    assert body.count('"digest"') == N
    ms = timings_ms(benchmark)
    record("snapshot 2k records + JSON, p50", np.percentile(ms, 50), "ms", spec=50.0,
           goal=20.0)
    record("snapshot 2k records + JSON, p95", np.percentile(ms, 95), "ms", spec=None,
           goal=None)


def test_diff_of_an_unchanged_2k_agent(benchmark) -> None:
    benchmark.group = "introspection"
    intro = engine_with(N).introspection
    since = [intro.snapshot("npc", limit=1).version]

    def diff() -> int:
        since[0] = intro.diff(since[0], "npc").version
        return since[0]

    benchmark.pedantic(diff, rounds=rounds(2_000, 300), iterations=1, warmup_rounds=10)
    ms = timings_ms(benchmark)
    record("diff 2k unchanged, p50", np.percentile(ms, 50), "ms", spec=None, goal=None)
