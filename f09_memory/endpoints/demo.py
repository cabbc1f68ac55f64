"""The demo owner loop: the seeded village simulation, paced, answering HTTP between ticks.

``f09-memory serve --demo`` runs :func:`run_demo` on the engine's owner thread: the village
scenario of ``f09_memory.determinism`` (every layer, redaction markers, summaries through a
scripted LLM, pressure windows, retention) one tick every ``interval_s`` seconds of wall
time, pumping the host's jobs between ticks (and while it waits), so the Memory Viewer shows
memory changing live. Pacing is wall time but never engine state: the ticks, their
``now`` and every hash are those of ``run_village`` with the same seed.

The demo engine stores raw text (``redaction_mode`` OFF: the scenario's e-mail addresses
and card numbers are made up), so the viewer's redaction toggle has something to hide: with
the view mode ON (the default) every response is redacted all the same.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from f09_memory.config.config import MemoryConfig
from f09_memory.determinism.scenario import LIFECYCLE_CONFIG, run_village, scripted_village_llm
from f09_memory.endpoints.host import EngineHost
from f09_memory.engine import MemoryEngine
from f09_memory.errors import InputInvalidError

__all__ = ["DEMO_CONFIG", "DEMO_TICK_MS", "demo_engine", "run_demo"]

DEMO_CONFIG: dict[str, Any] = {**LIFECYCLE_CONFIG, "redaction_mode": False,
                               "redaction_key": "f09-memory demo key (not a secret)"}
"""The demo engine's config: the village's lifecycle settings, raw text stored, keyed
placeholders (a fixed, public key: the demo's secrets are made up)."""
DEMO_TICK_MS = 10_000
"""Logical milliseconds per demo tick (the scale ``LIFECYCLE_CONFIG`` is made for)."""
_FOREVER = 2**40
_MAX_WAIT_S = 0.05


class _Stopped(Exception):
    """Raised from the tick callback to leave ``run_village`` when the demo is stopped."""


def demo_engine(seed: int = 42) -> MemoryEngine:
    """A new engine for the demo (owned by the calling thread)."""
    return MemoryEngine(MemoryConfig(**DEMO_CONFIG), seed=seed)


def run_demo(host: EngineHost, stop: threading.Event, *, agents: int = 12, seed: int = 42,
             interval_s: float = 0.2, ticks: int | None = None) -> int:
    """Run the village on ``host.engine``, on its owner thread, until ``stop`` (or ``ticks``).

    After each tick the host's jobs are pumped, then the loop waits until ``interval_s``
    has passed since the tick began, pumping any job as soon as it arrives.

    Args:
        host: The host of a fresh engine owned by the calling thread (:func:`demo_engine`).
        stop: Set it (from any thread) to end the demo after the current tick.
        agents: Villagers.
        seed: The scenario's seed.
        interval_s: Wall-clock seconds per tick (pacing only).
        ticks: Stop after this many ticks (``None``: run until ``stop``).

    Returns:
        The number of ticks run.

    Raises:
        InputInvalidError: An argument is out of range, or the calling thread does not own
            the engine.
    """
    if isinstance(agents, bool) or not isinstance(agents, int) or not 1 <= agents <= 10_000:
        raise InputInvalidError("agents must be an integer in 1..10000",
                                details={"field": "agents"})
    if isinstance(interval_s, bool) or not isinstance(interval_s, int | float) or not (
            0 <= interval_s <= 60):
        raise InputInvalidError("interval_s must be a number of seconds in 0..60",
                                details={"field": "interval_s"})
    _ = host.engine.now  # the engine's owner check
    done = 0

    def pace(_tick: int) -> None:
        nonlocal done
        done += 1
        deadline = time.monotonic() + interval_s
        while True:
            host.pump()
            if stop.is_set():
                raise _Stopped
            left = deadline - time.monotonic()
            if left <= 0:
                return
            host.wait_for_jobs(min(left, _MAX_WAIT_S))

    with contextlib.suppress(_Stopped):
        run_village(host.engine, agents=agents, ticks=_FOREVER if ticks is None else ticks,
                    seed=seed, tick_ms=DEMO_TICK_MS, on_tick=pace, llm=scripted_village_llm())
    return done
