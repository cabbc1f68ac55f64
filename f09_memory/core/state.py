"""EngineState: everything an engine remembers, in one explicit object.

The facade and its services share it; persistence reads and writes it through
``persistence.state.get_state`` / ``set_state`` (never the facade's attributes), and the
state hash is computed from it (``core.digest``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from f09_memory.config.config import MemoryConfig
from f09_memory.core.tables import KeyedTable
from f09_memory.errors import InputInvalidError
from f09_memory.importance.heuristic import Vocabulary
from f09_memory.protocols import PressureSource, TokenCounter
from f09_memory.retention.compaction import CompactionCursor
from f09_memory.schema.enums import PressureState
from f09_memory.store.store import MemoryStore

__all__ = ["EngineState", "check_engine_arguments"]


@dataclass
class EngineState:
    """The engine's state besides its services' own (summarizer tasks, vectors' provider).

    Attributes:
        config: The settings (immutable).
        seed: The engine seed.
        store: Every agent's columns.
        clock: The logical time of the last ``tick``.
        pressure: The pressure state in force.
        tick_cursor: Index into the sorted agent list where the next maintenance slice
            starts.
        compaction: Where the next compaction slice resumes.
        backlog_total: The tick backlog's total after the last tick.
        backlog_streak: Ticks in a row the backlog grew (``memory:tick:behind``).
        vocabularies: Each agent's novelty vocabulary (importance heuristic).
        tables: The layer adapters' state tables by name (``core.tables``): saved, hashed
            and journaled like the store; registered by their services at construction.
    """

    config: MemoryConfig
    seed: int
    store: MemoryStore
    clock: int = 0
    pressure: PressureState = PressureState.NORMAL
    tick_cursor: int = 0
    compaction: CompactionCursor = field(default_factory=CompactionCursor)
    backlog_total: int = 0
    backlog_streak: int = 0
    vocabularies: dict[str, Vocabulary] = field(default_factory=dict)
    tables: dict[str, KeyedTable] = field(default_factory=dict)

    @classmethod
    def new(cls, config: MemoryConfig, seed: int) -> EngineState:
        """An empty state for ``config`` and ``seed``."""
        return cls(config, seed, MemoryStore(config.episodic_max))

    def reset(self) -> None:
        """Empty the state in place (before a restore): the services keep their reference."""
        self.store.clear()
        self.vocabularies.clear()
        self.clock = 0
        self.pressure = PressureState.NORMAL
        self.tick_cursor = 0
        self.compaction.set_state(CompactionCursor().get_state())
        self.backlog_total = self.backlog_streak = 0
        for table in self.tables.values():
            table.reset()

    def register(self, table: KeyedTable) -> None:
        """Add a service's state table under its ``NAME`` (once per name)."""
        if not table.NAME or table.NAME in self.tables:
            raise ValueError(f"table name {table.NAME!r} is empty or taken")
        self.tables[table.NAME] = table

    def vocabulary(self, agent_id: str) -> Vocabulary:
        """The agent's vocabulary, created empty on first use."""
        vocab = self.vocabularies.get(agent_id)
        if vocab is None:
            vocab = self.vocabularies[agent_id] = Vocabulary(
                self.config.importance.novelty_vocab_max)
        return vocab

    def _check(self) -> None:
        """Assert the store's invariants and that every agent has a vocabulary."""
        self.store._check()
        for am in self.store:
            assert am.agent_id in self.vocabularies
        for name, table in self.tables.items():
            assert name == table.NAME
            table._check()


def check_engine_arguments(config: object, seed: object, token_counter: object,
                           pressure_source: object) -> MemoryConfig:
    """The engine's constructor arguments checked; the config (``MemoryConfig()`` for None).

    Raises:
        InputInvalidError: ``config`` is not a ``MemoryConfig``, ``seed`` not an int in
            ``0..2**63-1``, or ``token_counter`` / ``pressure_source`` lack their method.
    """
    if config is None:
        config = MemoryConfig()
    elif not isinstance(config, MemoryConfig):
        raise InputInvalidError(
            "config must be a MemoryConfig (build one with MemoryConfig(...) or "
            "MemoryConfig.from_env())",
            details={"got": type(config).__name__},
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise InputInvalidError("seed must be an int in 0..2**63-1", details={"field": "seed"})
    if token_counter is not None and not isinstance(token_counter, TokenCounter):
        raise InputInvalidError("token_counter must have count(text) -> int")
    if pressure_source is not None and not isinstance(pressure_source, PressureSource):
        raise InputInvalidError("pressure_source must have poll(now) -> PressureState")
    return config
