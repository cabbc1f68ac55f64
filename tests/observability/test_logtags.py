from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, attach_log_tags
from f09_memory.errors import InputInvalidError
from f09_memory.observability import LOG_TAGS
from f09_memory.testing import FailingEmbedder

TAGS = ["[MEM][CREATE]", "[MEM][RETRIEVE]", "[MEM][SUMMARY]", "[MEM][COMPACT]",
        "[MEM][REDACT]", "[MEM][ERROR]"]  # spec section 20


def test_every_spec_tag_is_logged_and_no_content_or_secret_is(
        mixed_engine: MemoryEngine, scenario: Callable[[MemoryEngine], Any],
        secrets: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    assert set(TAGS) == set(LOG_TAGS.values())
    detach = attach_log_tags(mixed_engine)
    failing = MemoryEngine(MemoryConfig(), embedder=FailingEmbedder(failures=1))
    detach_failing = attach_log_tags(failing)
    with caplog.at_level(logging.DEBUG):  # the engine's own DEBUG lines are checked too
        scenario(mixed_engine)
        failing.ingest("npc", f"Met {secrets['email']} by the mill.", now=1)
    detach()
    detach_failing()
    ours = [r for r in caplog.records if r.name == "f09_memory.observability"]
    for tag in TAGS:
        assert any(r.getMessage().startswith(tag) for r in ours), tag
    (error,) = [r for r in ours if r.getMessage().startswith("[MEM][ERROR]")]
    assert logging.WARNING == error.levelno and "agent=npc records=1" in error.getMessage()
    assert {logging.INFO} == {r.levelno for r in ours if r is not error}
    text = caplog.text
    for name, secret in secrets.items():
        assert secret not in text, name
    assert "scripted embedding failure" not in text  # an adapter's exception text


def test_lines_name_ids_and_counts(caplog: pytest.LogCaptureFixture) -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    detach = attach_log_tags(engine, logger=logging.getLogger("game.memory"),
                             level=logging.DEBUG)
    with caplog.at_level(logging.DEBUG, logger="game.memory"):
        engine.ingest("npc", "Saw the smith at the well.", importance=0.5, now=1)
        engine.retrieve(RetrievalRequest(agent_id="npc", purpose="dialog", max_tokens=50),
                        now=2)
    lines = [r.getMessage() for r in caplog.records if r.name == "game.memory"]
    assert lines[0] == "[MEM][CREATE] id=npc:0000000000 agent=npc layer=episodic importance=0.500"
    assert lines[1].startswith("[MEM][RETRIEVE] agent=npc purpose=dialog candidates=1 used=1 "
                               "truncated=False pressure=normal compressed=False ms=")
    detach()
    detach()  # idempotent
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="game.memory"):
        engine.ingest("npc", "Another day.", now=3)
    assert not [r for r in caplog.records if r.name == "game.memory"]
    assert not engine.bus.wants("memory:record:created")


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"logger": "f09"}, "logger"), ({"level": "INFO"}, "level"), ({"level": -1}, "level"),
    ({"level": True}, "level"),
])
def test_bad_arguments_are_refused(kwargs: dict[str, Any], field: str) -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=None)
    with pytest.raises(InputInvalidError) as info:
        attach_log_tags(engine, **kwargs)
    assert field == info.value.details["field"]
    assert not engine.bus.wants("memory:retrieval")
    with pytest.raises(InputInvalidError):
        attach_log_tags(engine.bus)  # type: ignore[arg-type]
