"""Caller mistakes: each raises a MemoryEngineError with the right code, leaves the state hash
and every id counter unchanged, and never echoes the raw input."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory._validate import MAX_LOGICAL_TIME
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.ingestion.claims import Claim
from f09_memory.schema import retrieval as retrieval_schema
from f09_memory.testing import ScriptedLLM

SECRET = "hunter2-private"
BAD = f"{SECRET}\ud800"
"""A string holding a lone surrogate (not valid Unicode text), marked to catch echoes."""
REQ: dict[str, Any] = {"agentId": "a", "purpose": "dialog", "maxTokens": 400}


def seeded(**config: Any) -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(episodic_max=50, **config), seed=0)
    engine.ingest_many("a", [f"memory number {i} about the mill" for i in range(5)], now=10)
    return engine


def counters(engine: MemoryEngine) -> dict[str, int]:
    return {am.agent_id: am.next_key for am in engine._state.store}


def rejected(engine: MemoryEngine, call: Callable[[], object],
             code: ErrorCode = ErrorCode.MEMORY_INPUT_INVALID) -> MemoryEngineError:
    """Run ``call``: it must raise ``code`` and change nothing (state hash, id counters)."""
    before, keys = engine.state_hash(), counters(engine)
    with pytest.raises(MemoryEngineError) as info:
        call()
    assert code == info.value.code, info.value
    assert before == engine.state_hash()
    assert keys == counters(engine)
    engine._check()
    assert SECRET not in str(info.value) and SECRET not in repr(info.value.details)
    return info.value


# ---------------------------------------------------------------------------------- text
SURROGATE_CALLS: dict[str, Callable[[MemoryEngine], object]] = {
    "content": lambda e: e.ingest("a", BAD, now=20),
    "agent_id": lambda e: e.ingest(BAD, "x", now=20),
    "tag": lambda e: e.ingest("a", "x", tags=["ok", BAD], now=20),
    "tag set": lambda e: e.ingest("a", "x", tags={"ok", BAD}, now=20),
    "source_event": lambda e: e.ingest("a", "x", source_event=BAD, now=20),
    "metadata key": lambda e: e.ingest("a", "x", metadata={"attributes": {BAD: 1}}, now=20),
    "metadata value": lambda e: e.ingest("a", "x", metadata={"attributes": {"k": BAD}}, now=20),
    "metadata tags": lambda e: e.ingest("a", "x", metadata={"tags": [BAD]}, now=20),
    "metadata source": lambda e: e.ingest("a", "x", metadata={"sourceEvent": BAD}, now=20),
    "metadata refs": lambda e: e.ingest("a", "x", metadata={"sourceRefIds": [BAD]}, now=20),
    "social": lambda e: e.ingest("a", "x", metadata={"social": {"otherAgentId": BAD}}, now=20),
    "procedural": lambda e: e.ingest("a", "x", metadata={"procedural": {"patternId": BAD}},
                                     now=20),
    "ingest_many": lambda e: e.ingest_many("a", ["fine", BAD], now=20),
    "ingest_many tags": lambda e: e.ingest_many("a", [{"content": "x", "tags": [BAD]}], now=20),
    "ingest_batch": lambda e: e.ingest_batch([{"agent_id": "b", "content": "ok"},
                                              {"agent_id": "a", "content": BAD}], now=20),
    "ingest_batch agent": lambda e: e.ingest_batch([{"agent_id": BAD, "content": "x"}], now=20),
    "ingest_batch source": lambda e: e.ingest_batch(
        [{"agent_id": "a", "content": "x", "source_event": BAD}], now=20),
    "update content": lambda e: e.update("a:0000000000", content=BAD),
    "update tags": lambda e: e.update("a:0000000000", tags=[BAD]),
    "claim": lambda e: e.ingest_claim("a", "x", Claim("user", "likes", BAD), now=20),
    "query": lambda e: e.retrieve({**REQ, "query": BAD}, now=20),
    "retrieve agent": lambda e: e.retrieve({**REQ, "agentId": BAD}, now=20),
    "filter value": lambda e: e.retrieve({**REQ, "attributes": {"k": BAD}}, now=20),
    "filter tag": lambda e: e.retrieve({**REQ, "tagsAny": [BAD]}, now=20),
    "records": lambda e: e.records(BAD),
    "count": lambda e: e.count(BAD),
    "request": lambda e: e.summarization.request(BAD, now=20),
}


@pytest.mark.parametrize("name", sorted(SURROGATE_CALLS))
def test_a_lone_surrogate_is_rejected_everywhere(name: str) -> None:
    engine = seeded()
    rejected(engine, lambda: SURROGATE_CALLS[name](engine))


def test_valid_non_ascii_text_is_stored() -> None:
    engine = seeded()
    rec = engine.ingest("ägent", "Größe 😀 and 漢字", tags=["café"], source_event="évent",
                        metadata={"attributes": {"clé": "valeur ü"}}, now=20)
    assert ("Größe 😀 and 漢字", ("café",)) == (rec.content, rec.metadata.tags)
    engine._check()


def summarizing_engine() -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(episodic_window=0, summarization_min_interval_ms=0,
                                       summarization_batch_size=5, summarization_keep_recent=0,
                                       summarization_max_importance=0.9), embedder=None)
    engine.ingest_many("mara", [{"content": f"Traded iron nails with Borin, day {i}.",
                                 "importance": 0.2, "tags": ["market"]} for i in range(5)],
                       now=0)
    return engine


def test_an_llm_reply_that_is_not_text_takes_the_heuristic_summary_and_loses_nothing() -> None:
    engine = summarizing_engine()
    task = engine.summarization.request("mara", now=10)
    assert task is not None
    (polled,) = engine.summarization.poll(now=10)
    reply = "Mara traded iron nails with Borin at the market \ud800 for days."
    outcome = engine.summarization.complete(polled.id, reply)
    assert outcome.used_fallback and "not text" in (outcome.reason or "")
    summary = engine.get(task.summary_record_id or "")
    assert "\ud800" not in summary.content
    assert tuple(task.source_ids) == summary.metadata.source_ref_ids
    assert 1 == engine.count("mara")
    engine._check()


def test_summarize_pending_with_a_surrogate_reply_stores_the_heuristic_summary() -> None:
    engine = summarizing_engine()
    engine.summarization.request("mara", now=10)
    (outcome,) = engine.summarize_pending(ScriptedLLM(["Borin and Mara \udfff traded nails."]),
                                          now=10, timeout_ms=60_000)
    assert outcome.used_fallback and outcome.summary_text
    assert 1 == engine.count("mara")
    engine._check()


def test_fail_reason_and_error_text_are_checked() -> None:
    engine = summarizing_engine()
    engine.summarization.request("mara", now=10)
    (task,) = engine.summarization.poll(now=10)
    rejected(engine, lambda: engine.summarization.fail(task.id, BAD))
    rejected(engine, lambda: engine.summarization.complete_after_error(task.id, 5))  # type: ignore[arg-type]
    outcome = engine.summarization.complete_after_error(task.id, "adapter said \ud800")
    assert outcome.used_fallback and "\ud800" not in (outcome.reason or "")
    engine._check()


def test_unknown_task_ids_are_not_echoed() -> None:
    engine = summarizing_engine()
    err = rejected(engine, lambda: engine.summarization.complete(SECRET, "text"),
                   ErrorCode.MEMORY_SUMMARY_FAILED)
    assert {"field": "task_id"} == err.details


# ---------------------------------------------------------------------------------- time
@pytest.mark.parametrize("now", [-1, MAX_LOGICAL_TIME, 2**63, 10**400, 1.5, True, "5", None])
def test_logical_time_outside_0_to_2_62_is_rejected(now: Any) -> None:
    engine = seeded()
    if now is not None:
        rejected(engine, lambda: engine.ingest("a", "x", now=now))
        rejected(engine, lambda: engine.retrieve(REQ, now=now))
        rejected(engine, lambda: engine.summarization.request("a", now=now))
        rejected(engine, lambda: engine.summarization.poll(now=now))
    rejected(engine, lambda: engine.tick(now))


@pytest.mark.parametrize("ttl", [0, -5, MAX_LOGICAL_TIME, 2**63, 10**400, 2.0, True])
def test_ttl_outside_1_to_2_62_is_rejected(ttl: Any) -> None:
    engine = seeded()
    rejected(engine, lambda: engine.ingest("a", "x", ttl=ttl, now=20))
    rejected(engine, lambda: engine.ingest_many("a", [{"content": "x", "ttl": ttl}], now=20))


def test_the_largest_time_and_ttl_fit_and_expire() -> None:
    engine = seeded()
    last = MAX_LOGICAL_TIME - 1
    rec = engine.ingest("a", "x", ttl=last, now=last)
    assert (last, last) == (rec.created_at, rec.ttl)
    engine.tick(last)
    assert rec == engine.get(rec.id)
    engine._check()
    rejected(engine, lambda: engine.tick(MAX_LOGICAL_TIME))


@pytest.mark.parametrize("field", ["since", "until"])
def test_time_filters_are_bounded(field: str) -> None:
    engine = seeded()
    rejected(engine, lambda: engine.retrieve({**REQ, field: MAX_LOGICAL_TIME}, now=20))
    assert engine.retrieve({**REQ, field: MAX_LOGICAL_TIME - 1}, now=20) is not None
    assert retrieval_schema._MAX_LOGICAL_TIME == MAX_LOGICAL_TIME


def test_a_claim_valid_to_past_2_62_is_rejected_naming_it() -> None:
    engine = seeded()
    for valid_to in (MAX_LOGICAL_TIME, 10**400):
        claim = Claim("s", "p", "v", scope="temporal", valid_to=valid_to)
        err = rejected(engine, lambda c=claim: engine.ingest_claim("a", "x", c, now=20))
        assert "claim.valid_to" == err.details["field"]


@pytest.mark.parametrize("field", ["episodic_window", "decay_half_life_ms",
                                   "summarization_timeout_ms", "summarization_min_interval_ms",
                                   "summarization_grouping_gap_ms", "dedup_window_ms",
                                   "work_units_per_ms", "exact_index_max"])
def test_config_durations_and_counts_stay_below_2_62(field: str) -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig(**{field: MAX_LOGICAL_TIME})
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    MemoryConfig(**{field: MAX_LOGICAL_TIME - 1})


# ---------------------------------------------------------------------------------- numbers
@pytest.mark.parametrize("importance", [10**400, -(10**400), float("nan"), float("inf"), 1.5,
                                        -0.1, "0.5", True])
def test_bad_importance_is_rejected(importance: Any) -> None:
    engine = seeded()
    rejected(engine, lambda: engine.ingest("a", "x", importance=importance, now=20))
    rejected(engine, lambda: engine.update("a:0000000000", importance=importance))
    rejected(engine, lambda: engine.ingest_many(
        "a", [{"content": "x", "importance": importance}], now=20))


@pytest.mark.parametrize("tags", [{1, "a"}, [1], [""], ["  "], "tag", 5, [None]])
def test_bad_tags_are_rejected(tags: Any) -> None:
    engine = seeded()
    rejected(engine, lambda: engine.ingest("a", "x", tags=tags, now=20))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**63, -(2**63) - 1])
def test_attribute_numbers_must_be_finite_and_int64(value: Any) -> None:
    engine = seeded()
    rejected(engine, lambda: engine.ingest("a", "x", metadata={"attributes": {"k": value}},
                                           now=20))


@pytest.mark.parametrize("budget", [1e308, float("nan"), float("inf"), 10**400, 0, -1, "5"])
def test_bad_tick_budgets_are_rejected(budget: Any) -> None:
    engine = seeded()
    rejected(engine, lambda: engine.tick(30, budget_ms=budget))


@pytest.mark.parametrize("seed", [-1, 2**63, 1.0, True, None])
def test_bad_seeds_are_rejected(seed: Any) -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryEngine(seed=seed)
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code


def test_argument_shapes_are_checked() -> None:
    engine = seeded()
    rejected(engine, lambda: engine.retrieve_many(None))  # type: ignore[arg-type]
    rejected(engine, lambda: engine.retrieve_many("abc"))  # type: ignore[arg-type]
    rejected(engine, lambda: engine.count(["x"]))  # type: ignore[arg-type]
    rejected(engine, lambda: engine.recent("a", -1))
    rejected(engine, lambda: engine.get("a:" + "9" * 5000), ErrorCode.MEMORY_RECORD_NOT_FOUND)
    rejected(engine, lambda: engine.forget(["a:" + "9" * 5000]),
             ErrorCode.MEMORY_RECORD_NOT_FOUND)
    assert [] == engine.recent("a", 2**63)[5:]
    for ids in (None, 5, "a:0000000000"):
        rejected(engine, lambda i=ids: engine.typed_extraction_prompt(
            "a", i, today_date="2024-01-01"))


# ---------------------------------------------------------------------------------- sizes
SIZE_CASES: dict[str, tuple[str, Callable[[MemoryEngine, int], object]]] = {
    "content": ("max_content_chars", lambda e, n: e.ingest("a", "c" * n, now=20)),
    "agent_id": ("max_agent_id_chars", lambda e, n: e.ingest("g" * n, "x", now=20)),
    "tag": ("max_tag_chars", lambda e, n: e.ingest("a", "x", tags=["t" * n], now=20)),
    "tags": ("max_tags_per_record",
             lambda e, n: e.ingest("a", "x", tags=[f"t{i}" for i in range(n)], now=20)),
    "metadata tags": ("max_tags_per_record", lambda e, n: e.ingest(
        "a", "x", tags=["own"], metadata={"tags": [f"t{i}" for i in range(n - 1)]}, now=20)),
    "source_event": ("max_source_event_chars",
                     lambda e, n: e.ingest("a", "x", source_event="s" * n, now=20)),
    "attribute value": ("max_attribute_chars", lambda e, n: e.ingest(
        "a", "x", metadata={"attributes": {"k": "v" * n}}, now=20)),
    "attribute key": ("max_attribute_chars", lambda e, n: e.ingest(
        "a", "x", metadata={"attributes": {"k" * n: 1}}, now=20)),
    "attributes": ("max_attributes", lambda e, n: e.ingest(
        "a", "x", metadata={"attributes": {f"k{i}": i for i in range(n)}}, now=20)),
    "batch tag": ("max_tag_chars", lambda e, n: e.ingest_batch(
        [{"agent_id": "a", "content": "x", "tags": ["t" * n]}], now=20)),
    "many content": ("max_content_chars", lambda e, n: e.ingest_many("a", ["c" * n], now=20)),
    "update tag": ("max_tag_chars", lambda e, n: e.update("a:0000000000", tags=["t" * n])),
}


@pytest.mark.parametrize("name", sorted(SIZE_CASES))
def test_inputs_past_a_size_limit_are_rejected_naming_the_config_field(name: str) -> None:
    field, call = SIZE_CASES[name]
    limit = MemoryConfig.model_fields[field].default
    engine = seeded()
    err = rejected(engine, lambda: call(engine, limit + 1))
    assert field in err.message and field == err.details["configField"]
    assert limit == err.details["limit"]
    raised = seeded(**{field: limit + 1})
    call(raised, limit + 1)  # raising the field lets it through
    raised._check()


def test_ten_megabyte_and_million_item_inputs_are_rejected_cheaply() -> None:
    engine = seeded()
    big = "x" * 10_000_000
    rejected(engine, lambda: engine.ingest("a", "x", tags=[big], now=20))
    rejected(engine, lambda: engine.ingest("a", "x", source_event=big, now=20))
    rejected(engine, lambda: engine.ingest("a", "x", metadata={"attributes": {"k": big}},
                                           now=20))
    rejected(engine, lambda: engine.ingest("a", "x", tags=[str(i) for i in range(1_000_000)],
                                           now=20))


def test_the_default_limits_fit_the_defaults_of_the_engine() -> None:
    cfg = MemoryConfig()
    assert (65_536, 256, 256, 256, 1_024, 4_096, 64) == (
        cfg.max_content_chars, cfg.max_agent_id_chars, cfg.max_tag_chars,
        cfg.max_tags_per_record, cfg.max_source_event_chars, cfg.max_attribute_chars,
        cfg.max_attributes)


# ---------------------------------------------------------------------------------- messages
def test_messages_name_the_field_not_the_value() -> None:
    engine = seeded()
    for call in (lambda: engine.ingest("a", "x", layer=SECRET, now=20),
                 lambda: engine.ingest("a" * 300 + SECRET, "x", now=20),
                 lambda: engine.ingest(5, SECRET, now=20),  # type: ignore[arg-type]
                 lambda: engine.ingest_many("a", [{"content": "x", SECRET: 1}], now=20),
                 lambda: engine.ingest("a", "x", metadata={"attributes": {SECRET: [1]}},
                                       now=20),
                 lambda: engine.retrieve({**REQ, "attributes": {SECRET: [1]}}, now=20),
                 lambda: engine.retrieve({**REQ, SECRET: 1}, now=20)):
        err = rejected(engine, call)
        assert "field" in err.details or "errors" in err.details
    for missing in (f"a:{SECRET}", f"{SECRET}:0000000001"):
        rejected(engine, lambda m=missing: engine.get(m), ErrorCode.MEMORY_RECORD_NOT_FOUND)
        rejected(engine, lambda m=missing: engine.forget([m]), ErrorCode.MEMORY_RECORD_NOT_FOUND)
        rejected(engine, lambda m=missing: engine.update(m, importance=0.5),
                 ErrorCode.MEMORY_RECORD_NOT_FOUND)


# ---------------------------------------------------------------------------------- vectors
@pytest.mark.parametrize("vectors", [
    "abc", b"abc", [[1.0] * 384, [1.0]], np.array([object()] * 384, dtype=object),
    np.zeros((0, 384), np.float32), np.zeros((0,), np.float32), np.ones((384,), complex),
    np.full((384,), np.inf), np.full((384,), 1e300), np.ones((2, 3)), np.ones((2, 2, 384)),
    [10**400] * 384, np.ones(384, dtype=bool), {"a": 1}, 5,
], ids=lambda v: type(v).__name__)
def test_malformed_query_vectors_are_rejected(vectors: Any) -> None:
    engine = seeded()
    rejected(engine, lambda: engine.retrieve(REQ, now=20, query_vectors=vectors))


def test_well_formed_query_vectors_are_used() -> None:
    engine = seeded()
    for vectors in (np.ones(384, np.float32), np.ones((2, 384)), [1.0] * 384,
                    np.ones(384, np.int64)):
        bundle = engine.retrieve(REQ, now=20, query_vectors=vectors)
        assert bundle.diagnostics.semantic_fallback is None
        assert all(np.isfinite(c.weight) for c in bundle.diagnostics.scoring_breakdown)


class _Embedder:
    version = "x"

    def __init__(self, dim: object) -> None:
        self._dim = dim

    @property
    def dim(self) -> Any:
        if isinstance(self._dim, Exception):
            raise self._dim
        return self._dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return np.ones((len(texts), 4), np.float32)


@pytest.mark.parametrize("dim", [RuntimeError("boom"), "4", 4.0, True, 0, -3, 2**40, None])
def test_an_embedder_with_a_bad_dim_is_rejected(dim: object) -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryEngine(embedder=_Embedder(dim))  # type: ignore[arg-type]
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code
    engine = seeded()
    embedder_before = engine.embedder
    rejected(engine, lambda: engine.set_embedder(_Embedder(dim)))  # type: ignore[arg-type]
    assert embedder_before is engine.embedder


# ---------------------------------------------------------------------------------- save
def test_save_rejects_a_path_that_is_not_one(tmp_path: Path) -> None:
    engine = seeded()
    for path in (None, 5, b"x.snap", ["x"]):
        rejected(engine, lambda p=path: engine.save(p))  # type: ignore[arg-type]
    rejected(engine, lambda: engine.save(str(tmp_path / "a\x00b")))
    assert [] == list(tmp_path.iterdir())


def test_save_to_a_missing_folder_or_through_a_file_is_a_storage_error(tmp_path: Path) -> None:
    engine = seeded()
    err = rejected(engine, lambda: engine.save(tmp_path / "missing" / "x.snap"),
                   ErrorCode.MEMORY_STORAGE_FAILED)
    assert errno.ENOENT == err.details["errno"] and isinstance(err.__cause__, OSError)
    (tmp_path / "file").write_bytes(b"")
    err = rejected(engine, lambda: engine.save(tmp_path / "file" / "x.snap"),
                   ErrorCode.MEMORY_STORAGE_FAILED)
    assert errno.ENOTDIR == err.details["errno"]
    rejected(engine, lambda: engine.save(tmp_path), ErrorCode.MEMORY_STORAGE_FAILED)
    assert ["file"] == sorted(p.name for p in tmp_path.iterdir())


@pytest.mark.parametrize(("where", "code"), [("fsync", errno.ENOSPC), ("write", errno.ENOSPC),
                                             ("replace", errno.EACCES),
                                             ("mkstemp", errno.EROFS)])
def test_save_on_a_full_or_read_only_disk_leaves_no_partial_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, code: int) -> None:
    engine = seeded()
    path = engine.save(tmp_path / "s.snap")
    before = path.read_bytes()
    engine.ingest("a", "one more", now=30)

    def fail(*_: object, **__: object) -> None:
        raise OSError(code, os.strerror(code))

    real_fdopen = os.fdopen

    class FullFile:  # the file object of a full disk: opens, then every write fails
        def __init__(self, fd: int, *args: Any, **kwargs: Any) -> None:
            self.fh = real_fdopen(fd, *args, **kwargs)

        def __enter__(self) -> FullFile:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

        write = flush = fail

    target = {"fsync": "os.fsync", "write": "os.fdopen", "replace": "os.replace",
              "mkstemp": "tempfile.mkstemp"}[where]
    monkeypatch.setattr(target, FullFile if where == "write" else fail)
    err = rejected(engine, lambda: engine.save(path), ErrorCode.MEMORY_STORAGE_FAILED)
    assert code == err.details["errno"]
    monkeypatch.undo()
    assert before == path.read_bytes()
    assert [path] == list(tmp_path.iterdir())
