"""CallableEmbedder: a one-text embedder function as an EmbeddingProvider (no extra needed)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from f09_memory import EmbeddingProvider, MemoryConfig, MemoryEngine, RetrievalRequest
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.integrations.callable_embedder import CallableEmbedder


class Counting:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, text: str) -> list[float]:
        self.calls.append(text)
        return [float(len(text)), 1.0, float(text.count("a"))]


def test_it_fits_the_protocol_probes_its_dim_and_names_a_version() -> None:
    fn = Counting()
    embedder = CallableEmbedder(fn)
    assert isinstance(embedder, EmbeddingProvider)
    assert 3 == embedder.dim and "concordia-callable:3" == embedder.version
    assert 1 == len(fn.calls)  # the probe
    assert 3 == CallableEmbedder(fn, dim=3, version="m1").dim and 1 == len(fn.calls)
    assert "m1" == CallableEmbedder(fn, dim=3, version="m1").version


def test_embed_stacks_float32_rows_and_remembers_the_last_text() -> None:
    fn = Counting()
    embedder = CallableEmbedder(fn, dim=3)
    rows = embedder.embed(["ab", "aaa"])
    assert np.float32 == rows.dtype and (2, 3) == rows.shape
    assert [[2.0, 1.0, 1.0], [3.0, 1.0, 3.0]] == rows.tolist()
    embedder.vector("aaa")
    assert ["ab", "aaa"] == fn.calls
    assert (0, 3) == embedder.embed([]).shape


def test_an_engine_embeds_through_it() -> None:
    engine = MemoryEngine(MemoryConfig(), seed=0, embedder=CallableEmbedder(Counting(), dim=3))
    engine.ingest("npc-1", "banana", now=0)
    engine.ingest("npc-1", "kiwi", now=1)
    bundle = engine.retrieve(RetrievalRequest(agent_id="npc-1", purpose="reasoning",
                                              strategy="semantic", limit=1, query="aaaa"),
                             now=2)
    assert ["banana"] == [r.content for r in bundle.records]


@pytest.mark.parametrize("result", [[], [1.0, float("nan"), 2.0], "abc", [[1.0], [2.0]],
                                    [1.0, 2.0]])
def test_unusable_vectors_raise_embedding_failed(result: Any) -> None:
    embedder = CallableEmbedder(lambda _: [0.0, 1.0, 2.0])
    bad = CallableEmbedder(lambda _: result, dim=3)
    with pytest.raises(MemoryEngineError) as err:
        bad.embed(["x"])
    assert ErrorCode.MEMORY_EMBEDDING_FAILED == err.value.code
    assert [[0.0, 1.0, 2.0]] == embedder.embed(["x"]).tolist()


def test_a_raising_function_is_wrapped_and_bad_arguments_are_refused() -> None:
    def broken(text: str) -> list[float]:
        raise RuntimeError("down")

    with pytest.raises(MemoryEngineError) as err:
        CallableEmbedder(broken)
    assert ErrorCode.MEMORY_EMBEDDING_FAILED == err.value.code
    assert isinstance(err.value.__cause__, RuntimeError)
    for make in (lambda: CallableEmbedder("not callable"),  # type: ignore[arg-type]
                 lambda: CallableEmbedder(Counting(), dim=0),
                 lambda: CallableEmbedder(Counting(), dim=True),
                 lambda: CallableEmbedder(Counting(), dim=3, version=5)):  # type: ignore[arg-type]
        with pytest.raises(MemoryEngineError) as err:
            make()
        assert ErrorCode.MEMORY_INPUT_INVALID == err.value.code
