"""``Writer.store_groups``: several groups in one build, each with its own anchor."""

from __future__ import annotations

from typing import Any

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.ingestion.validation import validate_item


def _items(text: str) -> Any:
    return (validate_item(text, "semantic", 0.5, ["summary"], None),)


def _stored(together: bool) -> MemoryEngine:
    engine = MemoryEngine(MemoryConfig(), seed=1)
    engine.ingest_many("ann", ["Ann met Bo."], now=0)
    engine.ingest_many("bo", ["Bo met Ann."], now=0)
    store, writer = engine._state.store, engine._writer
    ann, bo = store.get("ann"), store.get("bo")
    assert ann is not None and bo is not None
    groups = [(ann, _items("first of ann")), (bo, _items("only of bo")),
              (ann, _items("second of ann"))]
    anchors = [30, 10, 20]
    events: list[Any] = []
    if together:
        keys = writer.store_groups(groups, 50, events, anchors, own_refs=True)
    else:
        keys = [writer.store(am, items, 50, events, anchor, own_refs=True)
                for (am, items), anchor in zip(groups, anchors, strict=True)]
    assert [[1], [1], [2]] == [list(k) for k in keys]
    return engine


def test_groups_stored_together_equal_them_stored_one_by_one() -> None:
    together, alone = _stored(True), _stored(False)
    assert together.state_hash() == alone.state_hash()
    together._check()
    semantic = together.records("ann", "semantic")
    assert [("second of ann", 20), ("first of ann", 30)] == [
        (r.content, r.recency_anchor) for r in semantic]
    assert [10] == [r.recency_anchor for r in together.records("bo", "semantic")]
