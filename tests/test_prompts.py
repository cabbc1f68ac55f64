"""Checks of the F09 sub-prompts (spec sections 17, 18, 25) and of INDEX.md.

Every ``prompts/<n>-<name>/PROMPT_<NAME>.md`` must follow the section 18 template (each
heading once, in order, none empty; Constraints, Inputs and Non-goals as bullets), stay within
220 lines, carry a negative validation bullet, and name only files and symbols that exist:
each ``- File: f09_memory/<path>.py \u2014 Exports: A, B`` line is imported and checked.
INDEX.md must list all 20 index entries (and the extensions past them, :data:`EXTENSIONS`),
the trigger phrase, and exactly the prompts present; each entry is built (with its prompt
and an existing sub-package) or ``planned`` (section 25).
Prompts still being written are not required: the checks cover the ones present.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROMPTS = ROOT / "prompts"
INDEX = ROOT / "INDEX.md"
TRIGGER = "GENERATE_F09_SUB_PROMPTS_v1"
FEATURE = "Feature: F09-MEMORY-SYSTEM"
MAX_LINES = 220
EM_DASH = "\u2014"

SPEC_INDEX: dict[int, str] = {
    1: "schema-types",
    2: "config-validation",
    3: "ingestion-pipeline",
    4: "importance-scoring",
    5: "decay-engine",
    6: "embedding-adapter",
    7: "vector-index-baseline",
    8: "retrieval-orchestrator",
    9: "context-packer",
    10: "summarization-pipeline",
    11: "compression-strategies",
    12: "redaction-filter",
    13: "retention-compaction",
    14: "procedural-pattern-miner",
    15: "social-layer-handler",
    16: "spatial-layer-adapter",
    17: "introspection-api",
    18: "ui-integration-endpoints",
    19: "test-harness-determinism",
    20: "observability-metrics",
}
"""Spec section 17: index number -> folder name (without the number)."""
EXTENSIONS: dict[int, str] = {
    21: "distributed-scale-out",
    22: "host-integrations",
    23: "agent-runtime",
    24: "tool-call-memory",
    25: "columnar-state-persistence",
}
"""Entries past the spec's twenty (sub-packages the spec does not list), same template."""
ALL_INDEX: dict[int, str] = {**SPEC_INDEX, **EXTENSIONS}

SECTIONS = (
    "Sub-Task:",
    "Context:",
    "Objective:",
    "Constraints:",
    "Inputs / References:",
    "Output:",
    "Validation:",
    "Non-goals:",
)
FILE_LINE = re.compile(
    rf"^- File: (?P<path>f09_memory/[\w/]+\.py) {EM_DASH} Exports: (?P<symbols>.+)$"
)
FOLDER = re.compile(r"^(?P<num>\d+)-(?P<name>[a-z0-9-]+)$")
TEST_PATH = re.compile(r"\btests/[\w/]+\.py\b")


def expected_filename(name: str) -> str:
    """``schema-types`` -> ``PROMPT_SCHEMA_TYPES.md``."""
    return f"PROMPT_{name.upper().replace('-', '_')}.md"


def prompt_files() -> list[Path]:
    return sorted(PROMPTS.glob("*/PROMPT_*.md"))


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def section_lines(name: str, lines: list[str], heading: str) -> list[str]:
    """The lines after ``heading`` up to the next template heading."""
    starts = [i for i, line in enumerate(lines) if line.startswith(heading)]
    assert starts, f"{name}: section {heading!r} is missing"
    start = starts[0]
    out: list[str] = []
    for line in lines[start + 1 :]:
        if any(line.startswith(h) for h in SECTIONS):
            break
        out.append(line)
    return out


PROMPT_PARAMS = [pytest.param(p, id=p.parent.name) for p in prompt_files()]


def test_prompts_exist() -> None:
    assert PROMPT_PARAMS, f"no prompts/*/PROMPT_*.md found under {PROMPTS}"


@pytest.mark.parametrize("path", PROMPT_PARAMS)
def test_prompt_template(path: Path) -> None:
    name = rel(path)
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines and lines[0].strip() == FEATURE, f"{name}: first line must be {FEATURE!r}"
    assert len(lines) <= MAX_LINES, f"{name}: {len(lines)} lines, the limit is {MAX_LINES}"
    positions = []
    for heading in SECTIONS:
        found = [i for i, line in enumerate(lines) if line.startswith(heading)]
        assert len(found) == 1, f"{name}: section {heading!r} appears {len(found)} times, not 1"
        positions.append(found[0])
    assert positions == sorted(positions), (
        f"{name}: sections out of order; expected {', '.join(SECTIONS)}"
    )
    subtask = lines[positions[0]].removeprefix("Sub-Task:").strip()
    assert subtask, f"{name}: 'Sub-Task:' has no name"


@pytest.mark.parametrize("path", PROMPT_PARAMS)
def test_prompt_folder_matches_spec_index(path: Path) -> None:
    name = rel(path)
    match = FOLDER.match(path.parent.name)
    assert match, f"{name}: folder must be '<n>-<name>'"
    num = int(match["num"])
    assert num in ALL_INDEX, (
        f"{name}: number {num} is neither in spec section 17 (1..20) nor an extension")
    assert match["name"] == ALL_INDEX[num], (
        f"{name}: folder for #{num} must be '{num}-{ALL_INDEX[num]}'"
    )
    assert path.name == expected_filename(ALL_INDEX[num]), (
        f"{name}: file must be named {expected_filename(ALL_INDEX[num])}"
    )


def test_prompt_numbers_unique() -> None:
    seen: dict[int, str] = {}
    for path in prompt_files():
        match = FOLDER.match(path.parent.name)
        if match is None:
            continue  # reported by test_prompt_folder_matches_spec_index
        num = int(match["num"])
        assert num not in seen, f"{rel(path)}: number {num} already used by {seen[num]}"
        seen[num] = rel(path)


@pytest.mark.parametrize("path", PROMPT_PARAMS)
def test_prompt_validation_bullets(path: Path) -> None:
    name = rel(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    bullets = [line for line in section_lines(name, lines, "Validation:") if line.startswith("- ")]
    assert 3 <= len(bullets) <= 7, f"{name}: {len(bullets)} Validation bullets, need 3 to 7"
    assert any(b.startswith("- Negative:") for b in bullets), (
        f"{name}: no Validation bullet starts with '- Negative:'"
    )


BULLETED_SECTIONS = ("Constraints:", "Inputs / References:", "Non-goals:")
"""Sections the section 18 template fills with bullets."""


@pytest.mark.parametrize("path", PROMPT_PARAMS)
def test_prompt_sections_have_content(path: Path) -> None:
    name = rel(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    for heading in ("Context:", "Objective:"):
        inline = next(line for line in lines if line.startswith(heading))
        body = [inline.removeprefix(heading), *section_lines(name, lines, heading)]
        assert any(line.strip() for line in body), f"{name}: section {heading!r} is empty"
    for heading in BULLETED_SECTIONS:
        bullets = [line for line in section_lines(name, lines, heading) if line.startswith("- ")]
        assert bullets, f"{name}: section {heading!r} has no '- ' bullet"


def test_section_check_catches_an_empty_section() -> None:
    lines = ["Constraints:", "", "Inputs / References:", "- MemoryConfig"]
    assert not [line for line in section_lines("x", lines, "Constraints:") if line.strip()]
    with pytest.raises(AssertionError, match="Non-goals"):
        section_lines("x", lines, "Non-goals:")


@pytest.mark.parametrize("path", PROMPT_PARAMS)
def test_prompt_outputs_exist(path: Path) -> None:
    name = rel(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    bullets = [line for line in section_lines(name, lines, "Output:") if line.startswith("- ")]
    assert bullets, f"{name}: 'Output:' lists no '- File: ... {EM_DASH} Exports: ...' line"
    for line in bullets:
        match = FILE_LINE.match(line)
        assert match, (
            f"{name}: Output line {line!r} is not "
            f"'- File: f09_memory/<path>.py {EM_DASH} Exports: A, B'"
        )
        file_path = ROOT / match["path"]
        assert file_path.is_file(), f"{name}: Output names {match['path']}, which does not exist"
        module_name = match["path"].removesuffix(".py").removesuffix("/__init__")
        module = importlib.import_module(module_name.replace("/", "."))
        symbols = [s.strip() for s in match["symbols"].split(",")]
        assert all(symbols), f"{name}: empty symbol in Exports of {match['path']}"
        missing = [s for s in symbols if not hasattr(module, s)]
        assert not missing, f"{name}: {match['path']} has no attribute(s) {missing}"


@pytest.mark.parametrize("path", PROMPT_PARAMS)
def test_prompt_test_references_exist(path: Path) -> None:
    name = rel(path)
    for ref in TEST_PATH.findall(path.read_text(encoding="utf-8")):
        assert (ROOT / ref).is_file(), f"{name}: names test file {ref}, which does not exist"


# --------------------------------------------------------------------------- INDEX.md


def index_rows() -> dict[int, list[str]]:
    """Table rows of INDEX.md whose first cell is an index number, as lists of cells."""
    rows: dict[int, list[str]] = {}
    for line in INDEX.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].isdigit():
            num = int(cells[0])
            assert num not in rows, f"INDEX.md: row #{num} appears twice"
            rows[num] = cells
    return rows


def test_index_exists_with_trigger() -> None:
    assert INDEX.is_file(), "INDEX.md is missing at the repository top"
    assert TRIGGER in INDEX.read_text(encoding="utf-8"), f"INDEX.md lacks the phrase {TRIGGER}"


def test_index_has_twenty_rows_and_the_extensions() -> None:
    rows = index_rows()
    assert sorted(rows) == sorted(ALL_INDEX), (
        f"INDEX.md: numbered rows are {sorted(rows)}, expected exactly 1..20 and the "
        f"extensions {sorted(EXTENSIONS)}"
    )


def test_index_prompt_paths_match_prompts() -> None:
    listed: dict[str, int] = {}
    for num, cells in index_rows().items():
        assert len(cells) >= 2, f"INDEX.md: row #{num} has no Sub-prompt column"
        cell = cells[1].strip("`")
        if cell in {"\u2014", "-", ""}:
            continue
        assert (ROOT / cell).is_file(), f"INDEX.md: row #{num} lists {cell}, which does not exist"
        expected = f"prompts/{num}-{ALL_INDEX[num]}/{expected_filename(ALL_INDEX[num])}"
        assert cell == expected, f"INDEX.md: row #{num} lists {cell}, expected {expected}"
        listed[cell] = num
    for path in prompt_files():
        assert rel(path) in listed, f"{rel(path)} exists but INDEX.md does not list it"


def test_index_test_references_exist() -> None:
    for ref in TEST_PATH.findall(INDEX.read_text(encoding="utf-8")):
        assert (ROOT / ref).is_file(), f"INDEX.md names test file {ref}, which does not exist"


STATUS_BUILT = ("built", "partial")
"""Statuses of an entry whose sub-package exists (``partial``: some parts planned)."""


def status_problems(rows: dict[int, list[str]], prompts: set[str]) -> list[str]:
    """What breaks spec section 25 in INDEX rows: each entry built with its prompt, or planned."""
    problems = []
    planned = 0
    for num, cells in sorted(rows.items()):
        if len(cells) < 7:
            problems.append(f"row #{num} lacks the Status column")
            continue
        prompt, package, status = cells[1].strip("`"), cells[2], cells[-1]
        if prompt in prompts:
            if not status.startswith(STATUS_BUILT):
                problems.append(f"row #{num} has a prompt, so its status must be built, "
                                f"not {status!r}")
            match = re.search(r"`(f09_memory/[\w/]+)`", package)
            if not (match and (ROOT / match[1]).exists()):
                problems.append(f"row #{num} is built but its sub-package {package!r} "
                                "does not exist")
        elif status == "planned":
            planned += num in SPEC_INDEX
        else:
            problems.append(f"row #{num} has no prompt, so its status must be 'planned', "
                            f"not {status!r}")
    spec_prompts = [p for p in prompts if int(p.split("/")[1].split("-")[0]) in SPEC_INDEX]
    if len(spec_prompts) + planned != len(SPEC_INDEX):
        problems.append(f"{len(spec_prompts)} prompts + {planned} planned entries != "
                        f"{len(SPEC_INDEX)} (spec section 17)")
    return problems


def test_index_rows_are_built_with_a_prompt_or_planned() -> None:
    assert [] == status_problems(index_rows(), {rel(path) for path in prompt_files()})


def test_status_check_catches_a_planned_row_with_a_prompt_and_a_built_row_without() -> None:
    prompt = "prompts/17-introspection-api/PROMPT_INTROSPECTION_API.md"
    rows = {
        17: ["17", f"`{prompt}`", "`f09_memory/schema/`", "", "", "", "planned"],
        18: ["18", "\u2014", "`f09_memory/endpoints/`", "", "", "", "built"],
        20: ["20", "\u2014", "`f09_memory/observability/`", "", "", "", "planned"],
    }
    problems = status_problems(rows, {prompt})
    assert any("#17" in p and "must be built" in p for p in problems)
    assert any("#18" in p and "'planned'" in p for p in problems)
    assert any("!= 20" in p for p in problems)
    assert not any("#20" in p for p in problems)
