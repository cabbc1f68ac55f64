"""The error taxonomy of the engine (spec section 11).

Every mistake a caller can make surfaces as a :class:`MemoryEngineError` carrying an
:class:`ErrorCode`, a message that says what to do, and a ``details`` mapping. A rejected
call leaves the engine state unchanged.

Hierarchy::

    MemoryEngineError
    ├── ConfigInvalidError            (ValueError)   MEMORY_CONFIG_INVALID
    ├── InputInvalidError             (ValueError)   MEMORY_INPUT_INVALID
    ├── RecordNotFoundError           (KeyError)     MEMORY_RECORD_NOT_FOUND
    ├── CapacityExceededError                        MEMORY_CAPACITY_EXCEEDED
    ├── SummaryLockedError                           MEMORY_SUMMARY_LOCKED
    ├── SummaryFailedError                           MEMORY_SUMMARY_FAILED
    ├── EmbeddingUnavailableError                    MEMORY_EMBEDDING_UNAVAILABLE
    ├── EmbeddingFailedError                         MEMORY_EMBEDDING_FAILED
    ├── RetrievalEmptyError                          MEMORY_RETRIEVAL_EMPTY
    ├── RedactionPatternInvalidError  (ValueError)   MEMORY_REDACTION_PATTERN_INVALID
    ├── RetentionViolationError                      MEMORY_RETENTION_VIOLATION
    ├── TokenBudgetUndefinedError     (ValueError)   MEMORY_TOKEN_BUDGET_UNDEFINED
    ├── SnapshotInvalidError          (ValueError)   MEMORY_SNAPSHOT_INVALID
    └── StorageFailedError            (OSError)      MEMORY_STORAGE_FAILED

Three codes are added to the spec's eleven: ``MEMORY_INPUT_INVALID`` for a malformed argument
(empty content, importance outside 0..1, unknown layer), which is neither a configuration
error nor any other listed condition; ``MEMORY_SNAPSHOT_INVALID`` for a snapshot file or
durable database that is truncated, corrupted, foreign or of another format version; and
``MEMORY_STORAGE_FAILED`` for a durable database that cannot be written (disk full, I/O
error, or held by another writer): the call is undone and the engine works again once the
cause is gone; ``save`` raises it too when its snapshot file cannot be written (missing or
read-only folder, full disk), leaving no partial file.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from f09_memory.json_types import JsonValue

__all__ = [
    "CapacityExceededError",
    "ConfigInvalidError",
    "EmbeddingFailedError",
    "EmbeddingUnavailableError",
    "ErrorCode",
    "InputInvalidError",
    "MemoryEngineError",
    "RecordNotFoundError",
    "RedactionPatternInvalidError",
    "RetentionViolationError",
    "RetrievalEmptyError",
    "SnapshotInvalidError",
    "StorageFailedError",
    "SummaryFailedError",
    "SummaryLockedError",
    "TokenBudgetUndefinedError",
    "error_for",
]


class ErrorCode(StrEnum):
    """The taxonomy codes; the string value is the spec's code name."""

    MEMORY_CONFIG_INVALID = "MEMORY_CONFIG_INVALID"
    MEMORY_RECORD_NOT_FOUND = "MEMORY_RECORD_NOT_FOUND"
    MEMORY_CAPACITY_EXCEEDED = "MEMORY_CAPACITY_EXCEEDED"
    MEMORY_SUMMARY_LOCKED = "MEMORY_SUMMARY_LOCKED"
    MEMORY_SUMMARY_FAILED = "MEMORY_SUMMARY_FAILED"
    MEMORY_EMBEDDING_UNAVAILABLE = "MEMORY_EMBEDDING_UNAVAILABLE"
    MEMORY_EMBEDDING_FAILED = "MEMORY_EMBEDDING_FAILED"
    MEMORY_RETRIEVAL_EMPTY = "MEMORY_RETRIEVAL_EMPTY"
    MEMORY_REDACTION_PATTERN_INVALID = "MEMORY_REDACTION_PATTERN_INVALID"
    MEMORY_RETENTION_VIOLATION = "MEMORY_RETENTION_VIOLATION"
    MEMORY_TOKEN_BUDGET_UNDEFINED = "MEMORY_TOKEN_BUDGET_UNDEFINED"
    MEMORY_INPUT_INVALID = "MEMORY_INPUT_INVALID"
    MEMORY_SNAPSHOT_INVALID = "MEMORY_SNAPSHOT_INVALID"
    MEMORY_STORAGE_FAILED = "MEMORY_STORAGE_FAILED"


class MemoryEngineError(Exception):
    """Root of every error the engine raises for a caller's mistake or a failed operation.

    Attributes:
        code: The taxonomy code.
        message: What went wrong and what to do about it.
        details: Structured context (field names, accepted ranges, ids); JSON-safe values.
    """

    code: ErrorCode = ErrorCode.MEMORY_INPUT_INVALID

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode | None = None,
        details: Mapping[str, JsonValue] | None = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.details: dict[str, JsonValue] = dict(details or {})

    def __str__(self) -> str:
        return f"[{self.code.value}] {self.message}"

    def to_dict(self) -> dict[str, JsonValue]:
        """Return a JSON-safe form: ``{"code", "message", "details"}``."""
        return {"code": self.code.value, "message": self.message, "details": self.details}


class ConfigInvalidError(MemoryEngineError, ValueError):
    """A configuration value is out of its accepted range (MEMORY_CONFIG_INVALID)."""

    code = ErrorCode.MEMORY_CONFIG_INVALID


class InputInvalidError(MemoryEngineError, ValueError):
    """An argument to a public call is malformed (MEMORY_INPUT_INVALID)."""

    code = ErrorCode.MEMORY_INPUT_INVALID


class RecordNotFoundError(MemoryEngineError, KeyError):
    """No live record has the requested id (MEMORY_RECORD_NOT_FOUND)."""

    code = ErrorCode.MEMORY_RECORD_NOT_FOUND

    def __str__(self) -> str:  # KeyError would repr() the message
        return MemoryEngineError.__str__(self)


class CapacityExceededError(MemoryEngineError):
    """A hard capacity ceiling would be passed (MEMORY_CAPACITY_EXCEEDED)."""

    code = ErrorCode.MEMORY_CAPACITY_EXCEEDED


class SummaryLockedError(MemoryEngineError):
    """A summarization task is already running for the agent (MEMORY_SUMMARY_LOCKED)."""

    code = ErrorCode.MEMORY_SUMMARY_LOCKED


class SummaryFailedError(MemoryEngineError):
    """Summarization could not produce a summary (MEMORY_SUMMARY_FAILED)."""

    code = ErrorCode.MEMORY_SUMMARY_FAILED


class EmbeddingUnavailableError(MemoryEngineError):
    """No embedding provider is configured (MEMORY_EMBEDDING_UNAVAILABLE)."""

    code = ErrorCode.MEMORY_EMBEDDING_UNAVAILABLE


class EmbeddingFailedError(MemoryEngineError):
    """The embedding provider raised or returned a malformed result (MEMORY_EMBEDDING_FAILED)."""

    code = ErrorCode.MEMORY_EMBEDDING_FAILED


class RetrievalEmptyError(MemoryEngineError):
    """A retrieval that required results found none (MEMORY_RETRIEVAL_EMPTY)."""

    code = ErrorCode.MEMORY_RETRIEVAL_EMPTY


class RedactionPatternInvalidError(MemoryEngineError, ValueError):
    """A custom redaction pattern does not compile or matches empty text."""

    code = ErrorCode.MEMORY_REDACTION_PATTERN_INVALID


class RetentionViolationError(MemoryEngineError):
    """A retention setting would break a protected minimum (MEMORY_RETENTION_VIOLATION)."""

    code = ErrorCode.MEMORY_RETENTION_VIOLATION


class TokenBudgetUndefinedError(MemoryEngineError, ValueError):
    """A retrieval has no usable token budget (MEMORY_TOKEN_BUDGET_UNDEFINED)."""

    code = ErrorCode.MEMORY_TOKEN_BUDGET_UNDEFINED


class SnapshotInvalidError(MemoryEngineError, ValueError):
    """A snapshot cannot be loaded: truncated, corrupted, foreign or another version."""

    code = ErrorCode.MEMORY_SNAPSHOT_INVALID


class StorageFailedError(MemoryEngineError, OSError):
    """The durable database or a snapshot file cannot be written (disk full, I/O error...).

    The call that hit it was undone (the engine holds the last committed state); retry once
    the cause is gone.
    """

    code = ErrorCode.MEMORY_STORAGE_FAILED


_BY_CODE: dict[ErrorCode, type[MemoryEngineError]] = {
    cls.code: cls
    for cls in (
        ConfigInvalidError,
        InputInvalidError,
        RecordNotFoundError,
        CapacityExceededError,
        SummaryLockedError,
        SummaryFailedError,
        EmbeddingUnavailableError,
        EmbeddingFailedError,
        RetrievalEmptyError,
        RedactionPatternInvalidError,
        RetentionViolationError,
        TokenBudgetUndefinedError,
        SnapshotInvalidError,
        StorageFailedError,
    )
}


def error_for(
    code: ErrorCode, message: str, details: Mapping[str, JsonValue] | None = None
) -> MemoryEngineError:
    """Build the subclass that matches ``code`` (for code paths that choose the code at runtime).

    Args:
        code: The taxonomy code.
        message: What went wrong and what to do.
        details: Structured context.

    Returns:
        An instance of the matching :class:`MemoryEngineError` subclass.
    """
    return _BY_CODE[code](message, details=details)
