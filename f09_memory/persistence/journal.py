"""The durable journal's call encoding and the ``journaled`` decorator.

``journaled`` wraps the state-changing methods of the facade and its services: in durable
mode the outermost successful call is recorded (its arguments as plain JSON) through the
durable session; nested calls are not, so a replay performs each call exactly once.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np

from f09_memory.errors import MemoryEngineError
from f09_memory.ingestion.claims import Claim
from f09_memory.schema.base import BoundaryModel

__all__ = ["DurableHook", "Journaled", "from_journal", "journaled", "to_journal"]

_F = TypeVar("_F", bound=Callable[..., Any])


class DurableHook(Protocol):
    """What ``journaled`` needs of the durable session: a nesting depth and a recorder."""

    depth: int

    def record(self, name: str, arguments: dict[str, Any]) -> None:
        """Journal the completed call ``name`` with its plain-JSON ``arguments``."""


class Journaled:
    """Base of objects whose state-changing methods are ``journaled``.

    ``_durable`` is the durable session (``None`` outside durable mode); ``journal_prefix``
    names the object in op names (``"summarization."`` for the summarization service).
    """

    _durable: DurableHook | None = None
    journal_prefix: ClassVar[str] = ""


def to_journal(value: Any) -> Any:
    """Plain JSON form of a call argument (models, claims, enums, numpy scalars)."""
    if isinstance(value, BoundaryModel):
        return value.to_json_dict()
    if isinstance(value, Claim):
        return {"__claim__": dataclasses.asdict(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): to_journal(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        return [to_journal(v) for v in items]
    if isinstance(value, np.generic):
        return value.item()
    return value


def from_journal(value: Any) -> Any:
    """Inverse of :func:`to_journal` for replay (claims come back as ``Claim``)."""
    if isinstance(value, dict):
        if "__claim__" in value:
            return Claim(**value["__claim__"])
        return {k: from_journal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_journal(v) for v in value]
    return value


def journaled(fn: _F) -> _F:
    """Journal a successful state-changing call in durable mode (outermost call only).

    A call rejected with a MemoryEngineError changed nothing and is not journaled; any
    other exception (a raising event handler in ``propagate`` mode) comes after the state
    change, so the call is journaled before it propagates. Outside durable mode the wrapper
    costs one attribute check.
    """
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(self: Journaled, *args: Any, **kwargs: Any) -> Any:
        session = self._durable
        if session is None:
            return fn(self, *args, **kwargs)
        if session.depth:
            session.depth += 1
            try:
                return fn(self, *args, **kwargs)
            finally:
                session.depth -= 1
        bound = sig.bind(self, *args, **kwargs)
        arguments = {k: v for k, v in bound.arguments.items() if k != "self"}
        for key, value in arguments.items():  # a generator would be consumed by the call
            if isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping):
                arguments[key] = list(value)
        session.depth = 1
        journal = True
        try:
            return fn(self, **arguments)
        except MemoryEngineError:
            journal = False
            raise
        finally:
            session.depth = 0
            if journal:
                session.record(self.journal_prefix + fn.__name__, arguments)

    wrapper.__journaled__ = True  # type: ignore[attr-defined]  # replay runs only these
    return wrapper  # type: ignore[return-value]
