from __future__ import annotations

import pytest

from f09_memory import MemoryEngineError
from f09_memory.determinism import canonical_json, canonicalize, sha256_hex


def test_canonical_json_sorts_keys_and_quantizes_floats() -> None:
    assert b'{"a":[1,"x"],"b":500000000}' == canonical_json({"b": 0.5, "a": (1, "x")})


def test_last_bit_float_noise_does_not_change_the_hash() -> None:
    assert sha256_hex({"s": 0.1 + 0.2}) == sha256_hex({"s": 0.3})
    assert sha256_hex({"s": 0.3}) != sha256_hex({"s": 0.31})


def test_non_finite_and_unsupported_values() -> None:
    assert ["nan", "inf", "-inf"] == canonicalize([float("nan"), float("inf"), float("-inf")])
    with pytest.raises(MemoryEngineError):
        canonicalize(object())
