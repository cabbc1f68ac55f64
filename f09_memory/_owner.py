"""Thread ownership: an engine belongs to one thread at a time (base layer).

The engine is not thread-safe, and is cheaper and simpler for it: no lock on any path. It
records its owner, the thread that created it (:class:`ThreadOwner`), and every public
method and property of the facade and of its summarization service checks, before it
touches anything, that it runs on that thread (:func:`owner_only`, applied to the whole
class by :func:`owned_by_thread`): a call from another thread raises
:class:`~f09_memory.errors.InputInvalidError` (``MEMORY_INPUT_INVALID``, ``details["field"]
== "thread"``) and changes nothing. The check is one ``threading.get_ident()`` compare.

A host hands an engine to another thread with ``engine.bind_thread()`` (called on the thread
that takes over, once the previous owner has stopped using it, e.g. after a worker that
built or loaded the engine passed it through a queue), or ``engine.bind_thread(thread)``.

The engine's own worker threads (the async embedding pool, the LLM call worker) run
adapter calls only and never call the facade, so they are not affected.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

from f09_memory.errors import InputInvalidError

__all__ = ["Owned", "ThreadOwner", "owned_by_thread", "owner_only"]

_F = TypeVar("_F", bound=Callable[..., Any])
_C = TypeVar("_C", bound=type)
_get_ident = threading.get_ident


class ThreadOwner:
    """The thread an engine (and its services) belongs to: the creating thread at first."""

    __slots__ = ("ident",)

    def __init__(self) -> None:
        self.ident = _get_ident()
        """``threading.get_ident()`` of the owner thread."""

    def bind(self, thread: threading.Thread | None = None) -> None:
        """Make ``thread`` (default: the calling thread) the owner.

        Raises:
            InputInvalidError: ``thread`` is not a started ``threading.Thread``.
        """
        if thread is None:
            self.ident = _get_ident()
            return
        ident = thread.ident if isinstance(thread, threading.Thread) else None
        if ident is None:
            raise InputInvalidError(
                "thread must be a started threading.Thread (or None for the calling thread)",
                details={"field": "thread"})
        self.ident = ident

    def error(self, what: str) -> InputInvalidError:
        """The error for a call of ``what`` from a thread that is not the owner."""
        owner = _name_of(self.ident)
        return InputInvalidError(
            f"{what} was called from thread {threading.current_thread().name!r}, but the "
            f"engine belongs to thread {owner!r} (the one that created it or was bound last): "
            "call the engine from that thread only, or hand it over with engine.bind_thread() "
            "on the thread that takes over; the engine is not thread-safe",
            details={"field": "thread", "ownerThread": self.ident,
                     "callingThread": _get_ident()})


def _name_of(ident: int) -> str:
    for thread in threading.enumerate():
        if thread.ident == ident:
            return thread.name
    return f"<finished thread {ident}>"


class Owned(Protocol):
    """An object whose public methods :func:`owner_only` guards: it has an ``_owner``."""

    _owner: ThreadOwner


def owner_only(fn: _F, what: str | None = None) -> _F:
    """Wrap the method ``fn`` so that it raises unless called on the owner thread.

    The check runs before ``fn`` (and before any decorator ``fn`` already carries, such as
    ``journaled``): a foreign call changes nothing. Attributes of ``fn`` (``__journaled__``,
    ``__wrapped__``) are kept.
    """
    label = what or fn.__qualname__

    @functools.wraps(fn)
    def wrapper(self: Owned, *args: Any, **kwargs: Any) -> Any:
        owner = self._owner
        if _get_ident() != owner.ident:
            raise owner.error(label)
        return fn(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def owned_by_thread(*, exclude: Iterable[str] = ()) -> Callable[[_C], _C]:
    """Class decorator: guard every public method and property with :func:`owner_only`.

    Public means a name without a leading underscore defined in the class body; class and
    static methods (constructors such as ``load``) and the names in ``exclude`` are left as
    they are. Instances must set ``_owner`` (a :class:`ThreadOwner`) first thing in
    ``__init__``.
    """
    skip = frozenset(exclude)

    def decorate(cls: _C) -> _C:
        for name, value in list(vars(cls).items()):
            if name.startswith("_") or name in skip:
                continue
            if isinstance(value, property) and value.fget is not None:
                setattr(cls, name, property(owner_only(value.fget, f"{cls.__name__}.{name}"),
                                            value.fset, value.fdel, value.__doc__))
            elif callable(value) and not isinstance(value, classmethod | staticmethod | type):
                setattr(cls, name, owner_only(value))
        return cls

    return decorate
