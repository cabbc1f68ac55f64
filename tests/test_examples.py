"""The runnable examples run, are deterministic, and show what they claim to show."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "host_loop.py"


def _run() -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True,
                          timeout=120, check=False)


def test_host_loop_runs_deterministically_and_summarizes() -> None:
    first = _run()
    second = _run()

    assert 0 == first.returncode, first.stderr
    assert 0 == second.returncode, second.stderr
    assert first.stdout == second.stdout
    summaries = re.search(r"^summaries completed: (\d+)$", first.stdout, re.MULTILINE)
    assert summaries is not None, first.stdout
    assert int(summaries.group(1)) > 0
    assert re.search(r"^final state hash: [0-9a-f]{64}$", first.stdout, re.MULTILINE)
