from __future__ import annotations

from pathlib import Path

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.config import ScoreWeights
from f09_memory.config.env import ENV_FIELDS
from f09_memory.core.digest import config_fingerprint
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.redaction import DEFAULT_PATTERNS
from f09_memory.schema import MemoryLayer, PressureState, Purpose, Strategy


def test_defaults_are_the_spec_section_21_values() -> None:
    c = MemoryConfig()
    assert (1200, 900_000, 60_000, 25, 3_600_000) == (
        c.episodic_max, c.episodic_window, c.summarization_min_interval_ms,
        c.summarization_batch_size, c.decay_half_life_ms)
    assert (2.5, 0.55, 384, 1800) == (c.importance_boost, c.throttle_compression_ratio,
                                      c.embedding_dim, c.max_context_tokens)
    assert DEFAULT_PATTERNS == c.redact_patterns
    assert {"EMAIL", "UUID", "NUMSEQ16"} < set(c.redact_patterns)  # the spec's, and more
    rp = c.retention_policy
    assert (400, 300, 250) == (rp.semantic_max, rp.social_max, rp.procedural_max)


def test_json_uses_spec_camel_case_field_names() -> None:
    js = MemoryConfig().to_json_dict()
    for key in ["episodicWindow", "episodicMax", "summarizationBatchSize",
                "summarizationMinIntervalMs", "decayHalfLifeMs", "importanceBoost",
                "throttleCompressionRatio", "embeddingDim", "maxContextTokens",
                "redactPatterns", "retentionPolicy"]:
        assert key in js, key
    assert MemoryConfig() == MemoryConfig.parse(js)


def test_tables_cover_every_purpose_strategy_layer_and_pressure() -> None:
    s = MemoryConfig().scoring
    for p in Purpose:
        assert set(Strategy) == set(s.weights[p])
        assert set(MemoryLayer) == set(s.layer_weights[p])
        assert s.layer_policy[p]
    assert set(PressureState) == set(s.pressure)
    assert s.pressure[PressureState.THROTTLE].compress
    assert not s.pressure[PressureState.NORMAL].compress


@pytest.mark.parametrize(("field", "value", "needle"), [
    ("episodic_max", 0, "greater than or equal to 1"),
    ("importance_boost", 0.5, "greater than or equal to 1"),
    ("throttle_compression_ratio", 1.5, "less than or equal to 1"),
    ("decay_half_life_ms", 0, "greater than or equal to 1"),
    ("max_context_tokens", "lots", "valid integer"),
    ("embedding_dim", 1, "greater than or equal to 2"),
    ("bus_handler_errors", "ignore", "isolate"),
])
def test_out_of_range_values_raise_config_invalid_naming_the_field(
    field: str, value: object, needle: str
) -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig(**{field: value})
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    assert field in info.value.message
    assert needle in info.value.message


def test_nested_tables_are_validated() -> None:
    with pytest.raises(MemoryEngineError) as info:
        ScoreWeights(importance=0, recency=0, semantic=0, structural=0)
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    with pytest.raises(MemoryEngineError):
        MemoryConfig(scoring={"layer_policy": {"dialog": ()}})


@pytest.mark.parametrize("pattern", ["(unclosed", "a*", "", "[z-a]"])
def test_bad_redaction_pattern_raises_its_own_code(pattern: str) -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig(redact_patterns=("EMAIL", pattern))
    assert ErrorCode.MEMORY_REDACTION_PATTERN_INVALID == info.value.code


def test_from_env_reads_every_section_21_variable() -> None:
    env = {
        "MEMORY_EPISODIC_MAX": "50", "MEMORY_EPISODIC_WINDOW_MS": "1000",
        "MEMORY_SUMMARIZATION_MIN_INTERVAL_MS": "5", "MEMORY_SUMMARIZATION_BATCH": "10",
        "MEMORY_DECAY_HALFLIFE_MS": "7", "MEMORY_IMPORTANCE_BOOST": "3.5",
        "MEMORY_THROTTLE_COMPRESSION_RATIO": "0.4", "MEMORY_EMBEDDING_DIM": "64",
        "MEMORY_MAX_CONTEXT_TOKENS": "900", "MEMORY_REDACT_PATTERNS": "EMAIL, secret-\\d+ ,",
        "MEMORY_REDACTION_MODE": "off", "MEMORY_RETENTION_SEMANTIC_MAX": "4",
        "MEMORY_RETENTION_SOCIAL_MAX": "3", "MEMORY_RETENTION_PROCEDURAL_MAX": "2",
        "MEMORY_DEDUP_WINDOW_MS": "60000", "MEMORY_REDACTION_KEY": " env-key-0123456789abc ",
        "UNRELATED": "x",
    }
    assert {k for k in env if k.startswith("MEMORY_")} <= set(ENV_FIELDS)
    c = MemoryConfig.from_env(env)
    assert 60_000 == c.dedup_window_ms
    assert (50, 1000, 5, 10, 7, 3.5, 0.4, 64, 900) == (
        c.episodic_max, c.episodic_window, c.summarization_min_interval_ms,
        c.summarization_batch_size, c.decay_half_life_ms, c.importance_boost,
        c.throttle_compression_ratio, c.embedding_dim, c.max_context_tokens)
    assert ("EMAIL", "secret-\\d+") == c.redact_patterns
    assert not c.redaction_mode
    assert c.redaction_key is not None
    assert "env-key-0123456789abc" == c.redaction_key.get_secret_value()
    assert (4, 3, 2) == (c.retention_policy.semantic_max, c.retention_policy.social_max,
                         c.retention_policy.procedural_max)


def test_from_env_reads_the_layer_variables() -> None:
    env = {
        "MEMORY_PERCEPTION_RADIUS": "4.5", "MEMORY_PERCEPTION_MAX_PERCEIVERS": "8",
        "MEMORY_SPATIAL_CELL_SIZE": "2", "MEMORY_SPATIAL_PROXIMITY_SCALE": "30",
        "MEMORY_SOCIAL_RECORDS": "off", "MEMORY_SOCIAL_TRUST_ALPHA": "0.25",
        "MEMORY_PROCEDURAL_ENABLED": "no", "MEMORY_PROCEDURAL_MIN_SUPPORT": "5",
        "MEMORY_PROCEDURAL_WINDOW_MS": "1000",
    }
    section_21 = {"MEMORY_EPISODIC_MAX", "MEMORY_EPISODIC_WINDOW_MS",
                  "MEMORY_SUMMARIZATION_MIN_INTERVAL_MS", "MEMORY_SUMMARIZATION_BATCH",
                  "MEMORY_DECAY_HALFLIFE_MS", "MEMORY_IMPORTANCE_BOOST",
                  "MEMORY_THROTTLE_COMPRESSION_RATIO", "MEMORY_EMBEDDING_DIM",
                  "MEMORY_MAX_CONTEXT_TOKENS", "MEMORY_REDACT_PATTERNS", "MEMORY_REDACTION_MODE",
                  "MEMORY_REDACTION_KEY", "MEMORY_RETENTION_SEMANTIC_MAX",
                  "MEMORY_RETENTION_SOCIAL_MAX", "MEMORY_RETENTION_PROCEDURAL_MAX",
                  "MEMORY_DEDUP_WINDOW_MS"}
    assert set(ENV_FIELDS) == section_21 | set(env)
    c = MemoryConfig.from_env(env)
    assert (4.5, 8) == (c.perception.radius, c.perception.max_perceivers)
    assert (2.0, 30.0) == (c.spatial.cell_size, c.spatial.proximity_scale)
    assert (False, 0.25) == (c.social.records, c.social.trust_alpha)
    assert (False, 5, 1000) == (c.procedural.enabled, c.procedural.min_support,
                                c.procedural.window_ms)
    default = MemoryConfig()
    assert default.procedural.max_n == c.procedural.max_n  # the rest of a section is default
    assert default.perception.rules == c.perception.rules


def test_from_env_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_EPISODIC_MAX", "77")
    assert 77 == MemoryConfig.from_env().episodic_max


@pytest.mark.parametrize(("var", "value"), [
    ("MEMORY_EPISODIC_MAX", "many"), ("MEMORY_EPISODIC_MAX", "-1"),
    ("MEMORY_IMPORTANCE_BOOST", "x"), ("MEMORY_REDACTION_MODE", "maybe"),
    ("MEMORY_THROTTLE_COMPRESSION_RATIO", "2"), ("MEMORY_PROCEDURAL_ENABLED", "sometimes"),
    ("MEMORY_SPATIAL_CELL_SIZE", "0"), ("MEMORY_PERCEPTION_MAX_PERCEIVERS", "1.5"),
])
def test_bad_env_values_raise_config_invalid(var: str, value: str) -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig.from_env({var: value})
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    assert repr(value) not in str(info.value)  # names the variable and the rule, not the value


def test_bad_env_pattern_raises_redaction_code() -> None:
    with pytest.raises(MemoryEngineError) as info:
        MemoryConfig.from_env({"MEMORY_REDACT_PATTERNS": "EMAIL,(oops"})
    assert ErrorCode.MEMORY_REDACTION_PATTERN_INVALID == info.value.code


def test_replace_validates_and_keeps_the_rest() -> None:
    c = MemoryConfig().replace(episodic_max=5, maxContextTokens=100)
    assert (5, 384, 100) == (c.episodic_max, c.embedding_dim, c.max_context_tokens)
    with pytest.raises(MemoryEngineError):
        c.replace(episodic_max=-1)


@pytest.mark.parametrize("changes", [{"summarization_timeout_ms": None}, {"hard_cap_slack": None},
                                     {"retention_policy": {"semantic_max": None}}])
def test_a_none_setting_survives_json_snapshots_and_the_fingerprint(
        changes: dict[str, object], tmp_path: Path) -> None:
    cfg = MemoryConfig(**changes)  # type: ignore[arg-type]
    assert cfg == MemoryConfig.parse(cfg.to_json_dict())
    assert config_fingerprint(cfg) != config_fingerprint(MemoryConfig())
    engine = MemoryEngine(cfg, embedder=None)
    loaded = MemoryEngine.load(engine.save(tmp_path / "s.f09"), embedder=None)
    assert cfg == loaded.config and engine.state_hash() == loaded.state_hash()
