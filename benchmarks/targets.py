"""The target checker: each benchmark records its figure beside the spec target and our goal.

A figure past the SPEC target (section 15, generous on a noisy machine) fails its benchmark;
our tighter GOAL is printed beside it, never enforced. The table is printed at the end of
the session (see ``conftest.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

SHORT = os.environ.get("F09_BENCH_SHORT") == "1"


@dataclass(frozen=True)
class Figure:
    name: str
    value: float
    unit: str
    spec: float | None
    goal: float | None
    higher_is_better: bool

    def meets(self, bound: float | None) -> bool | None:
        if bound is None:
            return None
        return self.value >= bound if self.higher_is_better else self.value <= bound


FIGURES: list[Figure] = []


def rounds(full: int, short: int) -> int:
    """Rounds to run: fewer in short (CI) mode."""
    return short if SHORT else full


def timings_ms(benchmark: Any) -> np.ndarray:
    """Per-call timings in ms of a benchmark run with ``pedantic(..., iterations=1)``."""
    return np.asarray(benchmark.stats.stats.data, dtype=np.float64) * 1000.0


def record(
    name: str,
    value: float,
    unit: str,
    *,
    spec: float | None,
    goal: float | None,
    higher_is_better: bool = False,
) -> Figure:
    """Record a figure; assert it meets the spec target (the goal is only reported)."""
    fig = Figure(name, float(value), unit, spec, goal, higher_is_better)
    FIGURES.append(fig)
    assert fig.meets(spec) is not False, (
        f"{name} = {value:.4g} {unit} misses the spec target {spec} {unit}"
    )
    return fig


def table() -> list[str]:
    """The summary lines printed at the end of the session."""
    lines = [f"{'figure':48s} {'measured':>12s} {'spec':>10s} {'goal':>10s}  status"]
    for f in FIGURES:
        goal_ok = f.meets(f.goal)
        status = "spec ok" if f.meets(f.spec) is not False else "SPEC MISSED"
        if goal_ok is not None:
            status += ", goal met" if goal_ok else ", goal missed"
        spec = "-" if f.spec is None else f"{f.spec:g}"
        goal = "-" if f.goal is None else f"{f.goal:g}"
        lines.append(f"{f.name:48s} {f.value:>9.4g} {f.unit:2s} {spec:>10s} {goal:>10s}  {status}")
    return lines


def markdown() -> str:
    """The figures as a markdown table (``F09_BENCH_REPORT``; see ``regress.py``)."""
    rows = ["| figure | measured | spec target | our goal | status |",
            "|---|---|---|---|---|"]
    for f in FIGURES:
        spec_ok, goal_ok = f.meets(f.spec), f.meets(f.goal)
        status = "spec missed" if spec_ok is False else ("spec met" if spec_ok else "-")
        if goal_ok is not None:
            status += ", goal met" if goal_ok else ", goal missed"
        spec = "-" if f.spec is None else f"{f.spec:g} {f.unit}"
        goal = "-" if f.goal is None else f"{f.goal:g} {f.unit}"
        rows.append(f"| {f.name} | {f.value:.4g} {f.unit} | {spec} | {goal} | {status} |")
    mode = "short (CI)" if SHORT else "full"
    return f"Benchmarks in {mode} mode: the spec target is enforced, our goal reported.\n\n" + (
        "\n".join(rows) + "\n")
