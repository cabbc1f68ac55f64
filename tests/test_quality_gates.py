"""Quality gates QG1 (no ``Any`` in the public API's types) and QG7 (every export documented).

QG1 walks every symbol of ``f09_memory.__all__``: a function's parameters and return, a
class's public methods and properties (its own and those of its ``f09_memory`` bases: the
methods a third-party base brings, such as pydantic's ``model_dump``, are that library's
API), ``__init__``, and its fields (pydantic ``model_fields``, dataclass fields, public
annotated attributes). Each type is resolved with ``typing.get_type_hints`` and walked
through unions, generics, ``Annotated``, ``Callable`` parameter lists and aliases; an ``Any``
anywhere fails the gate unless :data:`ALLOWED_ANY` lists the place with its reason.

QG7 checks, in every module of the package, that each name in ``__all__`` has a docstring: a
function or class its ``__doc__``, a constant or type alias defined there the string literal
right after its assignment, and each exported class its public methods and properties.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
import types
import typing
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any, get_args, get_origin, get_type_hints

import numpy as np
import pydantic
import pytest

import f09_memory
from f09_memory import JsonValue

ALLOWED_ANY: dict[str, str] = {
    "EngineBus.subscribe:handler": (
        "bus.Handler is Callable[[Any], None] so that a handler typed for one payload class "
        "(def on_created(e: RecordCreated)) can subscribe: a name pattern cannot be tied to "
        "its payload class in the type system, and Callable parameters are contravariant"
    ),
    "Explanation.model_post_init:context": (
        "pydantic generates model_post_init(self, context: Any) for a model with a private "
        "attribute (the explanation's lazily built candidates); the signature is pydantic's"
    ),
}
"""Places (``Symbol.member:parameter``) where an ``Any`` is unavoidable, with the reason."""

NUMPY_SHAPE_REASON = (
    "numpy.typing.NDArray[T] is ndarray[tuple[Any, ...], dtype[T]]: the shape parameter is "
    "numpy's own Any; the dtype parameter is still checked"
)


# --------------------------------------------------------------------------- QG1 helpers
def find_any(tp: object, seen: frozenset[int] = frozenset()) -> bool:
    """Whether ``Any`` occurs in the type ``tp`` (numpy's shape parameter excepted)."""
    if tp is Any:
        return True
    if isinstance(tp, list | tuple):  # a Callable's parameter list
        return any(find_any(t, seen) for t in tp)
    if isinstance(tp, str | bytes | int | bool | types.NoneType | types.EllipsisType):
        return False  # a Literal value, an unresolved recursive alias name, ``...``, None
    if id(tp) in seen:
        return False
    seen = seen | {id(tp)}
    value = getattr(tp, "__value__", None)  # a PEP 695 / TypeAliasType alias
    if value is not None and not isinstance(tp, type):
        return find_any(value, seen)
    args = get_args(tp)
    if get_origin(tp) is np.ndarray and args:
        args = args[1:]  # NUMPY_SHAPE_REASON
    return any(find_any(arg, seen) for arg in args)


@cache
def module_namespace() -> dict[str, object]:
    """Every package module's globals: resolves annotations that name a TYPE_CHECKING import."""
    names: dict[str, object] = vars(typing).copy()
    for info in pkgutil.walk_packages(f09_memory.__path__, "f09_memory."):
        names.update(vars(importlib.import_module(info.name)))
    return names


def hints(obj: object) -> dict[str, object]:
    try:
        return dict(get_type_hints(obj, include_extras=True))
    except NameError:
        return dict(get_type_hints(obj, localns=module_namespace(), include_extras=True))


def own_members(cls: type) -> Iterator[tuple[str, object]]:
    """Public methods/properties (and ``__init__``) defined by ``cls`` or its f09_memory bases."""
    seen: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("f09_memory."):
            continue
        for name, member in vars(klass).items():
            if name in seen or (name.startswith("_") and name != "__init__"):
                continue
            seen.add(name)
            if isinstance(member, staticmethod | classmethod):
                member = member.__func__
            if isinstance(member, property):
                member = member.fget
            if inspect.isfunction(member):
                yield name, member


def field_types(cls: type) -> dict[str, object]:
    if issubclass(cls, pydantic.BaseModel):
        return {name: info.annotation for name, info in cls.model_fields.items()}
    annotations: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.startswith("f09_memory.") and "__annotations__" in vars(klass):
            annotations.update(
                (k, v) for k, v in hints(klass).items()
                if k in vars(klass)["__annotations__"] and not k.startswith("_")
            )
    if dataclasses.is_dataclass(cls):
        names = {f.name for f in dataclasses.fields(cls)}
        return {k: v for k, v in annotations.items() if k in names}
    return annotations


def public_types() -> Iterator[tuple[str, object]]:
    """``(place, type)`` for every annotated place of the public API."""
    for symbol in f09_memory.__all__:
        obj = getattr(f09_memory, symbol)
        if inspect.isfunction(obj):
            for param, tp in hints(obj).items():
                yield f"{symbol}:{param}", tp
        elif inspect.isclass(obj):
            for field, tp in field_types(obj).items():
                yield f"{symbol}.{field}", tp
            for name, member in own_members(obj):
                for param, tp in hints(member).items():
                    if not param.startswith("_"):  # a private dataclass field's init parameter
                        yield f"{symbol}.{name}:{param}", tp


def test_qg1_no_any_in_public_signatures() -> None:
    places = list(public_types())
    assert len(places) > 300, "the walk found too little of the public API"
    offenders = sorted(place for place, tp in places if find_any(tp) and place not in ALLOWED_ANY)
    assert not offenders, (
        "Any in the public API (give a precise type: object for an unchecked input, "
        f"f09_memory.JsonValue for JSON data; or list the place in ALLOWED_ANY): {offenders}"
    )


def test_qg1_allowed_any_entries_are_all_still_needed() -> None:
    found = {place for place, tp in public_types() if find_any(tp)}
    assert set(ALLOWED_ANY) <= found, f"stale ALLOWED_ANY entries: {set(ALLOWED_ANY) - found}"


def _sample(a: Any, b: list[dict[str, Any]], c: Callable[[Any], None]) -> None: ...


def _clean(a: object, b: np.typing.NDArray[np.float32], c: Callable[..., None],
           d: JsonValue, e: typing.Literal["x"]) -> int | None: ...


@pytest.mark.parametrize("param", ["a", "b", "c"])
def test_qg1_walker_finds_a_nested_any(param: str) -> None:
    assert find_any(get_type_hints(_sample)[param])


def test_qg1_walker_accepts_precise_types() -> None:
    assert not any(find_any(tp) for tp in get_type_hints(_clean).values())
    assert find_any(np.ndarray[tuple[int], np.dtype[Any]])  # only the shape is excused


# --------------------------------------------------------------------------- QG7
def modules() -> Iterator[types.ModuleType]:
    yield f09_memory
    for info in pkgutil.walk_packages(f09_memory.__path__, "f09_memory."):
        yield importlib.import_module(info.name)


def undocumented_assignments(source: str, exported: set[str]) -> list[str]:
    """Names of ``exported`` assigned at the top of ``source`` with no string literal after."""
    body = ast.parse(source).body
    missing = []
    for node, after in zip(body, [*body[1:], None], strict=True):
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        else:
            continue
        documented = (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                      and isinstance(after.value.value, str) and after.value.value.strip())
        missing += [n for n in names if n in exported and n != "__all__" and not documented]
    return missing


def test_qg7_every_exported_symbol_has_a_docstring() -> None:
    missing = []
    for module in modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            documented = bool((getattr(obj, "__doc__", None) or "").strip())
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and not documented:
                missing.append(f"{module.__name__}.{name}")
        exported = set(getattr(module, "__all__", ()))
        missing += [f"{module.__name__}.{n}"
                    for n in undocumented_assignments(inspect.getsource(module), exported)]
    assert not missing, f"exported without a docstring: {sorted(missing)}"


def test_qg7_exported_classes_document_their_public_methods_and_properties() -> None:
    missing = set()
    for module in modules():
        for name in getattr(module, "__all__", ()):
            cls = getattr(module, name)
            if not inspect.isclass(cls) or not cls.__module__.startswith("f09_memory."):
                continue
            for member, _ in own_members(cls):
                if member != "__init__" and not inspect.getdoc(getattr(cls, member)):
                    missing.add(f"{cls.__module__}.{cls.__qualname__}.{member}")
    assert not missing, f"public methods/properties without a docstring: {sorted(missing)}"


def test_qg7_checks_catch_an_undocumented_constant() -> None:
    source = 'A = 1\n"""One."""\nB: int = 2\nC = 3\nD = 4\n""\n_E = 5\n'
    assert ["B", "D"] == undocumented_assignments(source, {"A", "B", "D", "_E"} - {"_E"})
    assert ["C"] == undocumented_assignments(source, {"C"})
