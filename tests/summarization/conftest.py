from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.redaction import Redactor
from f09_memory.store import AgentMemory

Build = Callable[..., tuple[MemoryEngine, AgentMemory]]

BASE: dict[str, Any] = {
    "redaction_mode": False,  # raw PII reaches the store: the prompt must still not see it
    "episodic_window": 1_000,
    "summarization_keep_recent": 5,
    "summarization_batch_size": 10,
    "summarization_min_interval_ms": 10_000,
}
NAMES = ("Bram", "Lysa", "Old Tom", "Mira")
TAGS: tuple[tuple[str, ...], ...] = (("trade",), ("combat",), ("trade", "market"), ())


def config(**overrides: Any) -> MemoryConfig:
    return MemoryConfig(**{**BASE, **overrides})


def town_items(n: int, *, step: int = 1_000, importance: float = 0.2) -> list[dict[str, Any]]:
    """n deterministic episodic events about four townsfolk (first at t=0)."""
    return [
        {"content": f"Met {NAMES[i % 4]} near the well and talked about the harvest. "
                    f"It was cold on day {i}.",
         "tags": list(TAGS[i % 4]), "importance": importance, "now": i * step}
        for i in range(n)
    ]


@pytest.fixture
def build() -> Build:
    def make(items: Sequence[dict[str, Any]] = (), agent: str = "npc",
             **overrides: Any) -> tuple[MemoryEngine, AgentMemory]:
        engine = MemoryEngine(config(**overrides), embedder=None)
        for item in items:
            engine.ingest(agent, **item)
        am = engine._state.store.get(agent)
        assert am is not None
        return engine, am

    return make


@pytest.fixture
def redact() -> Callable[[str], str]:
    return Redactor(["EMAIL", "UUID", "NUMSEQ16"]).redact_text


@pytest.fixture
def town() -> Callable[..., list[dict[str, Any]]]:
    return town_items


@pytest.fixture
def make_config() -> Callable[..., MemoryConfig]:
    return config
