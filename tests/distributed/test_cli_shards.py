"""``f09-memory simulate --shards N`` prints the single-process run's hashes."""

from __future__ import annotations

from typing import Any

import pytest

from f09_memory.cli import main

pytestmark = pytest.mark.usefixtures("ray_cluster")


def _hashes(capsys: Any, *extra: str) -> dict[str, str]:
    assert 0 == main(["simulate", "--agents", "6", "--ticks", "8", "--seed", "3", "--plain",
                      *extra])
    lines = capsys.readouterr().out.splitlines()
    return dict(line.split("=", 1) for line in lines
                if line.startswith(("stateHash=", "retrievalHash=", "recordsTotal=",
                                    "events.memory:record:created=")))


def test_simulate_on_shards_prints_the_single_process_hashes(capsys: Any) -> None:
    single = _hashes(capsys)
    assert single == _hashes(capsys, "--shards", "2")
    assert 4 == len(single)


def test_simulate_refuses_a_shard_count_below_one(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--shards", "0"])
    assert "positive integer" in capsys.readouterr().err
