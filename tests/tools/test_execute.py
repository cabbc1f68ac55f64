"""The tool executor (seed 001): payloads, errors, dedupe, context metadata, redaction."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.errors import ErrorCode, InputInvalidError
from f09_memory.schema.enums import MemoryLayer
from f09_memory.schema.records import MemoryRecord
from f09_memory.tools import (
    DEFAULT_TOOL_AGENT_ID,
    MEMORY_SEARCH,
    MEMORY_WRITE,
    TOOL_INTERNAL_ERROR,
    TOOL_MEMORY_LAYER,
    TOOL_SOURCE_EVENT,
    ToolContext,
    execute_tool,
    execute_tool_json,
    memory_entries,
)

CTX = ToolContext("npc-1", session_id="s-1", trace_id="t-9", step_index=3, now=1_000)
INVALID = ErrorCode.MEMORY_INPUT_INVALID.value


def write(engine: MemoryEngine, content: str, keywords: Sequence[str] = (),
          ctx: ToolContext = CTX) -> dict[str, Any]:
    return execute_tool(engine, MEMORY_WRITE, {"content": content, "keywords": list(keywords)},
                        ctx)


def search(engine: MemoryEngine, query: str, limit: int | None = None,
           ctx: ToolContext = CTX) -> dict[str, Any]:
    args: dict[str, Any] = {"query": query}
    if limit is not None:
        args["limit"] = limit
    return execute_tool(engine, MEMORY_SEARCH, args, ctx)


def assert_error(payload: dict[str, Any], code: str) -> None:
    assert {"ok", "error"} == set(payload)
    assert payload["ok"] is False
    assert code == payload["error"]["code"]
    assert isinstance(payload["error"]["message"], str) and payload["error"]["message"]
    json.dumps(payload)


# ---------------------------------------------------------------- bad calls store nothing
@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        (MEMORY_WRITE, {}),
        (MEMORY_WRITE, {"content": "   "}),
        (MEMORY_WRITE, {"content": 42}),
        (MEMORY_WRITE, {"content": "fact", "keywords": "blue"}),
        (MEMORY_WRITE, {"content": "fact", "keywords": [1]}),
        (MEMORY_WRITE, {"content": "fact", "extra": True}),
        (MEMORY_WRITE, '{"content": '),
        (MEMORY_WRITE, "[1, 2]"),
        (MEMORY_WRITE, {"content": "x" * 70_000}),
        (MEMORY_SEARCH, {}),
        (MEMORY_SEARCH, {"query": 7}),
        (MEMORY_SEARCH, {"query": "blue", "limit": 0}),
        (MEMORY_SEARCH, {"query": "blue", "limit": 21}),
        (MEMORY_SEARCH, {"query": "blue", "limit": True}),
        (MEMORY_SEARCH, {"query": "blue", "limit": "3"}),
        ("memory_delete", {"content": "fact"}),
        ("", None),
    ],
)
def test_bad_call_returns_input_invalid_and_stores_nothing(
    engine: MemoryEngine, name: str, arguments: Any
) -> None:
    write(engine, "seed memory")
    before = (engine.count(), engine.state_hash())
    assert_error(execute_tool(engine, name, arguments, CTX), INVALID)
    assert before == (engine.count(), engine.state_hash())


def test_bad_context_returns_input_invalid(engine: MemoryEngine) -> None:
    bad: Any = {"agent_id": "npc-1"}
    assert_error(execute_tool(engine, MEMORY_WRITE, {"content": "x"}, bad), INVALID)
    assert 0 == engine.count()


@pytest.mark.parametrize(
    "kwargs",
    [{"agent_id": ""}, {"agent_id": "a", "step_index": -1}, {"agent_id": "a", "now": "5"},
     {"agent_id": "a", "session_id": 3}, {"agent_id": "a", "step_index": True}],
)
def test_tool_context_rejects_malformed_fields(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InputInvalidError):
        ToolContext(**kwargs)


def test_capacity_error_keeps_its_taxonomy_code(
    make_engine: Callable[..., MemoryEngine]
) -> None:
    engine = make_engine(max_records_per_agent=1)
    assert write(engine, "first fact")["ok"] is True
    assert_error(write(engine, "second fact"), ErrorCode.MEMORY_CAPACITY_EXCEEDED.value)
    assert 1 == engine.count()


def test_unexpected_exception_becomes_a_safe_internal_error() -> None:
    class Broken(MemoryEngine):
        def records(self, agent_id: str, layer: MemoryLayer | str | None = None
                    ) -> list[MemoryRecord]:
            raise RuntimeError("secret bob@example.com")

    payload = write(Broken(), "fact")
    assert_error(payload, TOOL_INTERNAL_ERROR)
    assert "bob@example.com" not in json.dumps(payload)


# ---------------------------------------------------------------- write / search
def test_write_returns_the_seed_payload_and_stores_one_semantic_record(
    engine: MemoryEngine,
) -> None:
    payload = write(engine, "  user favorite color is blue ", ["Favorite", " color ", "blue"])
    assert {"ok": True, "id": "npc-1:0000000000", "content": "user favorite color is blue",
            "keywords": ["favorite", "color", "blue"]} == payload
    record = engine.get(payload["id"])
    assert TOOL_MEMORY_LAYER == record.layer
    assert TOOL_SOURCE_EVENT == record.metadata.source_event
    assert ("kw:favorite", "kw:color", "kw:blue") == record.metadata.tags
    assert 1 == engine.count("npc-1")


def test_write_then_search_round_trip(engine: MemoryEngine) -> None:
    blue = write(engine, "user favorite color is blue", ["favorite", "color", "blue"])
    write(engine, "user lives in Lisbon", ["city"])
    payload = search(engine, "favorite color blue", limit=3)
    assert {"ok", "total", "items"} == set(payload)
    assert 1 == payload["total"]
    (item,) = payload["items"]
    assert {"id": blue["id"], "content": "user favorite color is blue",
            "keywords": ["favorite", "color", "blue"], "updated_at": 1_000, "score": 9} == item


def test_search_without_matches_is_empty_not_an_error(engine: MemoryEngine) -> None:
    assert {"ok": True, "total": 0, "items": []} == search(engine, "anything")
    write(engine, "user likes tea")
    assert {"ok": True, "total": 0, "items": []} == search(engine, "coffee")


def test_keyword_match_ranks_above_content_only_match(engine: MemoryEngine) -> None:
    content_only = write(engine, "the garden gate is green")
    keyword = write(engine, "the shed is locked at night", ["garden"])
    ids = [item["id"] for item in search(engine, "garden")["items"]]
    assert [keyword["id"], content_only["id"]] == ids


def test_more_overlap_ranks_first_and_limit_applies(engine: MemoryEngine) -> None:
    one = write(engine, "alpha note")
    two = write(engine, "alpha beta note")
    three = write(engine, "alpha beta gamma note")
    payload = search(engine, "alpha beta gamma", limit=2)
    assert [three["id"], two["id"]] == [item["id"] for item in payload["items"]]
    assert 2 == payload["total"]
    assert one["id"] not in json.dumps(payload)


def test_search_only_sees_the_callers_agent_and_tool_entries(engine: MemoryEngine) -> None:
    write(engine, "blue door", ctx=ToolContext("npc-2"))
    engine.ingest("npc-1", "blue door seen in town", now=10)
    assert 0 == search(engine, "blue")["total"]
    assert 1 == search(engine, "blue", ctx=ToolContext("npc-2"))["total"]


def test_no_context_uses_the_default_agent(engine: MemoryEngine) -> None:
    payload = execute_tool(engine, MEMORY_WRITE, '{"content": "fact one"}')
    assert payload["ok"] is True
    assert [DEFAULT_TOOL_AGENT_ID] == engine.agents()
    assert 1 == execute_tool(engine, MEMORY_SEARCH, {"query": "fact"})["total"]


def test_search_is_read_only(engine: MemoryEngine) -> None:
    write(engine, "user favorite color is blue", ["blue"])
    before = engine.state_hash()
    search(engine, "blue")
    assert before == engine.state_hash()


# ---------------------------------------------------------------- dedupe
def test_duplicate_write_returns_existing_id_and_stores_nothing(engine: MemoryEngine) -> None:
    first = write(engine, "User favorite color is blue", ["blue"])
    again = write(engine, "  user   FAVORITE color is blue", ["Blue"])
    assert first == again
    assert 1 == engine.count()


def test_duplicate_with_new_keywords_merges_them_for_later_searches(
    engine: MemoryEngine,
) -> None:
    first = write(engine, "user favorite color is blue", ["blue"])
    later = ToolContext("npc-1", session_id="s-2", now=2_000)
    merged = write(engine, "user favorite color is blue", ["colour", "blue"], ctx=later)
    assert {"ok": True, "id": first["id"], "content": "user favorite color is blue",
            "keywords": ["blue", "colour"]} == merged
    (entry,) = memory_entries(engine, "npc-1")
    assert first["id"] == entry.id
    assert ("blue", "colour") == entry.keywords
    assert 2 == entry.version
    assert "s-2" == entry.record.metadata.attributes["sessionId"]
    assert "t-9" == entry.record.metadata.attributes["traceId"]
    (item,) = search(engine, "colour")["items"]
    assert (first["id"], ["blue", "colour"], 2_000) == (
        item["id"], item["keywords"], item["updated_at"])
    # Nothing new: no further version.
    count = engine.count()
    assert merged == write(engine, "user favorite color is blue", ["colour"], ctx=later)
    assert count == engine.count()


# ---------------------------------------------------------------- metadata, redaction, JSON
def test_context_metadata_is_stored_as_attributes(engine: MemoryEngine) -> None:
    ctx = ToolContext("npc-1", session_id="s-1", trace_id="t-9", step_index=3, now=1_234,
                      call_id="call-7")
    record = engine.get(write(engine, "fact", ctx=ctx)["id"])
    assert {"sessionId": "s-1", "traceId": "t-9", "stepIndex": 3, "callId": "call-7",
            "memoryVersion": 1} == record.metadata.attributes
    assert 1_234 == record.created_at


def test_email_written_through_the_tool_is_redacted(engine: MemoryEngine) -> None:
    payload = write(engine, "user email is bob@example.com", ["bob@example.com", "email"])
    text = json.dumps(payload)
    assert "bob@example.com" not in text and "<REDACT:sha256-" in payload["content"]
    record = engine.get(payload["id"])
    assert record.redacted is True
    assert "bob@example.com" not in record.model_dump_json()
    assert payload == write(engine, "user email is bob@example.com", ["bob@example.com"])
    assert 1 == engine.count()
    found = search(engine, "bob@example.com")
    assert 1 == found["total"]
    assert "bob@example.com" not in json.dumps(found)


def test_redaction_off_stores_the_text_as_written(
    make_engine: Callable[..., MemoryEngine]
) -> None:
    engine = make_engine(redaction_mode=False)
    assert "mail bob@example.com" == write(engine, "mail bob@example.com")["content"]


def test_payloads_are_json_serializable_and_json_helper_matches(engine: MemoryEngine) -> None:
    written = write(engine, "café au lait préféré", ["café"])
    assert written == json.loads(json.dumps(written))
    text = execute_tool_json(engine, MEMORY_SEARCH, {"query": "café"}, CTX)
    assert "café" in text
    assert search(engine, "café") == json.loads(text)
    bad = json.loads(execute_tool_json(engine, MEMORY_SEARCH, {"query": ""}, CTX))
    assert INVALID == bad["error"]["code"]


def test_same_calls_give_same_payloads_and_state() -> None:
    def run() -> tuple[list[dict[str, Any]], str]:
        engine = MemoryEngine(MemoryConfig(), seed=3)
        out = [write(engine, f"fact number {i} about topic {i % 3}", [f"t{i % 3}"])
               for i in range(12)]
        out.append(search(engine, "topic t1 fact", limit=10))
        return out, engine.state_hash()

    assert run() == run()


# ---------------------------------------------------------------- strict mode, limits
def test_strict_mode_nulls_execute_like_absent_arguments() -> None:
    """A strict-mode model sends every argument, null for the ones it leaves out."""
    calls = [
        (MEMORY_WRITE, '{"content": "user favorite color is blue", "keywords": null}',
         {"content": "user favorite color is blue"}),
        (MEMORY_WRITE, {"content": "user lives in Lisbon", "keywords": ["city"]},
         {"content": "user lives in Lisbon", "keywords": ["city"]}),
        (MEMORY_WRITE, {"content": "User favorite color is blue", "keywords": None},
         {"content": "User favorite color is blue"}),
        (MEMORY_SEARCH, '{"query": "favorite color", "limit": null}', {"query": "favorite color"}),
        (MEMORY_SEARCH, {"query": "lisbon city", "limit": 1}, {"query": "lisbon city", "limit": 1}),
    ]
    strict, plain = MemoryEngine(MemoryConfig(), seed=1), MemoryEngine(MemoryConfig(), seed=1)
    for name, strict_args, plain_args in calls:
        got = execute_tool(strict, name, strict_args, CTX)
        assert got["ok"] is True
        assert execute_tool(plain, name, plain_args, CTX) == got
    assert plain.state_hash() == strict.state_hash()
    assert 2 == strict.count()


@pytest.mark.parametrize(
    ("name", "arguments"),
    [(MEMORY_WRITE, '{"content": null, "keywords": null}'),
     (MEMORY_SEARCH, '{"query": null, "limit": 3}')],
)
def test_strict_null_for_a_required_argument_is_rejected(
    engine: MemoryEngine, name: str, arguments: str
) -> None:
    before = engine.state_hash()
    payload = execute_tool(engine, name, arguments, CTX)
    assert_error(payload, INVALID)
    assert "cannot be null" in payload["error"]["message"]
    assert before == engine.state_hash()


def test_content_up_to_the_engine_limit_is_stored_and_past_it_rejected(
    make_engine: Callable[..., MemoryEngine]
) -> None:
    engine = make_engine(max_content_chars=50)
    assert write(engine, "x" * 50)["ok"] is True
    payload = write(engine, "y" * 51)
    assert_error(payload, INVALID)
    assert "at most 50 characters" in payload["error"]["message"]
    assert 1 == engine.count()


def test_a_keyword_that_casefolds_past_the_limit_is_rejected(engine: MemoryEngine) -> None:
    keyword = "ß" * 253  # 253 characters as sent, 506 once casefolded
    payload = write(engine, "fact", [keyword])
    assert_error(payload, INVALID)
    assert "keywords" in payload["error"]["message"]
    assert 0 == engine.count()
