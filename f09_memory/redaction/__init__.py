"""Redaction (index 12): built-in and custom patterns, keyed placeholders, the Redactor.

Modules: ``patterns`` (built-ins, ``compile_patterns``), ``checks`` (Luhn, mod-97 and the
other checks a regex cannot make), ``keys`` (the redaction key, its id, the placeholder
digest), ``redactor`` (Redactor, placeholder).
"""

from f09_memory.redaction.keys import REDACTION_KEY_ENV, key_id
from f09_memory.redaction.patterns import (
    BUILTIN_PATTERNS,
    DEFAULT_PATTERNS,
    OPT_IN_PATTERNS,
    compile_patterns,
)
from f09_memory.redaction.redactor import PLACEHOLDER_PREFIX, PLACEHOLDER_RE, Redactor

__all__ = [
    "BUILTIN_PATTERNS",
    "DEFAULT_PATTERNS",
    "OPT_IN_PATTERNS",
    "PLACEHOLDER_PREFIX",
    "PLACEHOLDER_RE",
    "REDACTION_KEY_ENV",
    "Redactor",
    "compile_patterns",
    "key_id",
]
