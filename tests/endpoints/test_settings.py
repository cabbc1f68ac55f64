"""ServerSettings: MEMORY_SERVER_* variables, arguments first, errors that never show values."""

from __future__ import annotations

import pytest

from f09_memory.endpoints.settings import DEFAULT_HOST, DEFAULT_PORT, ServerSettings
from f09_memory.errors import ConfigInvalidError, ErrorCode


def test_defaults_bind_loopback_with_no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORY_SERVER_TOKEN", raising=False)
    settings = ServerSettings()
    assert (DEFAULT_HOST, DEFAULT_PORT) == (settings.host, settings.port) == ("127.0.0.1", 8765)
    assert settings.token is None and not settings.token_configured
    assert {"127.0.0.1", "localhost", "::1"} == set(settings.allowed_hosts)


def test_the_environment_sets_fields_and_arguments_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_SERVER_TOKEN", "  from-the-environment  ")
    monkeypatch.setenv("MEMORY_SERVER_JOB_TIMEOUT_S", "2.5")
    settings = ServerSettings()
    assert settings.token is not None
    assert "from-the-environment" == settings.token.get_secret_value()
    assert 2.5 == settings.job_timeout_s
    assert "from-the-environment" not in repr(settings)
    assert 9.0 == ServerSettings(job_timeout_s=9).job_timeout_s
    assert ServerSettings(token="   ").token is None  # blank is no token


@pytest.mark.parametrize("values", [
    {"port": 70_000}, {"job_timeout_s": 0}, {"max_body_bytes": 10},
    {"page_limit": 500, "max_page_limit": 100}, {"surprise": 1}, {"allowed_hosts": [""]},
])
def test_bad_values_are_config_invalid_naming_the_field(values: dict[str, object]) -> None:
    with pytest.raises(ConfigInvalidError) as info:
        ServerSettings(**values)
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code


def test_a_bad_variable_is_named_but_its_value_is_not_shown(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_SERVER_PORT", "port-secret-value")
    with pytest.raises(ConfigInvalidError) as info:
        ServerSettings()
    assert "port" in str(info.value) and "port-secret-value" not in str(info.value)
