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
Benchmarks absent from either side are listed, never failed. ``--chart`` draws the
retrieval latency against the number of records (``test_retrieve_no_embeddings``) as a
PNG (matplotlib, ``pip install matplotlib``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

BASELINE = Path(__file__).with_name("baseline.json")
CHART_BENCH = "test_retrieve_no_embeddings"


def medians(run: dict) -> dict[str, float]:
    """Benchmark full name -> median seconds, from a ``--benchmark-json`` file's contents."""
    return {b["fullname"].split("::", 1)[-1]: float(b["stats"]["median"])
            for b in run["benchmarks"]}


def compare(current: dict[str, float], baseline: dict[str, float], max_ratio: float
            ) -> tuple[list[str], list[str]]:
    """(failures, notes): one line per benchmark past the ratio, and per unmatched name."""
    failures, notes = [], []
    for name in sorted(current):
        if name not in baseline:
            notes.append(f"new (no baseline): {name}")
            continue
        ratio = current[name] / baseline[name] if baseline[name] > 0 else 1.0
        if ratio > max_ratio:
            failures.append(f"{name}: median {current[name] * 1e3:.4g} ms is {ratio:.2f}x the "
                            f"baseline {baseline[name] * 1e3:.4g} ms (limit {max_ratio}x)")
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
    failures, notes = compare(current, baseline, args.max_ratio)
    for line in notes + failures:
        print(line)
    print(f"{len(current)} benchmarks, {len(failures)} past {args.max_ratio}x the baseline")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
