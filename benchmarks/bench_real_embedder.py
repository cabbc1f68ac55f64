"""The real model in the frame (issue 16): all-MiniLM-L6-v2 on the CPU, in ticks and queries.

1. Re-embedding after ``set_embedder``: records embedded with the hashing embedder, then
   ``set_embedder(SentenceTransformerEmbedder())`` and ``tick(budget_ms=2)`` until the
   backlog is empty. Goal: every tick's wall <= B + 2 ms. One MiniLM text costs more than
   that (its declared ``tick_cost_units`` exceed the whole budget), so each tick takes
   exactly one text (a step's first item is always taken) and the goal is out of reach on
   this machine: the figures say by how much.
2. ``retrieve_many`` over 100 agents with 100 new query texts (new every frame, so nothing is
   cached) against a loop of ``retrieve`` over the same kind of frame. Goal: <= 0.3 x.
3. The grid-world host loop with ``embedding_mode="async"``: a worker thread embeds each
   step's new observations, a tick ``embedding_latency_ms`` (2 steps) later attaches them.
   The loop is paced like a game's fixed step: the period is 1 s (one logical step) or, if
   the model cannot embed a step's texts that fast on this machine, 1.3 x its measured time
   per step. Goals: tick p99 <= B + 1 ms; ingest never waits for the model (its wall is
   that of the same loop with the hashing embedder, far below the model's time per step).
   Torch runs on one thread, so the worker holds one core and the frame the other, and the
   switch interval is 0.5 ms (``sys.setswitchinterval``): with the default 5 ms a tick that
   needs the GIL while the worker holds it waits up to 5 ms (tick p50 1.2-7 ms, p99 5-14 ms
   against 0.6-1.2 and about 3 ms with 0.5 ms, 50 agents). Run twice: with the model on the
   engine's worker thread, and in a child process (``ProcessEmbedder``, torch on one
   thread there), where the worker thread only waits on a socket and the frame never waits
   for the model's Python code to release the GIL.

Skipped without ``sentence-transformers``; a model that does not load fails. ``F09_BENCH_SHORT=1``:
60 records to re-embed, 1 frame pair per thread setting, 50 agents for 3 steps in the host loop.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from functools import partial
from typing import Any

import numpy as np
import pytest
from targets import SHORT, record

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest
from f09_memory.determinism.gridworld import STEP_MS, GridWorld, grid_engine, host_loop
from f09_memory.embedding import ProcessEmbedder, SentenceTransformerEmbedder
from f09_memory.embedding.calibrate import sample_texts
from f09_memory.engine import DEFAULT_EMBEDDER

B = 2.0


def test_reembedding_2k_records_in_2ms_ticks(benchmark, minilm) -> None:
    benchmark.group = "real embedder"
    n = 60 if SHORT else 2_000
    texts = sample_texts(n)
    engine = MemoryEngine(MemoryConfig(), seed=0)
    engine.ingest_batch([{"agent_id": f"npc-{i % 20:02d}", "content": t}
                         for i, t in enumerate(texts)], now=0)
    engine.set_embedder(minilm)
    walls: list[float] = []
    embedded: list[int] = []

    def drain() -> None:
        now = 1
        while True:
            t = time.perf_counter()
            report = engine.tick(now, budget_ms=B)
            walls.append((time.perf_counter() - t) * 1000.0)
            embedded.append(report.embedded)
            now += 1
            if report.backlog.embedding_retries == 0:
                return

    benchmark.pedantic(drain, rounds=1, iterations=1)
    ms = np.asarray(walls)
    assert n == sum(embedded) and max(embedded) == 1  # one text per tick, never more
    record(f"re-embed {n} with MiniLM, tick B=2: ticks needed", len(walls), "", spec=None,
           goal=None)
    record(f"re-embed {n} with MiniLM, tick B=2: wall p50", np.percentile(ms, 50), "ms",
           spec=None, goal=B + 2.0)
    record(f"re-embed {n} with MiniLM, tick B=2: wall p99", np.percentile(ms, 99), "ms",
           spec=None, goal=B + 2.0)
    record(f"re-embed {n} with MiniLM, tick B=2: wall max", ms.max(), "ms", spec=1_000.0,
           goal=B + 2.0)


def test_reembedding_in_async_mode_keeps_ticks_short(benchmark, minilm) -> None:
    """The same re-embedding with ``embedding_mode="async"`` in a host paced at 50 frames/s:
    the tick hands the worker a batch and attaches it 40 frames (0.8 s) later, more than a
    batch of 64 MiniLM texts takes here."""
    benchmark.group = "real embedder"
    n = 40 if SHORT else 2_000
    frame_s = 0.02
    engine = MemoryEngine(MemoryConfig(embedding_mode="async", embedding_latency_ms=40),
                          seed=0)
    engine.ingest_batch([{"agent_id": f"npc-{i % 20:02d}", "content": t}
                         for i, t in enumerate(sample_texts(n))], now=0)
    engine.tick(0)
    engine.set_embedder(minilm)
    walls: list[float] = []
    attached = [0]

    def drain() -> None:
        now = 1
        while True:
            t = time.perf_counter()
            report = engine.tick(now, budget_ms=B)
            spent = time.perf_counter() - t
            walls.append(spent * 1000.0)
            attached[0] += report.embedded
            now += 1
            if report.backlog.embedding_retries == 0:
                return
            time.sleep(max(0.0, frame_s - spent))  # the host's own frame

    benchmark.pedantic(drain, rounds=1, iterations=1)
    ms = np.asarray(walls)
    assert n == attached[0]
    record(f"re-embed {n} with MiniLM, async, tick B=2: wall p99", np.percentile(ms, 99), "ms",
           spec=None, goal=B + 2.0)
    record(f"re-embed {n} with MiniLM, async, tick B=2: wall max", ms.max(), "ms",
           spec=1_000.0, goal=B + 2.0)


def _frame(frame: int, agents: Sequence[str]) -> list[RetrievalRequest]:
    """One query per agent, every text new (frame and agent in it)."""
    return [RetrievalRequest(agent_id=a, purpose="reasoning", max_tokens=300,
                             query=f"what did I see near the river on the {frame}th night, "
                                   f"the one {k} remembers?")
            for k, a in enumerate(agents)]


@pytest.mark.parametrize("threads", ["torch default", "1 torch thread"])
def test_retrieve_many_with_100_new_query_texts(benchmark, minilm, threads) -> None:
    benchmark.group = "real embedder"
    agents = [f"npc-{i:03d}" for i in range(100)]
    per_agent = 1 if SHORT else 20
    texts = sample_texts(len(agents) * per_agent)
    engine = MemoryEngine(MemoryConfig(), seed=0, embedder=minilm)
    engine.ingest_batch([{"agent_id": agents[i % 100], "content": t}
                         for i, t in enumerate(texts)], now=0)
    pairs = 1 if SHORT else 5
    loop_s: list[float] = []
    many_s: list[float] = []

    def run() -> None:
        for p in range(pairs):
            requests = _frame(2 * p, agents)
            t = time.perf_counter()
            for r in requests:
                engine.retrieve(r, now=10)
            loop_s.append(time.perf_counter() - t)
            requests = _frame(2 * p + 1, agents)
            t = time.perf_counter()
            bundles = engine.retrieve_many(requests, now=10)
            many_s.append(time.perf_counter() - t)
            assert all(b.diagnostics.semantic_fallback is None for b in bundles)

    with _torch_on_one_thread() if threads == "1 torch thread" else nullcontext():
        benchmark.pedantic(run, rounds=1, iterations=1)
    loop, many = float(np.median(loop_s)), float(np.median(many_s))
    name = f"100 new queries, MiniLM, {threads}"
    record(f"{name}: loop of retrieve", loop * 1000.0, "ms", spec=None, goal=None)
    record(f"{name}: retrieve_many", many * 1000.0, "ms", spec=None, goal=None)
    record(f"{name}: retrieve_many / loop", many / loop, "", spec=None, goal=0.3)


class _Timed:
    """Forwards to a provider and adds up the wall time of its ``embed`` calls."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.dim = inner.dim
        self.version = inner.version
        self.tick_cost_units = inner.tick_cost_units
        self.seconds = 0.0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> Any:
        t = time.perf_counter()
        out = self.inner.embed(texts)
        self.seconds += time.perf_counter() - t
        self.texts += len(texts)
        return out


@contextmanager
def _short_gil_slices(seconds: float = 0.0005) -> Iterator[None]:
    """The interpreter's switch interval (default 5 ms) shortened while the worker runs.

    A tick that needs the GIL while the worker's Python code holds it waits up to one
    interval; 0.5 ms keeps that wait inside the tick's goal.
    """
    before = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@contextmanager
def _torch_on_one_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _async_loop(embedder: Any, agents: int, warmup: int, steps: int,
                paced: bool) -> dict[str, Any]:
    """Run the grid world in async mode; per part walls (measured steps), waits, period."""
    engine = grid_engine(embedder=embedder, embedding_mode="async",
                         embedding_latency_ms=2 * STEP_MS)
    pending = engine._semantic.pending
    assert pending is not None
    times: dict[str, list[float]] = defaultdict(list)
    waits = [0]
    now = [0]

    @contextmanager
    def timer(part: str) -> Iterator[None]:
        if part == "tick" and any(not j.future.done() for j in pending.jobs if j.due <= now[0]):
            waits[0] += 1
        t = time.perf_counter()
        yield
        times[part].append((time.perf_counter() - t) * 1000.0)

    loop = host_loop(engine, GridWorld(agents=agents, seed=42), warmup + steps, budget_ms=B,
                     timer=timer)
    step_texts = 0
    for k in range(warmup):  # the first steps: every text is new; let the worker catch up
        now[0] = (k + 1) * STEP_MS
        before = getattr(embedder, "texts", 0)
        next(loop)
        for job in list(pending.jobs):
            job.future.result()
        step_texts = getattr(embedder, "texts", 0) - before
    model = getattr(embedder, "seconds", 0.0) / max(1, getattr(embedder, "texts", 0))
    texts_before = getattr(embedder, "texts", 0)
    times.clear()
    waits[0] = 0
    # a fixed step: 1 s, or longer if the model needs more for a step's texts (last warm-up)
    period = max(STEP_MS / 1000.0, 1.3 * model * step_texts) if paced else 0.0
    start = time.perf_counter()
    for k in range(warmup, warmup + steps):
        now[0] = (k + 1) * STEP_MS
        next(loop)
        rest = start + (k - warmup + 1) * period - time.perf_counter()
        if rest > 0:
            time.sleep(rest)
    texts = getattr(embedder, "texts", 0) - texts_before
    return {"times": times, "waits": waits[0], "period": period, "s_per_text": model,
            "texts_per_step": texts / steps}


def test_async_host_loop_with_minilm(benchmark, minilm) -> None:
    benchmark.group = "real embedder"
    agents = 50 if SHORT else 200
    warmup, steps = (2, 3) if SHORT else (3, 20)
    out: dict[str, dict[str, Any]] = {}

    def run() -> None:
        with _torch_on_one_thread(), _short_gil_slices():
            out["thread"] = _async_loop(_Timed(minilm), agents, warmup, steps, paced=True)
        with ProcessEmbedder(partial(SentenceTransformerEmbedder, num_threads=1)) as child, \
                _short_gil_slices():
            out["process"] = _async_loop(_Timed(child), agents, warmup, steps, paced=True)
        out["hashing"] = _async_loop(DEFAULT_EMBEDDER, agents, warmup, steps, paced=False)

    benchmark.pedantic(run, rounds=1, iterations=1)
    for where, label in (("thread", ""), ("process", " in a child process")):
        _report_async_loop(out[where], out["hashing"], f"async MiniLM{label}, {agents} agents")
    record(f"async hashing embedder, {agents} agents: tick B=2 wall p99", np.percentile(
        out["hashing"]["times"]["tick"], 99), "ms", spec=None, goal=B + 1.0)


def _report_async_loop(real: dict[str, Any], hashing: dict[str, Any], name: str) -> None:
    tick = np.asarray(real["times"]["tick"])
    ingest = np.asarray(real["times"]["ingest"])
    model_ms_per_step = real["s_per_text"] * real["texts_per_step"] * 1000.0
    record(f"{name}: new texts per step", real["texts_per_step"], "", spec=None, goal=None)
    record(f"{name}: model ms per step (worker)", model_ms_per_step, "ms", spec=None,
           goal=None)
    record(f"{name}: step period (paced)", real["period"] * 1000.0, "ms", spec=None,
           goal=None)
    record(f"{name}: ingest wall p50", np.percentile(ingest, 50), "ms", spec=None, goal=None)
    record(f"{name}: ingest wall max", ingest.max(), "ms", spec=None, goal=None)
    record(f"{name}: ingest p50 / hashing's", np.percentile(ingest, 50)
           / np.percentile(hashing["times"]["ingest"], 50), "", spec=None, goal=None)
    record(f"{name}: tick B=2 wall p50", np.percentile(tick, 50), "ms", spec=None, goal=B)
    record(f"{name}: tick B=2 wall p99", np.percentile(tick, 99), "ms", spec=None,
           goal=B + 1.0)
    record(f"{name}: ticks that waited for the worker", real["waits"], "", spec=None, goal=0)
    assert ingest.max() < model_ms_per_step  # no ingest call embeds its texts itself

