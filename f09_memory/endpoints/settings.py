"""ServerSettings: the HTTP server's options, from arguments or ``MEMORY_SERVER_*`` variables."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from f09_memory.endpoints.guard import LOOPBACK_HOSTS
from f09_memory.errors import ErrorCode
from f09_memory.schema.base import validation_error

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "ServerSettings"]

DEFAULT_HOST = "127.0.0.1"
"""The address ``f09-memory serve`` binds by default: this machine only."""
DEFAULT_PORT = 8765
"""The port ``f09-memory serve`` listens on by default."""


class ServerSettings(BaseSettings):
    """Options of the HTTP app (:func:`~f09_memory.endpoints.app.create_app`).

    Every field can be set by a ``MEMORY_SERVER_<FIELD>`` environment variable (e.g.
    ``MEMORY_SERVER_TOKEN``, ``MEMORY_SERVER_JOB_TIMEOUT_S``); arguments win over the
    environment. A bad value raises ``ConfigInvalidError`` (``MEMORY_CONFIG_INVALID``)
    naming the field, never showing the value.

    Attributes:
        token: The bearer token that ``POST /api/redaction`` requires (``Authorization:
            Bearer <token>``). ``None`` (or empty): the toggle is refused (403), so
            unredacted text can never be switched on without a configured secret.
        host: Default bind address of ``f09-memory serve`` (127.0.0.1).
        port: Default port of ``f09-memory serve`` (8765).
        job_timeout_s: How long a request waits for the engine's owner thread before a 503.
        page_limit: ``limit`` of ``/api/memory`` when none is given.
        max_page_limit: The largest ``limit`` a snapshot or page request may ask for.
        max_search_limit: The largest ``limit`` of ``/api/memory/search``.
        max_body_bytes: The largest request body (``POST``): 413 beyond it.
        allowed_hosts: Host names the server answers to (the ``Host`` header; ``"*"``:
            any). Default: the loopback names only, which defeats DNS rebinding.
    """

    model_config = SettingsConfigDict(env_prefix="MEMORY_SERVER_", extra="forbid",
                                      hide_input_in_errors=True, frozen=True)

    token: SecretStr | None = Field(default=None, repr=False)
    host: Annotated[str, Field(min_length=1, max_length=255)] = DEFAULT_HOST
    port: Annotated[int, Field(ge=0, le=65_535)] = DEFAULT_PORT
    job_timeout_s: Annotated[float, Field(gt=0, le=600)] = 5.0
    page_limit: Annotated[int, Field(ge=1, le=100_000)] = 100
    max_page_limit: Annotated[int, Field(ge=1, le=100_000)] = 10_000
    max_search_limit: Annotated[int, Field(ge=1, le=10_000)] = 100
    max_body_bytes: Annotated[int, Field(ge=1_024, le=64 * 1024 * 1024)] = 1024 * 1024
    allowed_hosts: tuple[Annotated[str, Field(min_length=1, max_length=255)], ...] = (
        LOOPBACK_HOSTS)

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise validation_error(exc, "ServerSettings", ErrorCode.MEMORY_CONFIG_INVALID,
                                   frozenset(type(self).model_fields)) from exc

    @field_validator("token", mode="after")
    @classmethod
    def _blank_is_none(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        return SecretStr(value.get_secret_value().strip())

    @model_validator(mode="after")
    def _page_within_limit(self) -> ServerSettings:
        if self.page_limit > self.max_page_limit:
            raise ValueError("page_limit must not exceed max_page_limit")
        return self

    @property
    def token_configured(self) -> bool:
        """Whether a bearer token is set (the redaction toggle is usable)."""
        return self.token is not None
