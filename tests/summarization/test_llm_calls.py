"""LLM calls of ``summarize_pending``: queued at once, answered in order, each run once."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.schema.tasks import SummarizationTask
from f09_memory.summarization.service import LLMWorker, ask_many
from f09_memory.testing import capture_events
from f09_memory.testing.doubles import ScriptedLLM

AGENTS = ("ann", "bob", "cid", "dan")
GOOD = "Ann, Bob, Cid and Dan met Eve at the well."


class GatedLLM:
    """Records each prompt; a call whose prompt names a gated agent waits for its gate."""

    def __init__(self, gated: dict[str, threading.Event]) -> None:
        self.gated = gated
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def complete(self, prompt: str, *, system: str | None = None, temperature: float = 0.0,
                 max_tokens: int = 0) -> str:
        with self.lock:
            self.calls.append(prompt)
        for name, gate in self.gated.items():
            if name in prompt:
                gate.wait(10.0)
        return GOOD


def _engine(**config: Any) -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(episodic_window=10, summarization_keep_recent=0,
                                       **config), embedder=None)
    for agent in AGENTS:
        engine.ingest_many(agent, [f"{agent.title()} met Eve at the well {i}."
                                   for i in range(6)], now=0)
        engine.summarization.request(agent, now=100)
    return engine


def _tasks(n: int) -> list[SummarizationTask]:
    return [SummarizationTask(id=f"sum:a{i}:00000000", agent_id=f"a{i}",
                              target_layer="semantic", source_ids=[f"a{i}:0000000001"],
                              created_at=0, prompt=f"prompt a{i}") for i in range(n)]


def test_queued_calls_give_what_calls_one_by_one_give() -> None:
    queued, inline = _engine(), _engine(summarization_timeout_ms=None)
    llms = [ScriptedLLM([GOOD, "garbage", GOOD, ""]) for _ in range(2)]
    ran = [engine.summarize_pending(llm, now=100) for engine, llm in zip(
        (queued, inline), llms, strict=True)]
    assert [c["prompt"] for c in llms[0].calls] == [c["prompt"] for c in llms[1].calls]
    assert 4 == len(llms[0].calls)
    assert [(o.path, o.summary_text) for o in ran[0]] == [
        (o.path, o.summary_text) for o in ran[1]]
    assert ["llm", "heuristic", "llm", "heuristic"] == [o.path for o in ran[0]]
    assert [r.model_dump() for a in AGENTS for r in queued.records(a)] == [
        r.model_dump() for a in AGENTS for r in inline.records(a)]


def test_a_timed_out_call_moves_the_queued_ones_to_a_new_worker_each_run_once() -> None:
    bob = threading.Event()
    llm = GatedLLM({"Bob": bob})
    engine = _engine()
    turns: list[float] = []

    def wait(done: threading.Event, seconds: float) -> bool:
        turns.append(seconds)
        return len(turns) != 2 and done.wait(seconds)  # Bob's turn: the time is up

    engine.summarization.wait = wait
    try:
        outcomes = engine.summarize_pending(llm, now=100, timeout_ms=5_000)
    finally:
        bob.set()
    assert [5.0] * 4 == turns
    assert ["llm", "heuristic", "llm", "llm"] == [o.path for o in outcomes]
    assert outcomes[1].reason is not None and "timeout" in outcomes[1].reason
    # The stuck worker exits after Bob's call; nothing ran twice, nothing ran on it later.
    service = engine.summarization
    finished = service._live_worker().queue(lambda: (None, None))
    assert finished.done.wait(5.0)
    assert [1, 1, 1, 1] == [sum(f"{a.title()} met" in p for p in llm.calls) for a in AGENTS]
    assert 4 == len(llm.calls)
    engine._check()


def test_calls_not_started_when_the_caller_stops_never_run() -> None:
    first, second = threading.Event(), threading.Event()
    llm = GatedLLM({"a0": first, "a1": second})
    worker = LLMWorker()

    def wait(done: threading.Event, seconds: float) -> bool:
        first.set()  # the first call may answer now
        return done.wait(seconds)

    answers = ask_many(llm, _tasks(4), "system", temperature=0.0, max_tokens=10,
                       timeout_ms=5_000, wait=wait, workers=lambda: worker)
    assert (GOOD, None) == next(answers)
    answers.close()  # a1 may be running (blocked on its gate); a2 and a3 are taken back
    second.set()
    finished = worker.queue(lambda: (None, None))
    assert finished.done.wait(5.0)
    assert "prompt a2" not in llm.calls and "prompt a3" not in llm.calls
    assert llm.calls[0] == "prompt a0"


def test_without_a_timeout_each_call_runs_when_its_answer_is_asked_for() -> None:
    llm = ScriptedLLM([GOOD])
    answers = ask_many(llm, _tasks(3), "system", temperature=0.0, max_tokens=10)
    assert [] == llm.calls
    next(answers)
    assert 1 == len(llm.calls)
    assert 2 == len(list(answers)) and 3 == len(llm.calls)


def test_a_raising_llm_gives_the_heuristic_and_the_next_calls_still_run() -> None:
    class Flaky(ScriptedLLM):
        def complete(self, prompt: str, **kw: Any) -> str:
            reply = super().complete(prompt, **kw)
            if "Bob" in prompt:
                raise RuntimeError("adapter down")
            return reply

    engine = _engine()
    llm = Flaky([GOOD])
    outcomes = engine.summarize_pending(llm, now=100)
    assert ["llm", "heuristic", "llm", "llm"] == [o.path for o in outcomes]
    assert outcomes[1].reason is not None and "adapter down" in outcomes[1].reason
    with pytest.raises(MemoryEngineError) as info:
        engine.summarize_pending(llm, timeout_ms=-5)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code


def test_a_round_equals_its_tasks_completed_one_by_one() -> None:
    replies = [GOOD, "garbage", GOOD, ""]
    whole, single = _engine(), _engine()
    with capture_events(whole.bus, "memory:*") as log:
        ran = whole.summarize_pending(ScriptedLLM(replies), now=100)
    by_hand = [single.summarization.complete(task.id, reply) for task, reply in zip(
        single.summarization.poll(now=100), replies, strict=True)]
    assert [(o.path, o.summary_text, o.task.summary_record_id) for o in ran] == [
        (o.path, o.summary_text, o.task.summary_record_id) for o in by_hand]
    assert whole.state_hash() == single.state_hash()
    whole._check()
    names = [(e.name, getattr(e, "id", None) or getattr(e, "task_id", None)) for e in log.events]
    for o in ran:  # each task's events in order: its sources, its summary, its completion
        sources = [names.index(("memory:record:expired", rid)) for rid in o.task.source_ids]
        created = names.index(("memory:record:created", o.task.summary_record_id))
        completed = names.index(("memory:summarization:completed", o.task.id))
        assert max(sources) < created < completed


def test_a_round_applies_what_was_completed_when_a_later_task_raises() -> None:
    engine = _engine()
    tasks = engine.summarization.poll(now=100)
    engine.summarization.complete(tasks[2].id, GOOD)  # done by hand: the round then fails
    with pytest.raises(MemoryEngineError) as info:
        engine.summarization._complete_round([(t, GOOD, None) for t in tasks], 0)
    assert ErrorCode.MEMORY_SUMMARY_FAILED == info.value.code
    done = [engine.records(a, "semantic") for a in AGENTS]
    assert [1, 1, 1, 0] == [len(r) for r in done]  # ann and bob applied, cid by hand
    engine._check()
