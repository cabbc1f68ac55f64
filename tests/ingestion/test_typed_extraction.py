from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from f09_memory.errors import ErrorCode, InputInvalidError
from f09_memory.ingestion.typed_extraction import (
    DEFAULT_TYPE_LAYERS,
    TYPED_EXTRACTION_MAX_TOKENS,
    TYPED_EXTRACTION_TEMPERATURE,
    TYPED_NAME_SLUG_MAX_LENGTH,
    TypedDiagnosticReason,
    TypedExtractionPrompt,
    TypedExtractionResult,
    TypedMemory,
    TypedMemoryType,
    build_typed_extraction_prompt,
    parse_typed_memories,
    slugify_typed_name,
    typed_memory_filename,
    typed_memory_tags,
)
from f09_memory.schema.enums import MemoryLayer

TODAY = "2024-05-17"


def block(
    name: str = "Prefers dark mode",
    description: str = "The player likes dark UI themes",
    type_: str = "user",
    body: str = "The player asked for dark mode twice.",
) -> str:
    return (
        "```typed_memory\n---\n"
        f"name: {name}\ndescription: {description}\ntype: {type_}\n---\n\n{body}\n```"
    )


# --- prompt -----------------------------------------------------------------


def test_prompt_contains_source_text_date_and_seed_sections() -> None:
    prompt = build_typed_extraction_prompt("Alice leads the guild raid.", today_date=TODAY)

    assert isinstance(prompt, TypedExtractionPrompt)
    assert "Alice leads the guild raid." in prompt.user
    assert f"use {TODAY} as reference" in prompt.user
    for section in ("<SOURCE_TEXT>", "<TYPE_DEFINITIONS>", "<EXCLUSION_RULES>", "<INSTRUCTIONS>"):
        assert section in prompt.user
    assert prompt.user.index("<SOURCE_TEXT>") < prompt.user.index("Alice leads")
    assert "```typed_memory\n---\nname: {short_title}\n" in prompt.user
    assert "{content body}\n```" in prompt.user
    assert prompt.user.endswith("NONE")
    assert "{input_text}" not in prompt.user
    assert "{today_date}" not in prompt.user
    assert prompt.system.startswith("You are a memory classifier.")
    assert "When in doubt, skip it." in prompt.system
    assert "Output ONLY typed_memory fenced blocks, or the word NONE" in prompt.system


def test_prompt_sampling_settings_follow_the_seed() -> None:
    prompt = build_typed_extraction_prompt("x", today_date=TODAY)

    assert (TYPED_EXTRACTION_TEMPERATURE, TYPED_EXTRACTION_MAX_TOKENS) == (0.1, 2048)
    assert (prompt.temperature, prompt.max_tokens) == (0.1, 2048)


def test_prompt_is_deterministic_and_immutable() -> None:
    a = build_typed_extraction_prompt("same", today_date=TODAY)
    b = build_typed_extraction_prompt("same", today_date=TODAY)

    assert a == b
    with pytest.raises(AttributeError):
        a.user = "changed"  # type: ignore[misc]


def test_placeholders_in_source_text_are_not_substituted() -> None:
    prompt = build_typed_extraction_prompt(
        "see {today_date} and {input_text} {0}", today_date=TODAY
    )

    assert "see {today_date} and {input_text} {0}" in prompt.user


def test_redaction_runs_before_the_source_text_enters_the_prompt() -> None:
    seen: list[str] = []

    def fake_redactor(text: str) -> str:
        seen.append(text)
        return text.replace("alice@example.com", "<REDACT:email>")

    prompt = build_typed_extraction_prompt(
        "Contact alice@example.com about the raid.", today_date=TODAY, redact=fake_redactor
    )

    assert seen == ["Contact alice@example.com about the raid."]
    assert "alice@example.com" not in prompt.user
    assert "alice@example.com" not in prompt.system
    assert "Contact <REDACT:email> about the raid." in prompt.user


@pytest.mark.parametrize("bad", ["", "   \n\t "])
def test_empty_source_text_is_rejected_with_guidance(bad: str) -> None:
    with pytest.raises(InputInvalidError) as info:
        build_typed_extraction_prompt(bad, today_date=TODAY)

    assert info.value.code == ErrorCode.MEMORY_INPUT_INVALID
    assert "pass the non-blank log or note text" in info.value.message


def test_non_str_source_text_is_rejected() -> None:
    with pytest.raises(InputInvalidError):
        build_typed_extraction_prompt(b"bytes", today_date=TODAY)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["17/05/2024", "2024-02-30", "20240517", "", 20240517, None])
def test_invalid_today_date_is_rejected(bad: Any) -> None:
    with pytest.raises(InputInvalidError) as info:
        build_typed_extraction_prompt("x", today_date=bad)

    assert "YYYY-MM-DD" in info.value.message


def test_redactor_returning_non_str_or_blank_is_rejected() -> None:
    with pytest.raises(InputInvalidError, match="must return"):
        build_typed_extraction_prompt("x", today_date=TODAY, redact=lambda t: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(InputInvalidError, match="after redaction"):
        build_typed_extraction_prompt("x", today_date=TODAY, redact=lambda t: "")


# --- parsing ----------------------------------------------------------------


def test_parse_one_block() -> None:
    result = parse_typed_memories(block())

    expected = TypedMemory(
        name="Prefers dark mode",
        description="The player likes dark UI themes",
        type=TypedMemoryType.USER,
        body="The player asked for dark mode twice.",
        filename="user_prefers_dark_mode.md",
    )
    assert TypedExtractionResult(memories=(expected,)) == result
    assert result.none is False


def test_parse_several_blocks_in_order() -> None:
    answer = "\n\n".join(
        [
            block(name="Zed", type_="project", body="Launch on 2024-06-01.\nWhy: event."),
            block(name="Always confirm trades", type_="feedback", body="Rule.\nWhy: scams."),
            block(name="Wiki", type_="reference", body="https://wiki.example/guild"),
        ]
    )

    result = parse_typed_memories(answer)

    assert [m.name for m in result.memories] == ["Zed", "Always confirm trades", "Wiki"]
    assert [m.filename for m in result.memories] == [
        "project_zed.md",
        "feedback_always_confirm_trades.md",
        "reference_wiki.md",
    ]
    assert result.memories[0].body == "Launch on 2024-06-01.\nWhy: event."
    assert result.diagnostics == ()


@pytest.mark.parametrize(
    "answer", ["NONE", "  NONE\n", "```\nNONE\n```", "```typed_memory\nNONE\n```"]
)
def test_none_answer_yields_no_memories(answer: str) -> None:
    assert TypedExtractionResult(none=True) == parse_typed_memories(answer)


def test_malformed_yaml_is_reported_and_skipped() -> None:
    bad = "```typed_memory\n---\nname: [unclosed\ndescription: d\ntype: user\n---\nbody\n```"

    result = parse_typed_memories(bad + "\n" + block())

    assert [m.name for m in result.memories] == ["Prefers dark mode"]
    assert len(result.diagnostics) == 1
    assert result.diagnostics[0].index == 0
    assert result.diagnostics[0].reason == TypedDiagnosticReason.YAML_INVALID
    assert result.none is False


def test_yaml_that_raises_value_error_is_reported() -> None:
    result = parse_typed_memories(block(name="2024-02-30"))

    assert result.memories == ()
    assert result.diagnostics[0].reason == TypedDiagnosticReason.YAML_INVALID


def test_missing_field_is_reported() -> None:
    answer = "```typed_memory\n---\nname: n\ntype: user\n---\nbody\n```"

    result = parse_typed_memories(answer)

    assert result.memories == ()
    assert result.diagnostics[0].reason == TypedDiagnosticReason.FIELD_MISSING
    assert "description" in result.diagnostics[0].message


def test_unknown_type_is_reported() -> None:
    result = parse_typed_memories(block(type_="person") + block(name="ok", type_="Project"))

    assert [m.type for m in result.memories] == [TypedMemoryType.PROJECT]
    assert [(d.index, d.reason) for d in result.diagnostics] == [
        (0, TypedDiagnosticReason.TYPE_UNKNOWN)
    ]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("```typed_memory\nname: n\n```", TypedDiagnosticReason.FRONTMATTER_MISSING),
        ("```typed_memory\n---\nname: n\n```", TypedDiagnosticReason.FRONTMATTER_MISSING),
        ("```typed_memory\n---\n- a\n---\nbody\n```", TypedDiagnosticReason.YAML_INVALID),
        (block(name="[a, b]"), TypedDiagnosticReason.FIELD_INVALID),
        (block(name="yes"), TypedDiagnosticReason.FIELD_INVALID),
        (block(body=""), TypedDiagnosticReason.BODY_EMPTY),
        ("```typed_memory\n---\nname: n\n", TypedDiagnosticReason.UNTERMINATED),
        ("Sure! Here you go.", TypedDiagnosticReason.NO_BLOCKS),
        ("", TypedDiagnosticReason.NO_BLOCKS),
    ],
)
def test_malformed_answers_are_diagnosed_never_raised(
    answer: str, reason: TypedDiagnosticReason
) -> None:
    result = parse_typed_memories(answer)

    assert result.memories == ()
    assert [reason] == [d.reason for d in result.diagnostics]
    assert result.none is False


def test_numeric_scalar_name_is_read_as_text() -> None:
    result = parse_typed_memories(block(name="2024"))

    assert result.memories[0].name == "2024"
    assert result.memories[0].filename == "user_2024.md"


def test_text_around_blocks_is_ignored() -> None:
    answer = f"Here are the memories:\n\n{block()}\n\nLet me know if you need more."

    result = parse_typed_memories(answer)

    assert [m.name for m in result.memories] == ["Prefers dark mode"]
    assert result.diagnostics == ()


def test_crlf_line_endings_parse_like_lf() -> None:
    lf = block(body="line one\nline two")

    crlf = parse_typed_memories(lf.replace("\n", "\r\n"))

    assert parse_typed_memories(lf) == crlf
    assert crlf.memories[0].body == "line one\nline two"


def test_block_missing_its_closing_fence_ends_at_next_opener() -> None:
    answer = block(name="First").removesuffix("```") + block(name="Second")

    result = parse_typed_memories(answer)

    assert [m.name for m in result.memories] == ["First", "Second"]


def test_duplicate_filename_keeps_the_first_and_reports() -> None:
    answer = block(name="Dark mode", body="first") + block(name="dark-mode!", body="second")

    result = parse_typed_memories(answer)

    assert [m.body for m in result.memories] == ["first"]
    assert [(d.index, d.reason) for d in result.diagnostics] == [
        (1, TypedDiagnosticReason.DUPLICATE)
    ]


def test_same_name_under_two_types_is_kept_twice() -> None:
    answer = block(name="Raid", type_="project") + block(name="Raid", type_="reference")

    result = parse_typed_memories(answer)

    assert [m.filename for m in result.memories] == ["project_raid.md", "reference_raid.md"]


def test_diagnostics_carry_no_block_content() -> None:
    secret = "hunter2-secret-body"
    result = parse_typed_memories(block(type_="nope", body=secret, name="Secret name x"))

    assert secret not in result.diagnostics[0].message
    assert "Secret name x" not in result.diagnostics[0].message


@pytest.mark.parametrize("bad", [None, 42, b"NONE", ["NONE"]])
def test_non_str_input_raises_input_invalid(bad: Any) -> None:
    with pytest.raises(InputInvalidError) as info:
        parse_typed_memories(bad)

    assert info.value.code == ErrorCode.MEMORY_INPUT_INVALID
    assert info.value.code.value == "MEMORY_INPUT_INVALID"


# --- slugs, filenames, tags, layers -------------------------------------------


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Prefers dark mode", "prefers_dark_mode"),
        ("  Café Crème: 100% -- Good!  ", "cafe_creme_100_good"),
        ("Straße", "strasse"),
        ("ﬁnal   boss", "final_boss"),
        ("C++ / Rust?", "c_rust"),
        ("__already_slugged__", "already_slugged"),
    ],
)
def test_slugify_unicode_and_punctuation(name: str, slug: str) -> None:
    assert slug == slugify_typed_name(name)


def test_slug_is_bounded_and_fallback_is_deterministic() -> None:
    long = slugify_typed_name("word " * 100)
    assert len(long) <= TYPED_NAME_SLUG_MAX_LENGTH
    assert not long.endswith("_")

    only_unicode = slugify_typed_name("日本語のメモ")
    assert only_unicode.startswith("memory_")
    assert only_unicode == slugify_typed_name("日本語のメモ")
    assert only_unicode != slugify_typed_name("別のメモ")


def test_filename_from_parse_uses_slug() -> None:
    result = parse_typed_memories(block(name="Ünïcode & Pünctuation!!", type_="reference"))

    assert result.memories[0].filename == "reference_unicode_punctuation.md"
    assert (
        typed_memory_filename("reference", "Ünïcode & Pünctuation!!")
        == "reference_unicode_punctuation.md"
    )


def test_filename_rejects_unknown_type() -> None:
    with pytest.raises(InputInvalidError):
        typed_memory_filename("person", "x")


def test_tags_name_the_type_and_slug() -> None:
    memory = parse_typed_memories(block()).memories[0]

    assert typed_memory_tags(memory) == ("typed:user", "typed-name:prefers_dark_mode")


def test_default_layers_cover_every_type() -> None:
    assert dict(DEFAULT_TYPE_LAYERS) == {
        TypedMemoryType.USER: MemoryLayer.SEMANTIC,
        TypedMemoryType.FEEDBACK: MemoryLayer.PROCEDURAL,
        TypedMemoryType.PROJECT: MemoryLayer.SEMANTIC,
        TypedMemoryType.REFERENCE: MemoryLayer.SEMANTIC,
    }
    with pytest.raises(TypeError):
        DEFAULT_TYPE_LAYERS[TypedMemoryType.USER] = MemoryLayer.SOCIAL  # type: ignore[index]


def test_result_json_uses_spec_shape() -> None:
    data = parse_typed_memories(block()).to_json_dict()

    assert {"memories", "diagnostics", "none"} == set(data)
    assert data["memories"][0]["type"] == "user"


# --- property ---------------------------------------------------------------

_FRAGMENTS = st.sampled_from(
    [
        "```typed_memory\n",
        "```typed_memory",
        "```",
        "---\n",
        "name: ",
        "description: ",
        "type: user\n",
        "type: feedback\n",
        "NONE",
        "\r\n",
        "\n",
        ": [",
        "{a: ",
        "2024-02-30",
        "&a x\n*a\n",
        "!!python/object:os.system\n",
        "\ufeff",
        "body text\n",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_FRAGMENTS, st.text(max_size=20)), max_size=40).map("".join))
def test_parse_never_raises_on_arbitrary_text(text: str) -> None:
    result = parse_typed_memories(text)

    assert isinstance(result, TypedExtractionResult)
    assert len({m.filename for m in result.memories}) == len(result.memories)
    assert not (result.none and (result.memories or result.diagnostics))


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parse_never_raises_on_random_unicode(text: str) -> None:
    assert isinstance(parse_typed_memories(text), TypedExtractionResult)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_slug_is_always_filename_safe(name: str) -> None:
    slug = slugify_typed_name(name)

    assert slug
    assert len(slug) <= TYPED_NAME_SLUG_MAX_LENGTH
    assert set(slug) <= set("abcdefghijklmnopqrstuvwxyz0123456789_")
