from __future__ import annotations

from collections.abc import Callable

import pytest

from f09_memory import MemoryConfig, MemoryEngine


@pytest.fixture
def make_engine() -> Callable[..., MemoryEngine]:
    def make(seed: int = 0, **config: object) -> MemoryEngine:
        return MemoryEngine(MemoryConfig(**config), seed=seed)

    return make


@pytest.fixture
def engine(make_engine: Callable[..., MemoryEngine]) -> MemoryEngine:
    return make_engine()
