"""Reading ``MEMORY_*`` environment variables (spec section 21) with pydantic-settings."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from f09_memory.errors import ConfigInvalidError

__all__ = ["ENV_FIELDS", "MemoryEnv", "read_env"]

ENV_FIELDS: dict[str, tuple[str, ...]] = {
    "MEMORY_EPISODIC_MAX": ("episodic_max",),
    "MEMORY_EPISODIC_WINDOW_MS": ("episodic_window",),
    "MEMORY_SUMMARIZATION_MIN_INTERVAL_MS": ("summarization_min_interval_ms",),
    "MEMORY_SUMMARIZATION_BATCH": ("summarization_batch_size",),
    "MEMORY_DECAY_HALFLIFE_MS": ("decay_half_life_ms",),
    "MEMORY_IMPORTANCE_BOOST": ("importance_boost",),
    "MEMORY_THROTTLE_COMPRESSION_RATIO": ("throttle_compression_ratio",),
    "MEMORY_EMBEDDING_DIM": ("embedding_dim",),
    "MEMORY_MAX_CONTEXT_TOKENS": ("max_context_tokens",),
    "MEMORY_REDACT_PATTERNS": ("redact_patterns",),
    "MEMORY_REDACTION_MODE": ("redaction_mode",),
    "MEMORY_REDACTION_KEY": ("redaction_key",),
    "MEMORY_RETENTION_SEMANTIC_MAX": ("retention_policy", "semantic_max"),
    "MEMORY_RETENTION_SOCIAL_MAX": ("retention_policy", "social_max"),
    "MEMORY_RETENTION_PROCEDURAL_MAX": ("retention_policy", "procedural_max"),
    "MEMORY_DEDUP_WINDOW_MS": ("dedup_window_ms",),
    # the game-world layers (not in spec section 21: their main knobs)
    "MEMORY_PERCEPTION_RADIUS": ("perception", "radius"),
    "MEMORY_PERCEPTION_MAX_PERCEIVERS": ("perception", "max_perceivers"),
    "MEMORY_SPATIAL_CELL_SIZE": ("spatial", "cell_size"),
    "MEMORY_SPATIAL_PROXIMITY_SCALE": ("spatial", "proximity_scale"),
    "MEMORY_SOCIAL_RECORDS": ("social", "records"),
    "MEMORY_SOCIAL_TRUST_ALPHA": ("social", "trust_alpha"),
    "MEMORY_PROCEDURAL_ENABLED": ("procedural", "enabled"),
    "MEMORY_PROCEDURAL_MIN_SUPPORT": ("procedural", "min_support"),
    "MEMORY_PROCEDURAL_WINDOW_MS": ("procedural", "window_ms"),
}
"""Each variable and the config field path it sets."""

_INT_FIELDS = {
    "episodic_max", "episodic_window", "summarization_min_interval_ms",
    "summarization_batch_size", "decay_half_life_ms", "embedding_dim", "max_context_tokens",
    "semantic_max", "social_max", "procedural_max", "dedup_window_ms", "max_perceivers",
    "min_support", "window_ms",
}
_FLOAT_FIELDS = {"importance_boost", "throttle_compression_ratio", "radius", "cell_size",
                 "proximity_scale", "trust_alpha"}
_BOOL_FIELDS = {"redaction_mode", "records", "enabled"}


class MemoryEnv(BaseSettings):
    """The raw ``MEMORY_*`` strings; conversion and range checks happen in MemoryConfig."""

    model_config = SettingsConfigDict(env_prefix="MEMORY_", case_sensitive=True, extra="ignore")

    EPISODIC_MAX: str | None = None
    DEDUP_WINDOW_MS: str | None = None
    EPISODIC_WINDOW_MS: str | None = None
    SUMMARIZATION_MIN_INTERVAL_MS: str | None = None
    SUMMARIZATION_BATCH: str | None = None
    DECAY_HALFLIFE_MS: str | None = None
    IMPORTANCE_BOOST: str | None = None
    THROTTLE_COMPRESSION_RATIO: str | None = None
    EMBEDDING_DIM: str | None = None
    MAX_CONTEXT_TOKENS: str | None = None
    REDACT_PATTERNS: str | None = None
    REDACTION_MODE: str | None = None
    REDACTION_KEY: SecretStr | None = None
    """The redaction key (a secret: never shown, never echoed in an error)."""
    RETENTION_SEMANTIC_MAX: str | None = None
    RETENTION_SOCIAL_MAX: str | None = None
    RETENTION_PROCEDURAL_MAX: str | None = None
    PERCEPTION_RADIUS: str | None = None
    PERCEPTION_MAX_PERCEIVERS: str | None = None
    SPATIAL_CELL_SIZE: str | None = None
    SPATIAL_PROXIMITY_SCALE: str | None = None
    SOCIAL_RECORDS: str | None = None
    SOCIAL_TRUST_ALPHA: str | None = None
    PROCEDURAL_ENABLED: str | None = None
    PROCEDURAL_MIN_SUPPORT: str | None = None
    PROCEDURAL_WINDOW_MS: str | None = None


def _convert(var: str, field: str, raw: str) -> Any:
    text = raw.strip()
    try:
        if field in _INT_FIELDS:
            return int(text)
        if field in _FLOAT_FIELDS:
            return float(text)
    except ValueError:
        kind = "an integer" if field in _INT_FIELDS else "a number"
        raise ConfigInvalidError(
            f"{var} is not {kind}; set it to {kind} or unset it",
            details={"variable": var, "field": field},
        ) from None
    if field == "redact_patterns":
        return tuple(p.strip() for p in text.split(",") if p.strip())
    if field in _BOOL_FIELDS:
        flag = text.upper()
        if flag in {"ON", "TRUE", "1", "YES"}:
            return True
        if flag in {"OFF", "FALSE", "0", "NO"}:
            return False
        raise ConfigInvalidError(
            f"{var} must be ON or OFF (or true/false, 1/0, yes/no)",
            details={"variable": var, "field": field, "accepted": ["ON", "OFF"]},
        )
    return text


def read_env(environ: dict[str, str] | None, *, env_file: str | None = None) -> dict[str, Any]:
    """Collect config overrides from the environment (or ``environ``) as a nested mapping.

    Raises:
        ConfigInvalidError: A variable cannot be converted to its field's type.
    """
    if environ is not None:
        raw = {k.removeprefix("MEMORY_"): v for k, v in environ.items() if k.startswith("MEMORY_")}
        values = MemoryEnv.model_validate(raw).model_dump()
    else:
        values = MemoryEnv(_env_file=env_file).model_dump()
    out: dict[str, Any] = {}
    for var, path in ENV_FIELDS.items():
        raw_value = values.get(var.removeprefix("MEMORY_"))
        if isinstance(raw_value, SecretStr):  # the key: passed on as a secret, never parsed
            key = raw_value.get_secret_value().strip()
            if key:
                out[path[-1]] = SecretStr(key)
            continue
        if raw_value is None:
            continue
        target = out
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = _convert(var, path[-1], raw_value)
    return out
