"""Benchmarks as regressions: compare a run with the committed baseline, chart, report.

The flow (CI runs it in short mode; see the README's "Benchmarks" section)::

    F09_BENCH_SHORT=1 F09_BENCH_REPORT=targets.md python -m pytest benchmarks \\
        --benchmark-json=bench.json
    python benchmarks/regress.py bench.json                # fails past --max-ratio
    python benchmarks/regress.py bench.json --chart latency.png
    python benchmarks/regress.py bench.json --save         # a new baseline, on purpose

Each benchmark's median is compared with its median in ``baseline.json`` (written by
``--save`` from a short-mode run on the reference machine); a benchmark slower than
``--max-ratio`` times its baseline (default 2.0: shared CI machines are noisy, and the
spec targets themselves are enforced by the benchmarks) fails the run, one line each.

A shared machine also has slow phases that slow every benchmark alike (1.4-2x here), which
is not a regression of any one of them. So the ratios are first divided by the run's
machine factor: the median of every benchmark's ratio (at least ``MIN_FOR_FACTOR`` of
them), clamped to ``[1, --max-factor]`` (default 2.0; 1 turns it off). A change that slows
one part still stands out against the others, the factor never makes the check stricter
than the plain ratio, and past ``--max-ratio`` times ``--max-factor`` a benchmark fails
whatever the phase. Benchmarks absent from either side are listed, never failed.
``--chart`` draws the retrieval latency against the number of records
(``test_retrieve_no_embeddings``) as a PNG (matplotlib, ``pip install matplotlib``).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

BASELINE = Path(__file__).with_name("baseline.json")
CHART_BENCH = "test_retrieve_no_embeddings"
MIN_FOR_FACTOR = 10  # benchmarks in both the run and the baseline before a factor applies


def medians(run: dict) -> dict[str, float]:
    """Benchmark full name -> median seconds, from a ``--benchmark-json`` file's contents."""
    return {b["fullname"].split("::", 1)[-1]: float(b["stats"]["median"])
            for b in run["benchmarks"]}


def ratios(current: dict[str, float], baseline: dict[str, float]) -> dict[str, float]:
    """Benchmark name -> current median over baseline median, for the names in both."""
    return {name: current[name] / baseline[name] if baseline[name] > 0 else 1.0
            for name in current if name in baseline}


def machine_factor(by_name: dict[str, float], max_factor: float) -> float:
    """The run's median ratio clamped to ``[1, max_factor]``; 1.0 for too few benchmarks."""
    if len(by_name) < MIN_FOR_FACTOR:
        return 1.0
    return min(max(statistics.median(by_name.values()), 1.0), max(max_factor, 1.0))


def compare(current: dict[str, float], baseline: dict[str, float], max_ratio: float,
            factor: float = 1.0) -> tuple[list[str], list[str]]:
    """(failures, notes): one line per benchmark whose ratio over ``factor`` is past
    ``max_ratio``, and one per unmatched name."""
    failures, notes = [], []
    by_name = ratios(current, baseline)
    for name in sorted(current):
        if name not in baseline:
            notes.append(f"new (no baseline): {name}")
            continue
        ratio = by_name[name]
        if ratio / factor > max_ratio:
            scaled = f", {ratio / factor:.2f}x after the machine factor" if factor > 1 else ""
            failures.append(f"{name}: median {current[name] * 1e3:.4g} ms is {ratio:.2f}x the "
                            f"baseline {baseline[name] * 1e3:.4g} ms{scaled} "
                            f"(limit {max_ratio}x)")
    notes += [f"not run (in baseline): {name}" for name in sorted(set(baseline) - set(current))]
    return failures, notes


def chart(current: dict[str, float], path: Path) -> None:
    """Retrieval latency (median, ms) against records in the candidate set, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = sorted((int(m.group(1)), value * 1e3) for name, value in current.items()
                    if (m := re.fullmatch(rf"{CHART_BENCH}\[(\d+)\]", name)))
    if not points:
        raise SystemExit(f"no {CHART_BENCH}[size] benchmark in the run: nothing to chart")
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=100)
    ax.plot([p[0] for p in points], [p[1] for p in points], marker="o")
    ax.set_xscale("log")
    ax.set_xlabel("records in the candidate set")
    ax.set_ylabel("retrieve() median, ms")
    ax.set_title("f09-memory: retrieval latency vs records (no embeddings)")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Compare, save or chart; returns the exit code (1: a regression)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a pytest --benchmark-json file")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--max-ratio", type=float, default=2.0)
    parser.add_argument("--max-factor", type=float, default=2.0,
                        help="the most the run's median ratio may scale the limit (1: off)")
    parser.add_argument("--save", action="store_true", help="write the run as the baseline")
    parser.add_argument("--chart", type=Path, default=None, help="write the latency chart")
    args = parser.parse_args(argv)
    current = medians(json.loads(args.run.read_text(encoding="utf-8")))
    if args.chart is not None:
        chart(current, args.chart)
        print(f"chart written: {args.chart}")
    if args.save:
        args.baseline.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n",
                                 encoding="utf-8")
        print(f"baseline written: {args.baseline} ({len(current)} benchmarks)")
        return 0
    baseline = json.loads(args.baseline.read_text(encoding="utf-8"))
    factor = machine_factor(ratios(current, baseline), args.max_factor)
    failures, notes = compare(current, baseline, args.max_ratio, factor)
    for line in notes + failures:
        print(line)
    print(f"machine factor {factor:.2f} (the run's median ratio to the baseline, "
          f"clamped to [1, {max(args.max_factor, 1.0):g}])")
    print(f"{len(current)} benchmarks, {len(failures)} past {args.max_ratio}x the baseline")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
