"""The built-in scenarios still give their committed golden hashes."""

from __future__ import annotations

import json
from pathlib import Path

from f09_memory.cli import main
from f09_memory.determinism import golden


def test_the_committed_golden_hashes_match_a_fresh_run() -> None:
    mismatches = golden.golden_mismatches()
    assert [] == mismatches, (
        "engine behaviour changed for the same inputs; if that is meant, run "
        "`f09-memory determinism --update-golden` and say why in the commit")


def test_the_golden_file_covers_every_scenario() -> None:
    data = golden.read_golden()
    assert set(golden.GOLDEN_SCENARIOS) == set(data)
    assert all(len(h) == 64 for hashes in data.values() for h in hashes.values())


def test_a_changed_hash_is_reported(tmp_path: Path, monkeypatch, capsys) -> None:
    data = golden.read_golden()
    data["village-lifecycle"]["stateHash"] = "0" * 64
    fake = tmp_path / "golden.json"
    fake.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(golden, "GOLDEN_SCENARIOS",
                        {"village-lifecycle": golden.GOLDEN_SCENARIOS["village-lifecycle"]})
    (line,) = golden.golden_mismatches(fake)
    assert line.startswith("village-lifecycle stateHash: committed 000")
    monkeypatch.setattr(golden, "GOLDEN_PATH", fake)
    assert 1 == main(["determinism", "--golden"])
    assert "differ" in capsys.readouterr().out
