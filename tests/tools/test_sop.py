"""The memory SOP loader (seed 001): shipped default, overrides, clipping, fail-safe."""

from __future__ import annotations

from pathlib import Path

import pytest

from f09_memory.tools import DEFAULT_SOP_MAX_CHARS, SOP_MAX_CHARS_ENV, SOP_PATH_ENV, load_sop

NO_ENV: dict[str, str] = {}


@pytest.fixture
def sop_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_sop.md"
    path.write_text("  # Custom SOP\n\nAlways search first.\n", encoding="utf-8")
    return path


def test_shipped_sop_has_the_seed_sections() -> None:
    text = load_sop(environ=NO_ENV)
    for section in ("## Goal", "## Write policy", "## Search policy", "## Quality rules"):
        assert section in text
    assert "memory_write" in text and "memory_search" in text
    assert 0 < len(text) <= DEFAULT_SOP_MAX_CHARS


def test_path_argument_overrides_everything(sop_file: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.md"
    other.write_text("other", encoding="utf-8")
    env = {SOP_PATH_ENV: str(other)}
    assert load_sop(sop_file, environ=env) == "# Custom SOP\n\nAlways search first."
    assert load_sop(str(sop_file), environ=env) == "# Custom SOP\n\nAlways search first."


def test_env_path_overrides_the_shipped_sop(sop_file: Path) -> None:
    assert load_sop(environ={SOP_PATH_ENV: str(sop_file)}).startswith("# Custom SOP")


def test_blank_env_path_means_the_shipped_sop() -> None:
    assert load_sop(environ={SOP_PATH_ENV: "  "}) == load_sop(environ=NO_ENV)


def test_max_chars_argument_clips(sop_file: Path) -> None:
    assert load_sop(sop_file, max_chars=8, environ=NO_ENV) == "# Custom"
    assert load_sop(sop_file, max_chars=0, environ=NO_ENV) == ""


def test_env_max_chars_clips_and_argument_wins(sop_file: Path) -> None:
    env = {SOP_MAX_CHARS_ENV: " 3 "}
    assert load_sop(sop_file, environ=env) == "# C"
    assert load_sop(sop_file, max_chars=5, environ=env) == "# Cus"
    assert len(load_sop(environ={SOP_MAX_CHARS_ENV: "100"})) == 100


def test_missing_file_gives_empty_string(tmp_path: Path) -> None:
    assert load_sop(tmp_path / "nope.md", environ=NO_ENV) == ""
    assert load_sop(environ={SOP_PATH_ENV: str(tmp_path / "nope.md")}) == ""


def test_unreadable_paths_give_empty_string(tmp_path: Path) -> None:
    assert load_sop(tmp_path, environ=NO_ENV) == ""  # a directory
    binary = tmp_path / "bin.md"
    binary.write_bytes(b"\xff\xfe\xfa")
    assert load_sop(binary, environ=NO_ENV) == ""
    assert load_sop(3, environ=NO_ENV) == ""  # type: ignore[arg-type]


@pytest.mark.parametrize("raw", ["lots", "-5", "1.5", ""])
def test_bad_env_max_chars_falls_back_to_the_default(raw: str, sop_file: Path) -> None:
    full = load_sop(sop_file, environ=NO_ENV)
    assert load_sop(sop_file, environ={SOP_MAX_CHARS_ENV: raw}) == full


@pytest.mark.parametrize("bad", [-1, "10", 2.5, True])
def test_bad_max_chars_argument_falls_back_to_the_default(bad: object, sop_file: Path) -> None:
    full = load_sop(sop_file, environ=NO_ENV)
    assert load_sop(sop_file, max_chars=bad, environ=NO_ENV) == full  # type: ignore[arg-type]


def test_default_budget_is_the_seed_value(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text("x" * (DEFAULT_SOP_MAX_CHARS + 500), encoding="utf-8")
    assert DEFAULT_SOP_MAX_CHARS == 8000
    assert len(load_sop(big, environ=NO_ENV)) == 8000


def test_reads_os_environ_when_no_mapping_given(
    sop_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SOP_PATH_ENV, str(sop_file))
    monkeypatch.setenv(SOP_MAX_CHARS_ENV, "6")
    assert load_sop() == "# Cust"
