from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata

import pytest

from f09_memory.cli import main, plain_lines


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert 0 == main(["simulate", "--json", *args])
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def test_simulate_summary_has_the_promised_fields(capsys: pytest.CaptureFixture[str]) -> None:
    s = run_json(capsys, "--agents", "4", "--ticks", "15", "--seed", "7")
    assert 60 == s["retrievals"]
    assert set(s["records"]) == {  # type: ignore[arg-type]
        "episodic", "semantic", "procedural", "social", "spatial", "system"}
    assert 64 == len(str(s["stateHash"]))
    assert float(s["frameRetrievalP95Ms"]) >= float(s["frameRetrievalP50Ms"]) > 0  # type: ignore[arg-type]
    assert s["events"]["memory:retrieval"] == 60  # type: ignore[index]


def test_same_seed_same_hash_different_seed_different_hash(
    capsys: pytest.CaptureFixture[str],
) -> None:
    a = run_json(capsys, "--agents", "3", "--ticks", "10", "--seed", "5")
    b = run_json(capsys, "--agents", "3", "--ticks", "10", "--seed", "5")
    c = run_json(capsys, "--agents", "3", "--ticks", "10", "--seed", "6")
    assert a["stateHash"] == b["stateHash"] != c["stateHash"]


def test_a_run_sets_the_collector_back_as_it_found_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``simulate`` freezes start-up objects and collects young objects less often while it
    runs; an in-process caller (a test, a notebook) gets its collector back unchanged."""
    import gc

    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    a = run_json(capsys, "--agents", "3", "--ticks", "10", "--seed", "5")
    assert (gc.get_threshold(), gc.get_freeze_count()) == (threshold, frozen)
    b = run_json(capsys, "--agents", "3", "--ticks", "10", "--seed", "5")
    assert (a["stateHash"], a["retrievalHash"]) == (b["stateHash"], b["retrievalHash"])


def test_table_output_via_the_console_script_module() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "f09_memory.cli", "simulate", "--agents", "2", "--ticks", "5",
         "--no-progress"], capture_output=True, text=True, check=True)
    assert "state hash" in proc.stdout and "records: episodic" in proc.stdout


def test_machine_output_starts_without_rich() -> None:
    """``--plain`` and ``--json`` print no table and no bar: rich is never imported (a
    lighter start of the main job); the table output still imports it."""
    code = ("import sys; from f09_memory.cli import main; "
            "main(['simulate', '--agents', '2', '--ticks', '3', '{flag}']); "
            "print('rich' in sys.modules, file=sys.stderr)")
    for flag, imported in (("--plain", "False"), ("--json", "False"),
                           ("--no-progress", "True")):
        proc = subprocess.run([sys.executable, "-c", code.format(flag=flag)],
                              capture_output=True, text=True, check=True)
        assert proc.stderr.strip().splitlines()[-1] == imported, flag


def test_the_progress_bar_counts_every_tick() -> None:
    from rich.console import Console

    from f09_memory.cli import _progress

    console = Console(record=True, force_terminal=True, width=100)
    with _progress(console, 4, disabled=False) as advance:
        for tick in range(4):
            advance(tick)
        console.print("done")
    assert "4/4" in console.export_text()
    with _progress(console, 4, disabled=True) as advance:  # --no-progress: nothing shown
        advance(0)
    with _progress(None, 4, disabled=False) as advance:  # machine output: no console
        advance(0)


def test_bad_arguments_exit_nonzero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--agents", "0"])
    assert 2 == info.value.code
    assert "positive integer" in capsys.readouterr().err


def test_bad_env_config_is_reported_not_raised(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_EPISODIC_MAX", "-3")
    assert 2 == main(["simulate", "--from-env", "--ticks", "1", "--no-progress"])
    assert "MEMORY_CONFIG_INVALID" in capsys.readouterr().err


def test_the_console_script_exits_with_the_command_code_and_freezes_what_is_left(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``console`` (the ``f09-memory`` script) exits with ``main``'s code, having frozen
    the process's objects (its end then skips a last walk over them)."""
    import gc

    from f09_memory.cli import console

    monkeypatch.setenv("MEMORY_EPISODIC_MAX", "-3")
    monkeypatch.setattr(sys, "argv", ["f09-memory", "simulate", "--from-env", "--ticks", "1"])
    frozen = gc.get_freeze_count()
    try:
        with pytest.raises(SystemExit) as info:
            console()
        assert 2 == info.value.code and gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()  # this test process goes on
    assert "MEMORY_CONFIG_INVALID" in capsys.readouterr().err
    proc = subprocess.run(
        [sys.executable, "-m", "f09_memory.cli", "simulate", "--agents", "0"],
        capture_output=True, text=True, check=False)
    assert 2 == proc.returncode and "positive integer" in proc.stderr


def test_simulate_on_a_durable_store_survives_the_process(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "village.db")
    first = run_json(capsys, "--agents", "3", "--ticks", "8", "--seed", "2", "--db", db)
    in_memory = run_json(capsys, "--agents", "3", "--ticks", "8", "--seed", "2")
    assert first["stateHash"] == in_memory["stateHash"]
    from f09_memory import MemoryEngine

    assert first["stateHash"] == MemoryEngine.open(db).state_hash()


HEX64 = re.compile(r"\b[0-9a-f]{64}\b")


def test_version_prints_the_distribution_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert 0 == info.value.code
    assert f"f09-memory {metadata.version('f09-memory')}\n" == capsys.readouterr().out


def test_plain_prints_one_key_value_line_per_metric(capsys: pytest.CaptureFixture[str]) -> None:
    s = run_json(capsys, "--agents", "3", "--ticks", "6", "--seed", "4")
    assert 0 == main(["simulate", "--plain", "--agents", "3", "--ticks", "6", "--seed", "4"])
    lines = capsys.readouterr().out.splitlines()
    plain = dict(line.split("=", 1) for line in lines)
    assert len(lines) == len(plain)  # one line per key, every line key=value
    assert str(s["stateHash"]) == plain["stateHash"] and 64 == len(plain["stateHash"])
    assert str(s["retrievalHash"]) == plain["retrievalHash"]
    records = s["records"]
    events = s["events"]
    assert isinstance(records, dict) and isinstance(events, dict)
    assert {f"records.{k}": str(v) for k, v in records.items()} == {
        k: v for k, v in plain.items() if k.startswith("records.")}
    assert {f"events.{k}": str(v) for k, v in events.items()} == {
        k: v for k, v in plain.items() if k.startswith("events.")}
    assert str(s["retrievals"]) == plain["retrievals"]


def test_plain_and_json_cannot_be_combined(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--plain", "--json"])
    assert 2 == info.value.code
    assert "not allowed with" in capsys.readouterr().err


def test_plain_lines_flatten_nested_counts() -> None:
    summary: dict[str, object] = {"agents": 2, "records": {"episodic": 3}, "events": {"a:b": 1},
                                  "stateHash": "f" * 64}
    assert ["agents=2", "records.episodic=3", "events.a:b=1", f"stateHash={'f' * 64}"] == (
        plain_lines(summary))


def test_piped_table_keeps_each_hash_whole_on_its_line() -> None:
    env = dict(os.environ, COLUMNS="60")  # even a narrow declared width must not fold hashes
    proc = subprocess.run(
        [sys.executable, "-m", "f09_memory.cli", "simulate", "--agents", "2", "--ticks", "5",
         "--no-progress"], capture_output=True, text=True, check=True, env=env)
    for label in ("state hash", "retrieval hash"):
        lines = [line for line in proc.stdout.splitlines() if label in line]
        assert 1 == len(lines), proc.stdout
        assert HEX64.search(lines[0]), lines[0]


def test_table_to_a_captured_stdout_does_not_fold_hashes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert 0 == main(["simulate", "--agents", "2", "--ticks", "4", "--no-progress"])
    out = capsys.readouterr().out
    state = [line for line in out.splitlines() if "state hash" in line]
    assert 1 == len(state) and HEX64.search(state[0])
    assert 2 == len(HEX64.findall(out))
