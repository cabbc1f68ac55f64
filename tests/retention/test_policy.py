from __future__ import annotations

import pytest

from f09_memory import MemoryConfig
from f09_memory.config import RetentionPolicy
from f09_memory.errors import ErrorCode, MemoryEngineError, RetentionViolationError
from f09_memory.retention import CAPPED_LAYERS, Compactor, check_policy, layer_caps
from f09_memory.schema import MemoryLayer


def test_layer_caps_lists_every_layer_with_none_for_uncapped() -> None:
    caps = layer_caps(RetentionPolicy())
    assert list(MemoryLayer) == list(caps)
    assert {MemoryLayer.EPISODIC: None, MemoryLayer.SEMANTIC: 400, MemoryLayer.PROCEDURAL: 250,
            MemoryLayer.SOCIAL: 300, MemoryLayer.SPATIAL: None, MemoryLayer.SYSTEM: None} == caps
    caps = layer_caps(RetentionPolicy(social_max=None, protected_min=0))
    assert caps[MemoryLayer.SOCIAL] is None
    assert (MemoryLayer.SEMANTIC, MemoryLayer.PROCEDURAL, MemoryLayer.SOCIAL) == CAPPED_LAYERS


def test_check_policy_accepts_caps_at_the_minimum() -> None:
    check_policy(RetentionPolicy(semantic_max=20, social_max=20, procedural_max=None),
                 protected_min=20)


def test_check_policy_names_the_layer_and_the_minimum() -> None:
    policy = RetentionPolicy(semantic_max=400, social_max=30, procedural_max=250)
    with pytest.raises(RetentionViolationError) as info:
        check_policy(policy, protected_min=50)
    err = info.value
    assert ErrorCode.MEMORY_RETENTION_VIOLATION == err.code
    assert "social" in err.message and "50" in err.message
    assert {"field": "retention_policy.social_max", "layer": "social", "cap": 30,
            "protectedMin": 50} == err.details


def test_config_with_a_cap_below_the_protected_minimum_raises_retention_violation() -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig(retention_policy={"social_max": 3, "protected_min": 10})
    assert ErrorCode.MEMORY_RETENTION_VIOLATION == info.value.code
    assert "social" in info.value.message and "10" in info.value.message
    assert "social" == info.value.details["layer"]
    assert 10 == info.value.details["protectedMin"]


def test_camel_case_parse_and_the_policy_model_raise_the_same_code() -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig.parse({"retentionPolicy": {"proceduralMax": 5, "protectedMin": 6}})
    assert ErrorCode.MEMORY_RETENTION_VIOLATION == info.value.code
    assert "procedural" in info.value.message
    with pytest.raises(RetentionViolationError):
        RetentionPolicy(semantic_max=9, protected_min=10)


def test_the_default_minimum_is_lowered_to_fit_small_caps() -> None:
    config = MemoryConfig(retention_policy={"social_max": 3})
    assert 3 == config.retention_policy.protected_min
    assert config == MemoryConfig.parse(config.to_json_dict())
    assert 10 == MemoryConfig().retention_policy.protected_min
    assert 3 == MemoryConfig.from_env(
        {"MEMORY_RETENTION_SOCIAL_MAX": "3"}).retention_policy.protected_min


def test_a_negative_minimum_is_a_config_error() -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig(retention_policy={"protected_min": -1})
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    assert "protected_min" in info.value.message


def test_compactor_refuses_an_unvalidated_policy_below_the_minimum() -> None:
    bad = RetentionPolicy.model_construct(semantic_max=2, social_max=300, procedural_max=250,
                                          protected_min=10)
    config = MemoryConfig().model_copy(update={"retention_policy": bad})
    with pytest.raises(RetentionViolationError):
        Compactor(config)
