"""The determinism pytest plugin: ``pytest -p f09_memory.determinism.plugin``.

Or, in a ``conftest.py``: ``pytest_plugins = ["f09_memory.determinism.plugin"]``.

Fixtures:

- ``memory_engine``: a fresh :class:`~f09_memory.engine.MemoryEngine` seeded with
  ``--f09-seed`` (default 0).
- ``assert_deterministic``: :func:`~f09_memory.determinism.checker.assert_deterministic`:
  ``assert_deterministic("my_game.scenarios:village", ticks=100, processes=3, seeds=[1, 2])``
  runs the scenario in separate processes with different ``PYTHONHASHSEED`` values and
  across a save/load at a seeded tick, and fails with the first divergent tick, agent,
  record and field.

Option ``--f09-processes`` (default 3) sets the processes ``assert_deterministic`` uses
unless a test passes its own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from f09_memory.determinism.checker import DeterminismReport
    from f09_memory.engine import MemoryEngine

__all__ = ["assert_deterministic", "memory_engine", "pytest_addoption"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--f09-seed`` and ``--f09-processes``."""
    group = parser.getgroup("f09-memory", "f09-memory determinism")
    group.addoption("--f09-seed", type=int, default=0,
                    help="seed of the memory_engine fixture (0)")
    group.addoption("--f09-processes", type=int, default=3,
                    help="processes assert_deterministic uses by default (3)")


@pytest.fixture
def memory_engine(request: pytest.FixtureRequest) -> MemoryEngine:
    """A fresh engine with the default config, seeded with ``--f09-seed``."""
    from f09_memory.engine import MemoryEngine

    return MemoryEngine(seed=int(request.config.getoption("--f09-seed")))


@pytest.fixture
def assert_deterministic(request: pytest.FixtureRequest
                         ) -> Callable[..., DeterminismReport]:
    """The checker, with ``processes`` defaulting to ``--f09-processes``."""
    from f09_memory.determinism import checker

    processes = int(request.config.getoption("--f09-processes"))

    @functools.wraps(checker.assert_deterministic)
    def check(scenario: Any = checker.BUILTIN_SCENARIO, **kwargs: Any) -> DeterminismReport:
        kwargs.setdefault("processes", processes)
        return checker.assert_deterministic(scenario, **kwargs)

    return check
