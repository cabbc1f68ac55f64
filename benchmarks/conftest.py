from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import targets


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not targets.FIGURES:
        return
    terminalreporter.section("f09 targets (spec enforced, goal reported)")
    for line in targets.table():
        terminalreporter.write_line(line)
