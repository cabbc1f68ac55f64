from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from f09_memory import MemoryConfig
from f09_memory.errors import ErrorCode, MemoryEngineError, SummaryFailedError, SummaryLockedError
from f09_memory.protocols import LLMClient
from f09_memory.schema import MemoryLayer, TaskStatus
from f09_memory.summarization import Summarizer, SummaryOutcome
from f09_memory.summarization.service import ask_llm
from f09_memory.testing.doubles import FailingLLM, ScriptedLLM

NOW = 100_000
EMAIL = "alice.w@example.org"
CARD = "1234567812345678"
GOOD = ("Bram, Old Tom, Lysa and Mira met at the well to talk about the harvest.\n"
        "- trade, market and combat were discussed with Bram and Old Tom.")


def run_llm(s: Summarizer, llm: LLMClient, now: int) -> list[SummaryOutcome]:
    """Phase 2 for every queued task, the way the engine's service runs it."""
    cfg = s.config
    out = []
    for task in s.poll(now):
        reply, error = ask_llm(llm, task, s.system_prompt,
                               temperature=cfg.summarization_temperature,
                               max_tokens=cfg.summarization_max_tokens)
        out.append(s.complete(task.id, reply) if error is None
                   else s.complete_after_error(task.id, error))
    return out


@pytest.fixture
def pii_items(town: Any) -> list[dict[str, Any]]:
    items = town(20)
    for i in (0, 4, 9):
        items[i]["content"] += f" Write to {EMAIL} or charge card {CARD}."
    items[2]["tags"] = ["trade", EMAIL]
    return items


@pytest.fixture
def setup(build: Any, pii_items: list[dict[str, Any]], redact: Callable[[str], str]) -> Any:
    def make(**overrides: Any) -> tuple[Any, Any, Summarizer]:
        engine, am = build(pii_items, **overrides)
        return engine, am, Summarizer(engine.config, redact=redact)

    return make


def state_of(s: Summarizer) -> dict[str, Any]:
    return copy.deepcopy(s.get_state())


# ------------------------------------------------------------------ privacy (QG5)
def test_pii_in_the_store_never_reaches_the_llm(setup: Any) -> None:
    engine, am, s = setup()
    raw = [r.content for r in engine.records(am.agent_id)]
    assert any(EMAIL in c and CARD in c for c in raw)  # redaction mode OFF: raw in store
    task = s.schedule(am, NOW)
    assert task is not None and 10 == len(task.source_ids)
    llm = ScriptedLLM([GOOD])
    (outcome,) = run_llm(s, llm, NOW)
    sent = llm.calls[0]
    text = f"{sent['prompt']}{sent['system']}"
    assert EMAIL not in text and CARD not in text and "<REDACT:sha256-" in text
    assert outcome.summary_text is not None and EMAIL not in outcome.summary_text
    assert EMAIL not in outcome.tags and "trade" in outcome.tags
    s._check()


def test_pending_state_never_holds_raw_pii(setup: Any) -> None:
    _, am, s = setup()
    s.schedule(am, NOW)
    dumped = repr(s.get_state())
    assert EMAIL not in dumped and CARD not in dumped and "<REDACT:sha256-" in dumped


def test_store_redacted_at_ingest_still_gives_a_redacted_prompt(
    build: Any, pii_items: list[dict[str, Any]], redact: Callable[[str], str]
) -> None:
    engine, am = build(pii_items, redaction_mode=True)
    s = Summarizer(engine.config, redact=redact)
    task = s.schedule(am, NOW)
    assert task is not None and task.prompt is None  # built when the host polls
    assert [task] == s.poll(NOW)
    assert task.prompt and "<REDACT:sha256-" in task.prompt
    assert EMAIL not in task.prompt and CARD not in task.prompt


def test_pii_echoed_by_the_llm_or_in_a_reason_is_redacted(setup: Any) -> None:
    _, am, s = setup()
    assert s.schedule(am, NOW) is not None
    (outcome,) = run_llm(s, ScriptedLLM([GOOD + f" Contact {EMAIL}."]), NOW)
    assert "llm" == outcome.path and EMAIL not in (outcome.summary_text or "")
    task = s.schedule(am, NOW + 10_000)
    assert task is not None
    failed = s.fail(task.id, f"host gave up on {EMAIL}")
    assert EMAIL not in (failed.reason or "") and EMAIL not in (failed.task.failure_reason or "")


def test_heuristic_fallback_text_is_redacted(setup: Any) -> None:
    _, am, s = setup(summarization_keep_recent=0)
    s.schedule(am, NOW, mode="heuristic")
    (outcome,) = s.collect()
    assert outcome.summary_text is not None and "heuristic" == outcome.path
    assert EMAIL not in outcome.summary_text and CARD not in outcome.summary_text


# ------------------------------------------------------------------ happy path
def test_the_llm_text_completes_the_task(setup: Any) -> None:
    engine, am, s = setup()
    task = s.schedule(am, NOW)
    assert task is not None
    assert ("sum:npc:00000000", "npc", MemoryLayer.SEMANTIC, TaskStatus.QUEUED, NOW) == (
        task.id, task.agent_id, task.target_layer, task.status, task.created_at)
    assert [f"npc:{k:010d}" for k in range(10)] == task.source_ids
    llm = ScriptedLLM([GOOD])
    (outcome,) = run_llm(s, llm, NOW)
    cfg = engine.config
    assert {"system": s.system_prompt, "temperature": cfg.summarization_temperature,
            "max_tokens": cfg.summarization_max_tokens, "prompt": task.prompt} == llm.calls[0]
    assert TaskStatus.COMPLETED == outcome.task.status
    assert ("llm", False, None) == (outcome.path, outcome.used_fallback, outcome.reason)
    assert GOOD.strip() == outcome.summary_text
    assert tuple(range(10)) == outcome.source_keys
    assert tuple(task.source_ids) == outcome.source_ids
    assert outcome.replaces_sources
    assert 0.0 < outcome.reduction_ratio < 1.0 and 0.5 <= outcome.coverage <= 1.0
    assert 0.2 == outcome.importance and 9_000 == outcome.recency_anchor
    assert "trade" in outcome.tags
    assert not s.locked("npc") and [] == s.pending()
    s._check()


def test_two_phase_by_hand(setup: Any) -> None:
    _, am, s = setup()
    task = s.schedule(am, NOW)
    assert task is not None and s.locked("npc")
    assert [] == s.poll(NOW - 1)  # created later than that
    (running,) = s.poll(NOW)
    assert running is task and TaskStatus.RUNNING == task.status and task.prompt
    assert [] == s.poll(NOW)  # not handed out twice
    assert [task] == s.pending("npc") and [] == s.pending("other")
    outcome = s.complete(task.id, GOOD)
    assert "llm" == outcome.path and TaskStatus.COMPLETED == task.status
    s._check()


def test_a_queued_task_may_be_completed_without_polling(setup: Any) -> None:
    _, am, s = setup()
    task = s.schedule(am, NOW)
    assert task is not None
    assert "llm" == s.complete(task.id, GOOD).path


# ------------------------------------------------------------------ fallback (QG3)
@pytest.mark.parametrize("error", [TimeoutError("slow"), RuntimeError("boom"),
                                   ConnectionError("down"), ValueError("bad")])
def test_llm_exception_falls_back_to_the_heuristic_and_never_raises(
    setup: Any, error: Exception
) -> None:
    _, am, s = setup()
    s.schedule(am, NOW)
    llm = FailingLLM(error)
    (outcome,) = run_llm(s, llm, NOW)
    assert 1 == llm.calls
    assert ("heuristic", True) == (outcome.path, outcome.used_fallback)
    assert outcome.reason is not None and type(error).__name__ in outcome.reason
    assert TaskStatus.COMPLETED == outcome.task.status
    assert outcome.summary_text and outcome.summary_text.startswith("10 events from t=0")
    assert not s.locked("npc")
    s._check()


@pytest.mark.parametrize(("reply", "why"), [
    ("", "garbage: empty"),
    ("   ", "garbage: empty"),
    ("As an AI language model, I cannot summarize personal memories.", "garbage: refusal"),
    ("!!!???", "garbage: no letters"),
    ("ok", "garbage: too short"),
    ("The weather was nice and everyone was happy about it all day long.",
     "low coverage 0.00 < 0.50"),
])
def test_garbage_or_low_coverage_reply_falls_back(setup: Any, reply: str, why: str) -> None:
    _, am, s = setup()
    s.schedule(am, NOW)
    (outcome,) = run_llm(s, ScriptedLLM([reply]), NOW)
    assert ("heuristic", True, why) == (outcome.path, outcome.used_fallback, outcome.reason)
    assert outcome.summary_text and 1.0 == outcome.coverage


@pytest.mark.parametrize("reply", [None, 42, b"bytes"])
def test_non_text_reply_falls_back(setup: Any, reply: object) -> None:
    _, am, s = setup()
    s.schedule(am, NOW)
    llm = ScriptedLLM(["x"])
    llm.replies = [reply]  # type: ignore[list-item]
    (outcome,) = run_llm(s, llm, NOW)
    assert "heuristic" == outcome.path and outcome.reason and outcome.reason.startswith("garbage")


def test_complete_with_none_falls_back(setup: Any) -> None:
    _, am, s = setup()
    task = s.schedule(am, NOW)
    assert task is not None
    outcome = s.complete(task.id, None)
    assert ("heuristic", "garbage: empty") == (outcome.path, outcome.reason)


def test_min_coverage_is_configurable(setup: Any) -> None:
    _, am, s = setup(summarization_min_coverage=0.0)
    s.schedule(am, NOW)
    (outcome,) = run_llm(s, ScriptedLLM(["The weather was nice all day long."]), NOW)
    assert "llm" == outcome.path and 0.0 == outcome.coverage


# ------------------------------------------------------------------ selection rules
def test_keep_recent_and_flagged_records_are_never_sources(build: Any, town: Any,
                                                           redact: Any) -> None:
    items = town(30)
    for i in (1, 2, 5):
        items[i]["flagged"] = True
    engine, am = build(items, summarization_keep_recent=12, summarization_batch_size=50)
    s = Summarizer(engine.config, redact=redact)
    s.schedule(am, NOW, mode="heuristic")
    (outcome,) = s.collect()
    assert tuple(k for k in range(18) if k not in (1, 2, 5)) == outcome.source_keys


def test_not_enough_eligible_records_schedules_nothing(setup: Any, build: Any, town: Any,
                                                       redact: Any) -> None:
    engine, am = build(town(6), summarization_keep_recent=5)  # one eligible < min_batch 2
    s = Summarizer(engine.config, redact=redact)
    before = state_of(s)
    assert s.schedule(am, NOW, require=True) is None
    assert before == state_of(s)  # an explicit request that finds nothing changes nothing
    assert s.schedule(am, NOW) is None
    interval = engine.config.summarization_min_interval_ms
    assert {**before, "nextCheck": {"npc": NOW + interval}} == state_of(s)  # checked again
    assert NOW + interval == s.next_check("npc")  # after the interval
    _, am2, s2 = setup()
    assert s2.schedule(am2, 500) is None  # nothing is older than the episodic window yet


def test_one_pending_task_per_agent_and_require_raises_locked(setup: Any) -> None:
    _, am, s = setup(summarization_min_interval_ms=0)
    task = s.schedule(am, NOW)
    assert task is not None
    before = state_of(s)
    assert s.schedule(am, NOW + 1) is None
    with pytest.raises(SummaryLockedError) as info:
        s.schedule(am, NOW + 1, require=True)
    assert ErrorCode.MEMORY_SUMMARY_LOCKED == info.value.code
    assert task.id == info.value.details["taskId"] and "complete or fail" in info.value.message
    assert before == state_of(s)
    s.poll(NOW)
    with pytest.raises(SummaryLockedError):
        s.schedule(am, NOW + 2, require=True)
    s.complete(task.id, GOOD)
    assert s.schedule(am, NOW + 3) is not None


def test_min_interval_between_tasks_of_an_agent(setup: Any) -> None:
    engine, am, s = setup()
    interval = engine.config.summarization_min_interval_ms
    task = s.schedule(am, NOW)
    assert task is not None
    s.fail(task.id, "host busy")
    assert s.schedule(am, NOW + interval - 1) is None
    forced = s.schedule(am, NOW + 1, require=True)  # an explicit request skips the wait
    assert forced is not None and "sum:npc:00000001" == forced.id
    s.fail(forced.id, "again")
    assert s.schedule(am, NOW + 1 + interval) is not None


# ------------------------------------------------------------------ pressure modes
def test_heuristic_mode_completes_inside_schedule(setup: Any) -> None:
    _, am, s = setup()
    task = s.schedule(am, NOW, mode="heuristic")
    assert task is not None and TaskStatus.QUEUED == task.status and task.prompt is None
    assert s.locked("npc") and [] == s.poll(NOW)  # locked until its summary is applied
    assert s.schedule(am, NOW + 1) is None
    with pytest.raises(SummaryLockedError):
        s.schedule(am, NOW + 1, require=True)
    assert (1, 10) == (s.ready_count, s.ready_sources)  # finished when taken (by a tick)
    (outcome,) = s.collect()
    assert TaskStatus.COMPLETED == task.status and (0, None) == (s.ready_count,
                                                                 s.ready_sources)
    assert [] == s.collect()
    assert (task, "heuristic", True, "pressure: heuristic mode") == (
        outcome.task, outcome.path, outcome.used_fallback, outcome.reason)
    assert outcome.replaces_sources and 1.0 == outcome.coverage


def test_skip_mode_marks_the_task_skipped_and_keeps_the_sources(setup: Any) -> None:
    _, am, s = setup()
    task = s.schedule(am, NOW, mode="skip")
    assert task is not None and TaskStatus.QUEUED == task.status
    (outcome,) = s.collect()
    assert TaskStatus.SKIPPED == task.status
    assert (None, "none", False, 0.0) == (outcome.summary_text, outcome.path,
                                          outcome.used_fallback, outcome.reduction_ratio)
    assert not outcome.replaces_sources and 10 == len(outcome.source_keys)
    assert "pressure: summarization skipped" == task.failure_reason
    assert not s.locked("npc")
    s._check()


def test_modes_follow_the_pressure_profiles() -> None:
    cfg = MemoryConfig()
    assert ["llm", "llm", "heuristic", "skip"] == [
        cfg.scoring.pressure[p].summarization for p in cfg.scoring.pressure]


# ------------------------------------------------------------------ failure
def test_fail_keeps_the_sources_and_releases_the_lock(setup: Any) -> None:
    _, am, s = setup()
    task = s.schedule(am, NOW)
    assert task is not None
    s.poll(NOW)
    outcome = s.fail(task.id, "  rate limited  ")
    assert (TaskStatus.FAILED, "rate limited") == (task.status, task.failure_reason)
    assert (None, "none", False, "rate limited") == (
        outcome.summary_text, outcome.path, outcome.used_fallback, outcome.reason)
    assert not outcome.replaces_sources and not s.locked("npc")
    with pytest.raises(SummaryFailedError):
        s.complete(task.id, GOOD)
    long = s.fail(s.schedule(am, NOW, require=True).id, "x" * 500)  # type: ignore[union-attr]
    assert long.reason is not None and 200 == len(long.reason)


def test_unknown_or_finished_task_ids_raise_summary_failed(setup: Any) -> None:
    _, am, s = setup()
    for call in (lambda: s.complete("sum:npc:00000099", GOOD),
                 lambda: s.fail("nope", "x")):
        with pytest.raises(SummaryFailedError) as info:
            call()
        assert ErrorCode.MEMORY_SUMMARY_FAILED == info.value.code
    task = s.schedule(am, NOW)
    assert task is not None
    s.complete(task.id, GOOD)
    with pytest.raises(SummaryFailedError):
        s.complete(task.id, GOOD)
    with pytest.raises(SummaryFailedError):
        s.fail(task.id, "late")


@pytest.mark.parametrize(("call", "field"), [
    (lambda s, am, t: s.complete(t, 42), "text"),
    (lambda s, am, t: s.complete(None, "x"), "task_id"),
    (lambda s, am, t: s.complete("", "x"), "task_id"),
    (lambda s, am, t: s.fail(t, None), "reason"),
    (lambda s, am, t: s.schedule(am, -1), "now"),
    (lambda s, am, t: s.schedule(am, 1.5), "now"),
    (lambda s, am, t: s.schedule(am, True), "now"),
    (lambda s, am, t: s.schedule(am, NOW, mode="turbo"), "mode"),
    (lambda s, am, t: s.schedule("npc", NOW), "am"),
    (lambda s, am, t: s.poll(-5), "now"),
])
def test_malformed_arguments_raise_input_invalid_and_change_nothing(
    setup: Any, call: Callable[..., Any], field: str
) -> None:
    _, am, s = setup()
    task = s.schedule(am, NOW)
    assert task is not None
    before = state_of(s)
    with pytest.raises(MemoryEngineError) as info:
        call(s, am, task.id)
    assert (ErrorCode.MEMORY_INPUT_INVALID, field) == (info.value.code,
                                                       info.value.details["field"])
    assert before == state_of(s) and s.locked("npc")
    s._check()


def test_constructor_rejects_bad_config_and_redactor(redact: Any) -> None:
    with pytest.raises(MemoryEngineError) as info:
        Summarizer({"episodic_max": 5}, redact=redact)  # type: ignore[arg-type]
    assert "config" == info.value.details["field"]
    with pytest.raises(MemoryEngineError) as info:
        Summarizer(MemoryConfig(), redact="EMAIL")  # type: ignore[arg-type]
    assert "redact" == info.value.details["field"]


# ------------------------------------------------------------------ determinism, state
def run_scenario(setup: Any) -> tuple[list[Any], list[dict[str, Any]], dict[str, Any]]:
    engine, am, s = setup(summarization_min_interval_ms=0, summarization_batch_size=4)
    for i in range(8):
        engine.ingest("npc2", f"Saw Bram at gate {i}.", importance=0.1, now=i * 10)
    am2 = engine._state.store.get("npc2")
    tasks = [s.schedule(am, NOW), s.schedule(am2, NOW)]
    llm = ScriptedLLM([GOOD, "", GOOD])
    outcomes = [o.to_state() for o in run_llm(s, llm, NOW)]
    tasks.append(s.schedule(am, NOW + 1, mode="heuristic"))
    outcomes += [o.to_state() for o in s.collect()]
    return ([(t.id, t.prompt) for t in tasks if t is not None] + [llm.calls], outcomes,
            s.get_state())


def test_ids_prompts_and_outcomes_are_identical_across_runs(
    build: Any, town: Any, redact: Any
) -> None:
    def setup_factory() -> Any:
        def make(**overrides: Any) -> Any:
            items = town(20)
            engine, am = build(items, summarization_keep_recent=5, **overrides)
            return engine, am, Summarizer(engine.config, redact=redact)
        return make

    first = run_scenario(setup_factory())
    second = run_scenario(setup_factory())
    assert first == second
    ids = [x[0] for x in first[0][:-1]]
    assert ["sum:npc:00000000", "sum:npc2:00000000", "sum:npc:00000001"] == ids
    assert {"npc": 2, "npc2": 1} == first[2]["counters"]


def test_state_round_trip_with_a_pending_task(setup: Any, redact: Any) -> None:
    engine, am, s = setup()
    task = s.schedule(am, NOW)
    assert task is not None
    s.poll(NOW)
    s.schedule(engine._state.store.get("npc"), NOW, mode="skip")  # locked: nothing
    restored = Summarizer(engine.config, redact=redact)
    restored.set_state(state_of(s))
    restored._check()
    assert s.get_state() == restored.get_state()
    assert restored.locked("npc") and [] == restored.poll(NOW)
    a, b = s.complete(task.id, GOOD), restored.complete(task.id, GOOD)
    assert a.to_state() == b.to_state()
    assert s.get_state() == restored.get_state()


def test_state_round_trip_with_ready_outcomes(setup: Any, redact: Any) -> None:
    engine, am, s = setup()
    s.schedule(am, NOW, mode="heuristic")
    restored = Summarizer(engine.config, redact=redact)
    restored.set_state(state_of(s))
    assert state_of(restored) == state_of(s)
    assert [o.to_state() for o in s.collect()] == [o.to_state() for o in restored.collect()]
    assert restored.take_ready() is None and s.take_ready() is None


@pytest.mark.parametrize("mutate", [
    lambda st: st.update(version=99),
    lambda st: st.pop("counters"),
    lambda st: st["pending"][0]["task"].update(status="completed"),
    lambda st: st["pending"][0]["sources"].pop(),
    lambda st: st["pending"].append(copy.deepcopy(st["pending"][0])),
    lambda st: st["pending"][0]["sources"][0].__setitem__(0, "key"),
    lambda st: st["pending"][0]["task"].update(targetLayer="bogus"),
    lambda st: st["counters"].update(npc=0),
    lambda st: st["pending"][0]["task"].update(id="sum:other:00000000"),
    lambda st: st["ready"].append({"reason": "x"}),
    lambda st: st["ready"].append({**st["ready"][0], "reason": ""}),
    lambda st: st["ready"].append(copy.deepcopy(st["pending"][0])),
    lambda st: st["nextCheck"].update(npc="soon"),
    lambda st: st["late"].append({"id": "x"}),
    lambda st: st["held"].append({"path": "llm"}),
    lambda st: st["ready"][0]["task"].update(agentId="npc"),
])
def test_malformed_state_raises_input_invalid_and_changes_nothing(
    setup: Any, town: Any, mutate: Callable[[dict[str, Any]], Any]
) -> None:
    engine, am, s = setup(summarization_min_interval_ms=0)
    s.schedule(am, NOW)  # "npc": an LLM task; "npc2": a heuristic one, waiting for a tick
    for item in town(20):
        engine.ingest("npc2", **item)
    s.schedule(engine._state.store.get("npc2"), NOW, mode="heuristic")
    good = state_of(s)
    bad = copy.deepcopy(good)
    mutate(bad)
    with pytest.raises(MemoryEngineError) as info:
        s.set_state(bad)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    assert good == state_of(s)


def test_numpy_time_is_accepted(setup: Any) -> None:
    import numpy as np

    _, am, s = setup()
    task = s.schedule(am, np.int64(NOW))
    assert task is not None and NOW == task.created_at and type(task.created_at) is int


def test_a_pending_task_survives_its_sources_leaving_the_store(setup: Any) -> None:
    _, am, s = setup()
    task = s.schedule(am, NOW)
    assert task is not None
    for key in range(10):
        am.remove(key)  # expired or evicted while the LLM was thinking
    am._check()
    outcome = s.complete(task.id, GOOD)
    assert "llm" == outcome.path and tuple(range(10)) == outcome.source_keys
