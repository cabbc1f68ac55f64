"""The determinism checker on the built-in scenario (issue 13's plugin target).

``check_determinism`` of the village, 50 agents x 200 ticks, in 3 processes (PYTHONHASHSEED
0, 1, 2; the last saves and loads its engine mid-run), every tick's state and bundle hashes
compared. Goal: <= 10 s wall on this machine (2 cores); enforced at 60 s in short mode
(a loaded CI machine), the figure reported against the goal.
"""

from __future__ import annotations

import time

from targets import SHORT, record

from f09_memory.determinism.checker import check_determinism


def test_checking_the_village_across_three_processes(benchmark) -> None:
    t0 = time.perf_counter()
    report = benchmark.pedantic(
        lambda: check_determinism(ticks=200, seeds=(42,), processes=3), rounds=1,
        iterations=1)
    wall = time.perf_counter() - t0
    assert report.ok, report.describe()
    record("determinism check: village 50 agents x 200 ticks x 3 processes", wall, "s",
           spec=60.0 if SHORT else None, goal=10.0)
