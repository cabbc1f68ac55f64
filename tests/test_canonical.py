from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

import f09_memory.canonical as canonical
from f09_memory import MemoryEngineError
from f09_memory.canonical import (
    DEFAULT_QUANTUM,
    canonical_json,
    canonicalize,
    quantize,
    quantize_scalar,
    sha256_hex,
)

SAMPLE = {
    "b": 0.5,
    "a": (1, "x", None, True),
    "\u00e9": [0.1 + 0.2, -1.5e-10, float("inf")],
    "n": {"z": 2.5e-9, "y": "\u00fc"},
}


def test_one_default_quantum_of_one_billion() -> None:
    assert 1_000_000_000 == DEFAULT_QUANTUM


def test_hashes_are_those_of_the_former_determinism_hashing() -> None:
    # pinned from f09_memory/determinism/hashing.py before the move: every existing
    # state hash and journal hash rests on these bytes staying identical
    assert "ee5c0cffa407ef4ea668ecc161dae104c650bde8532d201d11a918c214f36bd4" == sha256_hex(SAMPLE)
    assert "fbf00266bb12e6de2f109130cd3f47f249eb9aa8fd6a267e9096251657bc1b38" == sha256_hex(
        SAMPLE, 1000
    )
    assert (
        '{"a":[1,"x",null,true],"b":500000000,"n":{"y":"\u00fc","z":2},'
        '"\u00e9":[300000000,0,"inf"]}'
    ).encode() == canonical_json(SAMPLE)


def test_canonicalize_rejects_what_json_cannot_hold() -> None:
    with pytest.raises(MemoryEngineError):
        canonicalize({"x": object()})


def test_quantize_rounds_half_to_even_into_int64() -> None:
    q = quantize(np.array([0.5, 1.5, 2.5, -0.5, 0.3]), 1)
    assert np.int64 == q.dtype
    assert [0, 2, 2, 0, 0] == q.tolist()


def test_quantize_widens_float32_before_multiplying() -> None:
    sims = np.array([0.1, 0.7, 1.0], dtype=np.float32)
    want = np.rint(sims.astype(np.float64) * 1e9).astype(np.int64)
    assert want.tolist() == quantize(sims, DEFAULT_QUANTUM).tolist()


def test_quantize_scalar_agrees_with_the_array_form() -> None:
    rng = np.random.default_rng(9)
    values = np.concatenate([
        rng.random(500), rng.uniform(-1, 1, 500), np.array([0.0, 0.5e-9, 1.5e-9, 2.5e-9, 1.0]),
    ])
    for quantum in (1, 1000, DEFAULT_QUANTUM):
        arr = quantize(values, quantum).tolist()
        assert arr == [quantize_scalar(float(v), quantum) for v in values]
    assert isinstance(quantize_scalar(0.25, DEFAULT_QUANTUM), int)
    assert 300_000_000 == quantize_scalar(0.3 - 1e-12, DEFAULT_QUANTUM)


def test_former_homes_reexport_the_same_objects() -> None:
    from f09_memory.determinism import hashing
    from f09_memory.retrieval import scoring
    from f09_memory.summarization import scheduler
    from f09_memory.vector_index import ordering

    assert hashing.sha256_hex is sha256_hex and hashing.canonical_json is canonical_json
    assert hashing.canonicalize is canonicalize and hashing.DEFAULT_QUANTUM == DEFAULT_QUANTUM
    assert ordering.quantize is quantize and ordering.DEFAULT_QUANTUM == DEFAULT_QUANTUM
    assert scoring.quantize is quantize
    assert scheduler.quantize is quantize_scalar


def test_canonical_is_a_base_layer_module() -> None:
    tree = ast.parse(Path(canonical.__file__).read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.module is not None
            imported.add(node.module)
    ours = {name for name in imported if name.split(".")[0] == "f09_memory"}
    assert {"f09_memory.errors"} == ours
    roots = {name.split(".")[0] for name in imported} - {"f09_memory"}
    assert {"numpy"} == roots - set(sys.stdlib_module_names)


def test_text_digest64_is_fixed_across_processes_and_takes_lone_surrogates() -> None:
    """The vocabulary digests and dedup fingerprints rest on it: pinned values, no hash seed."""
    assert canonical.text_digest64("smith") == 4262153582618404843
    assert canonical.text_digest64("the well is dry") == 17931508289444918205
    assert canonical.text_digest64("é\ud800") == 9184984038902943651
    assert 0 <= canonical.text_digest64("") < 2**64
