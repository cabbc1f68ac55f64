from __future__ import annotations

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.errors import ErrorCode, MemoryEngineError

ANSWER = """Here you go.
```typed_memory
---
name: prefers dark mode
description: The player likes dark interfaces
type: user
---
Always offer the dark theme first.
```
```typed_memory
---
name: release train
description: Builds ship on Fridays
type: project
---
Plan quests around the Friday patch.
```
```typed_memory
---
name: broken
type: nonsense
---
x
```
"""


def test_typed_memories_are_ingested_with_layer_tags_and_attributes() -> None:
    engine = MemoryEngine(MemoryConfig(typed_memory_layers={"project": "system"}),
                          embedder=None)
    records, result = engine.ingest_typed("npc", ANSWER, now=5)
    assert 2 == len(records) and 1 == len(result.diagnostics)
    user, project = records
    assert ("semantic", "system") == (user.layer.value, project.layer.value)
    assert ("typed:user", "typed-name:prefers_dark_mode") == user.metadata.tags
    assert "user_prefers_dark_mode.md" == user.metadata.attributes["filename"]
    assert user.content.startswith("prefers dark mode: The player likes dark interfaces")


def test_none_answer_stores_nothing() -> None:
    engine = MemoryEngine(embedder=None)
    records, result = engine.ingest_typed("npc", "NONE", now=0)
    assert ([], True) == (records, result.none)


def test_extraction_prompt_over_records_is_redacted_even_with_redaction_off() -> None:
    engine = MemoryEngine(MemoryConfig(redaction_mode=False), embedder=None)
    rec = engine.ingest("npc", "Write to ana@example.org about the Friday patch.", now=0)
    prompt = engine.typed_extraction_prompt("npc", [rec.id], today_date="2026-11-21")
    assert "ana@example.org" not in prompt.user and "Friday patch" in prompt.user
    assert 0.1 == prompt.temperature and 2048 == prompt.max_tokens
    with pytest.raises(MemoryEngineError) as info:
        engine.typed_extraction_prompt("other", [rec.id], today_date="2026-11-21")
    assert ErrorCode.MEMORY_RECORD_NOT_FOUND == info.value.code
    with pytest.raises(MemoryEngineError) as bad:
        engine.typed_extraction_prompt("npc", [rec.id], today_date="yesterday")
    assert ErrorCode.MEMORY_INPUT_INVALID == bad.value.code
