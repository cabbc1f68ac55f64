"""examples/chat_host.py runs, is deterministic, and recalls a session-1 decision in session 2."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "chat_host.py"


def _run() -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True,
                          timeout=60, check=False)


def test_chat_host_recalls_session_one_decision_in_session_two() -> None:
    first = _run()
    second = _run()

    assert 0 == first.returncode, first.stderr
    assert 0 == second.returncode, second.stderr
    assert first.stdout == second.stdout
    out = first.stdout
    assert "session-1 decision recalled in session 2: yes" in out
    session_1, _, rest = out.partition("== session 2 ==")
    session_2 = rest.partition("== summary ==")[0]
    decision = "Decision: use Postgres for the billing database."
    assert f"assistant: {decision}" in session_1  # said in session 1
    assert re.search(rf"^\s+- {re.escape(decision)}$", session_2, re.MULTILINE), out  # recalled
    assert "[load] state hash matches: True" in session_2
    assert f"  recalled: {decision}" in out
