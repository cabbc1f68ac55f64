from __future__ import annotations

import pytest

from f09_memory import ErrorCode, MemoryEngineError
from f09_memory import errors as E

SPEC_CODES = {
    "MEMORY_CONFIG_INVALID", "MEMORY_RECORD_NOT_FOUND", "MEMORY_CAPACITY_EXCEEDED",
    "MEMORY_SUMMARY_LOCKED", "MEMORY_SUMMARY_FAILED", "MEMORY_EMBEDDING_UNAVAILABLE",
    "MEMORY_EMBEDDING_FAILED", "MEMORY_RETRIEVAL_EMPTY", "MEMORY_REDACTION_PATTERN_INVALID",
    "MEMORY_RETENTION_VIOLATION", "MEMORY_TOKEN_BUDGET_UNDEFINED",
}


def test_all_spec_codes_exist_plus_input_snapshot_and_storage() -> None:
    assert SPEC_CODES | {"MEMORY_INPUT_INVALID", "MEMORY_SNAPSHOT_INVALID",
                         "MEMORY_STORAGE_FAILED"} == {c.value for c in ErrorCode}


@pytest.mark.parametrize("code", list(ErrorCode))
def test_error_for_builds_the_subclass_with_that_code(code: ErrorCode) -> None:
    err = E.error_for(code, "do the thing", {"k": 1})
    assert isinstance(err, MemoryEngineError)
    assert code == err.code
    assert {"code": code.value, "message": "do the thing", "details": {"k": 1}} == err.to_dict()
    assert f"[{code.value}] do the thing" == str(err)


def test_value_errors_are_also_builtin_value_errors() -> None:
    assert issubclass(E.ConfigInvalidError, ValueError)
    assert issubclass(E.InputInvalidError, ValueError)
    assert issubclass(E.TokenBudgetUndefinedError, ValueError)
    assert issubclass(E.RecordNotFoundError, KeyError)
    assert issubclass(E.StorageFailedError, OSError)
    assert "[MEMORY_RECORD_NOT_FOUND] gone" == str(E.RecordNotFoundError("gone"))
