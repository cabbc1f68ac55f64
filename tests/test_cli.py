from __future__ import annotations

import json
import subprocess
import sys

import pytest

from f09_memory.cli import main


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
    assert float(s["retrievalP95Ms"]) >= float(s["retrievalP50Ms"]) > 0  # type: ignore[arg-type]
    assert s["events"]["memory:retrieval"] == 60  # type: ignore[index]


def test_same_seed_same_hash_different_seed_different_hash(
    capsys: pytest.CaptureFixture[str],
) -> None:
    a = run_json(capsys, "--agents", "3", "--ticks", "10", "--seed", "5")
    b = run_json(capsys, "--agents", "3", "--ticks", "10", "--seed", "5")
    c = run_json(capsys, "--agents", "3", "--ticks", "10", "--seed", "6")
    assert a["stateHash"] == b["stateHash"] != c["stateHash"]


def test_table_output_via_the_console_script_module() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "f09_memory.cli", "simulate", "--agents", "2", "--ticks", "5",
         "--no-progress"], capture_output=True, text=True, check=True)
    assert "state hash" in proc.stdout and "records: episodic" in proc.stdout


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


def test_simulate_on_a_durable_store_survives_the_process(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "village.db")
    first = run_json(capsys, "--agents", "3", "--ticks", "8", "--seed", "2", "--db", db)
    in_memory = run_json(capsys, "--agents", "3", "--ticks", "8", "--seed", "2")
    assert first["stateHash"] == in_memory["stateHash"]
    from f09_memory import MemoryEngine

    assert first["stateHash"] == MemoryEngine.open(db).state_hash()
