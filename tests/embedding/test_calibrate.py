"""Calibrating an embedder's tick cost: the function, the CLI, and who decides the cost."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.cli import main
from f09_memory.config.config import DEFAULT_EMBED_UNITS
from f09_memory.embedding import HashingEmbedder, calibrate_embedder, sample_texts
from f09_memory.errors import ErrorCode, MemoryEngineError


class Ticking:
    """A clock that moves 4 ms per reading: each timed pass measures 4 ms."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.004
        return self.t


class Plain:
    """A provider that declares no tick cost."""

    dim = 8
    version = "plain-v1"

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return np.ones((len(texts), 8), dtype=np.float32)


def test_the_cost_per_text_becomes_work_units() -> None:
    result = calibrate_embedder(HashingEmbedder(32), texts=sample_texts(100), clock=Ticking())
    assert (40.0, 8_000, 100, 64) == (round(result.us_per_text, 6), result.units_per_text,
                                      result.texts, result.batch_size)
    slow = calibrate_embedder(HashingEmbedder(32), texts=sample_texts(100), clock=Ticking(),
                              work_units_per_ms=50_000)
    assert 2_000 == slow.units_per_text  # a slower machine's unit is worth more time


def test_sample_texts_are_distinct_and_fixed() -> None:
    texts = sample_texts(300)
    assert len(set(texts)) == 300 and texts == sample_texts(300)


@pytest.mark.parametrize("kwargs", [
    {"provider": object()},
    {"texts": []},
    {"texts": ["ok", 3]},
    {"rounds": 0},
    {"batch_size": True},
    {"work_units_per_ms": -1},
])
def test_bad_arguments_raise_input_invalid(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"provider": HashingEmbedder(8), **kwargs}
    with pytest.raises(MemoryEngineError) as info:
        calibrate_embedder(**args)  # type: ignore[arg-type]
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code


def test_the_cli_prints_the_setting(capsys: pytest.CaptureFixture[str]) -> None:
    assert 0 == main(["calibrate-embedder", "--texts", "32", "--batch-size", "16"])
    out = capsys.readouterr().out.splitlines()
    assert "embedder=hashing-v1-d384-s0" == out[0]
    units = int(out[2].removeprefix("unitsPerText="))
    assert units >= 1 and f'setting: MemoryConfig(tick_costs={{"embed": {units}}})' == out[3]


def test_the_config_wins_then_the_provider_then_the_default() -> None:
    def cost(config: MemoryConfig, embedder: object) -> int:
        engine = MemoryEngine(config, embedder=embedder)  # type: ignore[arg-type]
        return engine._semantic.embed_cost()

    assert HashingEmbedder.tick_cost_units == cost(MemoryConfig(), HashingEmbedder(384))
    assert 7 == cost(MemoryConfig(tick_costs={"embed": 7}), HashingEmbedder(384))
    assert DEFAULT_EMBED_UNITS == cost(MemoryConfig(embedding_dim=8), Plain())
