"""kill -9 of a durable writer at random points: reopening gives the acknowledged state.

Each round forks a writer that runs a seeded stream of calls (ingests, crowd batches,
claims, updates, forgets, a handler that ingests inside a call, ticks, LLM summarization) on
a fresh database and reports each acknowledged call; the parent kills it with SIGKILL at a
seeded point, mid-call more often than not, and reopens the database. The reopened state
must be exactly the state after some call, at or after the last acknowledged one (in
``tick`` commit mode: after some tick, at or after the last acknowledged tick).
"""

from __future__ import annotations

import os
import random
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.determinism.scenario import LIFECYCLE_CONFIG
from f09_memory.ingestion import Claim
from f09_memory.testing import ScriptedLLM

ROUNDS = int(os.environ.get("F09_CRASH_ROUNDS", "16"))  # a soak: F09_CRASH_ROUNDS=500
CALLS = 160
SEC = 1_000


def _config() -> MemoryConfig:
    return MemoryConfig(**{**LIFECYCLE_CONFIG, "summarization_batch_size": 6,
                           "dedup_window_ms": 5 * SEC})


def _calls(engine: MemoryEngine) -> list[tuple[bool, Callable[[], Any]]]:
    """The stream: ``(is_tick, call)`` pairs; the handler is subscribed here."""
    def scribe(event: Any) -> None:
        if event.agent_id == "npc-0" and event.importance >= 0.9:
            engine.ingest("scribe", f"wrote down {event.id}", importance=0.3)

    engine.bus.subscribe("memory:record:created", scribe)
    llm = ScriptedLLM([f"Summary {i} of the square." for i in range(100)])
    out: list[tuple[bool, Callable[[], Any]]] = []
    for i in range(CALLS):
        t = i * SEC
        agent = f"npc-{i % 3}"
        if i % 9 == 8:
            out.append((True, lambda t=t: engine.tick(t, budget_ms=1.0)))
        elif i % 27 == 13:
            out.append((False, lambda t=t: engine.summarize_pending(llm, now=t)))
        elif i % 7 == 3:
            value = str(i % 4)
            out.append((False, lambda a=agent, v=value, t=t: engine.ingest_claim(
                a, f"The well is {v} m deep.", Claim("well", "depth", v), now=t)))
        elif i % 11 == 5:
            out.append((False, lambda i=i, t=t: engine.ingest_batch(
                [{"agent_id": f"crowd-{j % 4}", "content": f"footstep {i} {j}"}
                 for j in range(8)], now=t)))
        elif i % 13 == 6:
            out.append((False, lambda a=agent: engine.update(
                engine.recent(a, 1)[0].id, importance=0.8, tags=["kept"])))
        elif i % 17 == 10:
            out.append((False, lambda a=agent: engine.forget(
                [r.id for r in engine.recent(a, 2)])))
        else:
            flagged = i % 5 == 0
            out.append((False, lambda a=agent, i=i, t=t, f=flagged: engine.ingest(
                a, f"Event {i}: the smith {'shouted' if f else 'worked'} at the forge.",
                importance=0.95 if f else None, flagged=f, now=t)))
    return out


@pytest.fixture(scope="module")
def reference() -> list[tuple[bool, str]]:
    """``(is_tick, state hash)`` after each call of the stream, computed in memory."""
    engine = MemoryEngine(_config(), seed=11)
    hashes = []
    for is_tick, call in _calls(engine):
        call()
        hashes.append((is_tick, engine.state_hash()))
    return hashes


def _writer(db: Path, commit: str, fd: int) -> None:
    """The forked child: run the stream, report each acknowledged call, never return."""
    try:
        engine = MemoryEngine.open(db, _config(), seed=11, commit=commit,  # type: ignore[arg-type]
                                   checkpoint_every=40)
        for i, (_, call) in enumerate(_calls(engine)):
            call()
            os.write(fd, f"{i}\n".encode())
        os.write(fd, b"done\n")
    finally:
        os._exit(0)


def _run_until_killed(db: Path, commit: str, kill_after: int) -> int:
    """Fork a writer, kill it after ``kill_after`` acknowledged calls; the last one seen."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _writer(db, commit, write_end)
    os.close(write_end)
    last = -1
    buffer = b""
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while last < kill_after:
            chunk = pipe.read(64)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line != b"done":
                    last = int(line)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return last


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork to kill a writer mid-call")
def test_kill_9_at_random_points_reopens_at_an_acknowledged_state(
        tmp_path: Path, reference: list[tuple[bool, str]]) -> None:
    rng = random.Random(20261123)
    positions = {h: i for i, (_, h) in enumerate(reference)}
    for round_ in range(ROUNDS):
        commit = "tick" if round_ % 4 == 3 else "call"
        db = tmp_path / f"round-{round_}.db"
        last = _run_until_killed(db, commit, rng.randrange(2, CALLS - 2))
        reopened = MemoryEngine.open(db)
        at = positions.get(reopened.state_hash())
        assert at is not None, f"round {round_}: the reopened state is no call's state"
        if commit == "call":
            assert at >= last, f"round {round_}: acknowledged call {last} lost"
        else:
            last_tick = max([i for i in range(last + 1) if reference[i][0]], default=-1)
            assert reference[at][0] and at >= last_tick, f"round {round_}: not at a tick"
        reopened._check()
        reopened.close()
