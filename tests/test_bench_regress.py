"""benchmarks/regress.py: the baseline comparison, the chart and the markdown table."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_f09_bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


regress = _module("regress")
targets = _module("targets")


def _run(medians: dict[str, float]) -> dict:
    return {"benchmarks": [{"fullname": f"benchmarks/bench_x.py::{name}",
                            "stats": {"median": value}} for name, value in medians.items()]}


def test_a_benchmark_past_the_ratio_fails_and_unmatched_ones_are_listed(tmp_path, capsys):
    baseline = {"test_a": 0.001, "test_b": 0.002, "test_gone": 0.1}
    (tmp_path / "base.json").write_text(json.dumps(baseline), encoding="utf-8")
    run = tmp_path / "run.json"
    run.write_text(json.dumps(_run({"test_a": 0.0019, "test_b": 0.0041, "test_new": 1.0})),
                   encoding="utf-8")
    assert 1 == regress.main([str(run), "--baseline", str(tmp_path / "base.json")])
    out = capsys.readouterr().out
    assert "test_b: median 4.1 ms is 2.05x the baseline 2 ms (limit 2.0x)" in out
    assert "test_a:" not in out
    assert "new (no baseline): test_new" in out and "not run (in baseline): test_gone" in out
    assert 0 == regress.main([str(run), "--baseline", str(tmp_path / "base.json"),
                              "--max-ratio", "2.1"])


def test_a_slow_phase_of_the_whole_machine_is_divided_out_but_one_regression_is_not(
        tmp_path, capsys):
    baseline = {f"test_{i}": 0.001 for i in range(12)}
    (tmp_path / "base.json").write_text(json.dumps(baseline), encoding="utf-8")
    slow = {name: 0.0018 for name in baseline} | {"test_0": 0.0045}  # all 1.8x, one 4.5x
    run = tmp_path / "run.json"
    run.write_text(json.dumps(_run(slow)), encoding="utf-8")
    argv = [str(run), "--baseline", str(tmp_path / "base.json"), "--max-ratio", "2"]
    assert 1 == regress.main(argv)  # 4.5 / 1.8 = 2.5 > 2: the one regression stands out
    out = capsys.readouterr().out
    assert "machine factor 1.80" in out
    assert "test_0: median 4.5 ms is 4.50x the baseline 1 ms, 2.50x after the machine " \
           "factor (limit 2.0x)" in out and "test_1:" not in out
    three = [str(run), "--baseline", str(tmp_path / "base.json"), "--max-ratio", "3"]
    assert 0 == regress.main(three)  # 2.5x after the factor: within 3x
    assert 1 == regress.main([*three, "--max-factor", "1"])  # off: 4.5x is past 3x
    # the factor is clamped: never below 1 (a fast run is not made stricter), never past the
    # --max-factor, and it needs enough benchmarks to be a median of the machine
    assert regress.machine_factor({f"t{i}": 0.5 for i in range(12)}, 2.0) == 1.0
    assert regress.machine_factor({f"t{i}": 9.0 for i in range(12)}, 2.0) == 2.0
    few = {f"t{i}": 1.8 for i in range(regress.MIN_FOR_FACTOR - 1)}
    assert regress.machine_factor(few, 2.0) == 1.0
    even = {f"t{i}": 1.0 + (i >= 6) for i in range(12)}  # six 1.0s and six 2.0s
    assert regress.machine_factor(even, 3.0) == 1.5
    everything = {name: 0.0070 for name in baseline}  # all 7x: past 2 x 2 whatever the phase
    run.write_text(json.dumps(_run(everything)), encoding="utf-8")
    assert 1 == regress.main(argv)


def test_save_writes_the_run_as_the_baseline(tmp_path):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(_run({"test_a[200]": 0.5})), encoding="utf-8")
    assert 0 == regress.main([str(run), "--save", "--baseline", str(tmp_path / "b.json")])
    assert {"test_a[200]": 0.5} == json.loads((tmp_path / "b.json").read_text())


def test_the_chart_is_a_png_of_latency_against_records(tmp_path):
    pytest.importorskip("matplotlib")
    run = tmp_path / "run.json"
    run.write_text(json.dumps(_run({f"test_retrieve_no_embeddings[{n}]": n * 1e-7
                                    for n in (200, 2_000, 10_000)})), encoding="utf-8")
    (tmp_path / "base.json").write_text("{}", encoding="utf-8")
    assert 0 == regress.main([str(run), "--baseline", str(tmp_path / "base.json"),
                              "--chart", str(tmp_path / "c.png")])
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(_run({"test_other": 1.0})), encoding="utf-8")
    with pytest.raises(SystemExit, match="nothing to chart"):
        regress.main([str(empty), "--chart", str(tmp_path / "d.png")])


def test_the_markdown_table_lists_every_figure_with_its_status(monkeypatch):
    monkeypatch.setattr(targets, "FIGURES", [])
    targets.record("retrieve p50", 0.2, "ms", spec=5.0, goal=0.3)
    targets.record("ingest rate", 100.0, "rec/s", spec=50.0, goal=200.0, higher_is_better=True)
    with pytest.raises(AssertionError, match="misses the spec target"):
        targets.record("too slow", 9.0, "ms", spec=5.0, goal=None)
    table = targets.markdown().splitlines()
    assert "| retrieve p50 | 0.2 ms | 5 ms | 0.3 ms | spec met, goal met |" in table
    assert "| ingest rate | 100 rec/s | 50 rec/s | 200 rec/s | spec met, goal missed |" in table
    assert "| too slow | 9 ms | 5 ms | - | spec missed |" in table
