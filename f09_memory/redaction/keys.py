"""The redaction key: what keys placeholders, how it is named without being shown.

A placeholder is ``<REDACT:sha256-`` + the first 12 hex digits of HMAC-SHA256(key, salt +
value) + ``>``. Without the key nobody can test guesses against a placeholder, so a card
number (about 10^15 candidates) or an e-mail address cannot be recovered by brute force.

- The key comes from ``MemoryConfig.redaction_key`` (a ``SecretStr``: never in ``repr``,
  ``to_json_dict``, snapshots or logs) or the ``MEMORY_REDACTION_KEY`` variable
  (``MemoryConfig.from_env``; ``MemoryEngine.load`` / ``open`` read it for a snapshot
  written with a key). It must be at least :data:`MIN_KEY_CHARS` characters.
- The config carries only its key id (:func:`key_id`: HMAC of a fixed label under the key,
  16 hex digits) in ``redaction_key_id``. The id goes into snapshots and the config
  fingerprint of the state hash, so engines with different keys have different state
  hashes and a snapshot refuses to load under another key, while the key stays secret.
- Without a key, placeholders are unkeyed: sha256(salt + value), as before keys existed
  (deterministic, so old snapshots stay consistent, but a short value can be found by brute
  force). The engine logs a warning about it once per process (:func:`warn_unkeyed`).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging

from pydantic import SecretStr

__all__ = [
    "MIN_KEY_CHARS",
    "REDACTION_KEY_ENV",
    "key_bytes",
    "key_id",
    "placeholder_digest",
    "warn_unkeyed",
]

logger = logging.getLogger("f09_memory")

REDACTION_KEY_ENV = "MEMORY_REDACTION_KEY"
"""The environment variable holding the redaction key."""

MIN_KEY_CHARS = 16
"""Shortest accepted key: use a random string (``python -c "import secrets;
print(secrets.token_urlsafe(32))"``)."""

_KEY_ID_LABEL = b"f09-memory/redaction-key-id/v1"
_DIGEST_CHARS = 12


def key_bytes(key: str | SecretStr | bytes | None) -> bytes | None:
    """The key as bytes (UTF-8 for text), or ``None`` when there is none."""
    if key is None:
        return None
    if isinstance(key, SecretStr):
        key = key.get_secret_value()
    return key if isinstance(key, bytes) else key.encode("utf-8")


def key_id(key: bytes) -> str:
    """A public name of ``key``: 16 hex digits of HMAC-SHA256(key, a fixed label).

    Equal keys give equal ids; the id does not reveal the key.
    """
    return hmac.new(key, _KEY_ID_LABEL, hashlib.sha256).hexdigest()[:16]


def placeholder_digest(value: str, key: bytes | None, salt: bytes = b"") -> str:
    """The 12 hex digits of a placeholder: keyed HMAC-SHA256, or unkeyed sha256 without key.

    Runtime complexity: O(len(value)).
    """
    data = salt + value.encode("utf-8", "surrogatepass")
    if key is None:
        return hashlib.sha256(data).hexdigest()[:_DIGEST_CHARS]
    return hmac.digest(key, data, "sha256").hex()[:_DIGEST_CHARS]


@functools.cache
def warn_unkeyed() -> None:
    """Log, once per process, that placeholders are unkeyed (no redaction key is set).

    The one process-wide state of the package: whether this warning was already logged
    (``warn_unkeyed.cache_clear()`` re-arms it).
    """
    logger.warning(
        "[MEM][REDACT] no redaction key is set: placeholders are unkeyed sha256 hashes, so "
        "a short private value (a card number, a known e-mail address) can be recovered "
        "from its placeholder by brute force; set MemoryConfig(redaction_key=...) or the "
        "%s environment variable to a random string of at least %d characters",
        REDACTION_KEY_ENV, MIN_KEY_CHARS)
