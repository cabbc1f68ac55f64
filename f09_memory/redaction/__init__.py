"""Redaction (index 12): compiled patterns (EMAIL, UUID, NUMSEQ16, custom) and the Redactor.

Modules: ``patterns`` (built-ins, ``compile_patterns``), ``redactor`` (Redactor, placeholder).
"""

from f09_memory.redaction.patterns import BUILTIN_PATTERNS, compile_patterns
from f09_memory.redaction.redactor import PLACEHOLDER_PREFIX, Redactor

__all__ = ["BUILTIN_PATTERNS", "PLACEHOLDER_PREFIX", "Redactor", "compile_patterns"]
