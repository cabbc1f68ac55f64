from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import targets


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not targets.FIGURES:
        return
    terminalreporter.section("f09 targets (spec enforced, goal reported)")
    for line in targets.table():
        terminalreporter.write_line(line)
    report = os.environ.get("F09_BENCH_REPORT")
    if report:  # the markdown table of every target vs measured (regress.py documents it)
        Path(report).write_text(targets.markdown(), encoding="utf-8")
        terminalreporter.write_line(f"markdown table written: {report}")


@pytest.fixture(scope="session")
def minilm() -> Any:
    """The real all-MiniLM-L6-v2 (offline), loaded once; skipped only without
    sentence-transformers."""
    pytest.importorskip("sentence_transformers")
    from f09_memory.embedding import SentenceTransformerEmbedder

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return SentenceTransformerEmbedder()
