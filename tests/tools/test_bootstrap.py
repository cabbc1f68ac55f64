"""New-session bootstrap (seed 001): SOP + newest entries, budgets, env overrides."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from f09_memory import MemoryEngine
from f09_memory.errors import InputInvalidError
from f09_memory.tools import (
    BOOTSTRAP_HEADER,
    BOOTSTRAP_MAX_CHARS_ENV,
    BOOTSTRAP_MAX_ENTRIES_ENV,
    DEFAULT_BOOTSTRAP_MAX_ENTRIES,
    MEMORY_WRITE,
    SOP_PATH_ENV,
    ToolContext,
    bootstrap_entries,
    bootstrap_messages,
    execute_tool,
    load_sop,
)

AGENT = "npc-1"


@pytest.fixture
def sop_file(tmp_path: Path) -> Path:
    path = tmp_path / "sop.md"
    path.write_text("# SOP\nSearch memory first.\n", encoding="utf-8")
    return path


@pytest.fixture
def no_sop(tmp_path: Path) -> dict[str, str]:
    return {SOP_PATH_ENV: str(tmp_path / "missing.md")}


def fill(engine: MemoryEngine, n: int, agent: str = AGENT) -> list[str]:
    ids = []
    for i in range(n):
        payload = execute_tool(engine, MEMORY_WRITE,
                               {"content": f"memory number {i:02d}", "keywords": [f"k{i}"]},
                               ToolContext(agent, now=100 + i))
        ids.append(payload["id"])
    return ids


def entry_lines(messages: list[dict[str, str]]) -> list[str]:
    content = messages[-1]["content"]
    header, *lines = content.split("\n")
    assert BOOTSTRAP_HEADER == header
    return lines


def test_messages_are_sop_then_newest_entries(
    engine: MemoryEngine, sop_file: Path
) -> None:
    fill(engine, 3)
    messages = bootstrap_messages(engine, AGENT, sop_path=sop_file, environ={})
    assert 2 == len(messages)
    assert {"role": "system", "content": "# SOP\nSearch memory first."} == messages[0]
    assert "system" == messages[1]["role"]
    assert ["- memory number 02 [keywords: k2]", "- memory number 01 [keywords: k1]",
            "- memory number 00 [keywords: k0]"] == entry_lines(messages)
    assert messages == json.loads(json.dumps(messages))


def test_default_sop_is_the_shipped_one(engine: MemoryEngine) -> None:
    messages = bootstrap_messages(engine, AGENT, environ={})
    assert [{"role": "system", "content": load_sop(environ={})}] == messages


def test_nothing_to_inject_gives_no_messages(
    engine: MemoryEngine, no_sop: dict[str, str]
) -> None:
    assert [] == bootstrap_messages(engine, AGENT, environ=no_sop)
    fill(engine, 2, agent="npc-2")
    engine.ingest(AGENT, "an ordinary engine record", now=5)
    assert [] == bootstrap_messages(engine, AGENT, environ=no_sop)


def test_default_entry_limit_is_ten(engine: MemoryEngine, no_sop: dict[str, str]) -> None:
    fill(engine, 12)
    lines = entry_lines(bootstrap_messages(engine, AGENT, environ=no_sop))
    assert DEFAULT_BOOTSTRAP_MAX_ENTRIES == len(lines)
    assert lines[0].startswith("- memory number 11")


def test_max_entries_argument_and_env_override(
    engine: MemoryEngine, no_sop: dict[str, str]
) -> None:
    ids = fill(engine, 5)
    env = {**no_sop, BOOTSTRAP_MAX_ENTRIES_ENV: "2"}
    assert [ids[4], ids[3]] == [e.id for e in bootstrap_entries(engine, AGENT, environ=env)]
    assert 2 == len(entry_lines(bootstrap_messages(engine, AGENT, environ=env)))
    assert 4 == len(bootstrap_entries(engine, AGENT, max_entries=4, environ=env))
    assert [] == bootstrap_entries(engine, AGENT, max_entries=0, environ=env)


def test_char_budget_skips_entries_that_do_not_fit(
    engine: MemoryEngine, no_sop: dict[str, str]
) -> None:
    ctx = ToolContext(AGENT, now=1)
    execute_tool(engine, MEMORY_WRITE, {"content": "short one"}, ctx)
    execute_tool(engine, MEMORY_WRITE, {"content": "x" * 100}, ToolContext(AGENT, now=2))
    # "- short one" is 11 characters; the 102-character line does not fit in 50.
    entries = bootstrap_entries(engine, AGENT, max_chars=50, environ=no_sop)
    assert ["short one"] == [e.content for e in entries]
    env = {**no_sop, BOOTSTRAP_MAX_CHARS_ENV: "11"}
    assert ["short one"] == [e.content for e in bootstrap_entries(engine, AGENT, environ=env)]
    env = {**no_sop, BOOTSTRAP_MAX_CHARS_ENV: "10"}
    assert [] == bootstrap_messages(engine, AGENT, environ=env)
    lines = entry_lines(bootstrap_messages(engine, AGENT, max_chars=2400, environ=env))
    assert 2 == len(lines)


@pytest.mark.parametrize("raw", ["ten", "-1", "2.5", "  "])
def test_bad_env_values_fall_back_to_defaults(
    engine: MemoryEngine, no_sop: dict[str, str], raw: str, caplog: pytest.LogCaptureFixture
) -> None:
    fill(engine, 12)
    env = {**no_sop, BOOTSTRAP_MAX_ENTRIES_ENV: raw, BOOTSTRAP_MAX_CHARS_ENV: raw}
    with caplog.at_level(logging.WARNING, logger="f09_memory"):
        entries = bootstrap_entries(engine, AGENT, environ=env)
    assert DEFAULT_BOOTSTRAP_MAX_ENTRIES == len(entries)
    if raw.strip():
        assert "[MEM][BOOTSTRAP]" in caplog.text


@pytest.mark.parametrize(
    "kwargs", [{"max_entries": -1}, {"max_entries": True}, {"max_chars": "100"},
               {"max_chars": 1.5}],
)
def test_bad_arguments_raise_input_invalid(engine: MemoryEngine, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InputInvalidError):
        bootstrap_messages(engine, AGENT, environ={}, **kwargs)


def test_merged_entry_appears_once_with_its_keywords(
    engine: MemoryEngine, no_sop: dict[str, str]
) -> None:
    ctx = ToolContext(AGENT, now=1)
    execute_tool(engine, MEMORY_WRITE, {"content": "likes tea", "keywords": ["tea"]}, ctx)
    execute_tool(engine, MEMORY_WRITE, {"content": "Likes  tea", "keywords": ["drink"]}, ctx)
    assert ["- likes tea [keywords: tea, drink]"] == entry_lines(
        bootstrap_messages(engine, AGENT, environ=no_sop))


def test_ttl_expired_entries_are_skipped_when_now_is_given(
    engine: MemoryEngine, no_sop: dict[str, str]
) -> None:
    engine.ingest(AGENT, "temporary fact", layer="semantic", ttl=10,
                  source_event="tool:memory_write", now=0)
    assert 1 == len(bootstrap_entries(engine, AGENT, environ=no_sop, now=5))
    assert [] == bootstrap_entries(engine, AGENT, environ=no_sop, now=10)


def test_bootstrap_is_deterministic_and_read_only(
    engine: MemoryEngine, sop_file: Path
) -> None:
    fill(engine, 6)
    before = engine.state_hash()
    first = bootstrap_messages(engine, AGENT, sop_path=sop_file, environ={})
    assert first == bootstrap_messages(engine, AGENT, sop_path=sop_file, environ={})
    assert before == engine.state_hash()
