"""The ``journaled`` decorator: where a durable engine's calls begin and end.

``journaled`` wraps the state-changing methods of the facade and its services. In durable
mode the outermost call is a transaction: when it returns, the effects it had (recorded as
they happened, see ``persistence.effects``) are journaled before the result is returned;
when it raises, whatever it changed is undone. Nested calls (a call made by an event
handler inside another) belong to the outer call's row.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, TypeVar

__all__ = ["DurableHook", "Journaled", "journaled"]

_F = TypeVar("_F", bound=Callable[..., Any])


class DurableHook(Protocol):
    """What ``journaled`` needs of the durable session."""

    depth: int

    def complete(self, call: str) -> None:
        """Journal the effects of the completed outermost call ``call``."""

    def abort(self) -> None:
        """Undo the effects of an outermost call that raised."""


class Journaled:
    """Base of objects whose state-changing methods are ``journaled``.

    ``_durable`` is the durable session (``None`` outside durable mode); ``journal_prefix``
    names the object in the row's call label (``"summarization."``).
    """

    _durable: DurableHook | None = None
    journal_prefix: ClassVar[str] = ""


def journaled(fn: _F) -> _F:
    """Make ``fn`` a durable transaction in durable mode (outermost call only).

    Outside durable mode the wrapper costs one attribute check.
    """
    name = fn.__name__

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
        session.depth = 1
        try:
            result = fn(self, *args, **kwargs)
        except BaseException:
            session.depth = 0
            session.abort()
            raise
        session.depth = 0
        session.complete(self.journal_prefix + name)
        return result

    return wrapper  # type: ignore[return-value]
