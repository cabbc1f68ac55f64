"""The boundary model base: camelCase aliases, strict validation, taxonomy errors."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar, Self, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from f09_memory.errors import ErrorCode, MemoryEngineError, error_for
from f09_memory.json_types import JsonValue

__all__ = [
    "BoundaryModel",
    "build_models",
    "field_names",
    "trusted",
    "trusted_factory",
    "validation_error",
]

_M = TypeVar("_M", bound=BaseModel)
_setattr = object.__setattr__
_FIELDS_SET: dict[type[BaseModel], set[str]] = {}


def trusted(cls: type[_M], values: dict[str, Any]) -> _M:
    """Build ``cls`` from already-valid values without validation (the hot-path constructor).

    ``values`` must name every field of ``cls`` with a value of the right type; the engine
    uses this only for data it has validated itself (a test checks the result equals the
    validated model). About 4x cheaper than ``model_construct``.
    """
    obj = cls.__new__(cls)
    _setattr(obj, "__dict__", values)
    fields_set = _FIELDS_SET.get(cls)
    if fields_set is None or len(values) != len(fields_set):
        fields_set = set(values)
        if len(values) == len(cls.model_fields):
            _FIELDS_SET[cls] = fields_set
    # Every field is set, so one shared set per class serves every instance (pydantic only
    # reads it; a copy with changes gets a set of its own).
    _setattr(obj, "__pydantic_fields_set__", fields_set)
    _setattr(obj, "__pydantic_extra__", None)
    _setattr(obj, "__pydantic_private__", None)
    return obj


def trusted_factory(cls: type[_M]) -> Callable[[dict[str, Any]], _M]:
    """:func:`trusted` for ``cls``, specialized: the returned function builds an instance.

    Its ``values`` must name every field of ``cls`` (the function does not check): the
    per-call lookups of :func:`trusted` are done once, here. For the engine's own hot paths.
    """
    fields_set = set(cls.model_fields)
    new = cls.__new__

    def make(values: dict[str, Any]) -> _M:
        obj = new(cls)
        _setattr(obj, "__dict__", values)
        _setattr(obj, "__pydantic_fields_set__", fields_set)
        _setattr(obj, "__pydantic_extra__", None)
        _setattr(obj, "__pydantic_private__", None)
        return obj

    return make


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "none", "list", "dict", "tuple",
                        "constrained-str", "[key]"})
_TYPE_TAG_PREFIXES = ("function-", "is-instance[", "tagged-union[", "lax-", "json-or-python[",
                      "chain[", "nullable[", "union[", "literal[", "enum[")


def field_names(model: type[BaseModel]) -> frozenset[str]:
    """Every field name and alias of ``model`` and of the models its fields hold."""
    names: set[str] = set()
    todo: list[Any] = [model]
    seen: set[Any] = set()
    while todo:
        item = todo.pop()
        if item in seen:
            continue
        seen.add(item)
        if isinstance(item, type) and issubclass(item, BaseModel):
            for name, info in item.model_fields.items():
                names.add(name)
                if info.alias:
                    names.add(info.alias)
                todo.append(info.annotation)
        else:
            todo.extend(get_args(item))
    return frozenset(names)


def _loc_part(part: Any, known: frozenset[str] | None) -> str:
    """One element of an error location; a mapping key (caller data) becomes ``<key>``."""
    if isinstance(part, int) or known is None:
        return str(part)
    text = str(part)
    if text in known or text in _TYPE_TAGS or text.startswith(_TYPE_TAG_PREFIXES):
        return text
    return "<key>"


def validation_error(
    exc: ValidationError, model: str, code: ErrorCode = ErrorCode.MEMORY_INPUT_INVALID,
    known: frozenset[str] | None = None,
) -> MemoryEngineError:
    """Translate a pydantic ``ValidationError`` into a taxonomy error naming each bad field.

    Args:
        exc: The pydantic error.
        model: The model's name, for the message.
        code: The taxonomy code to raise.
        known: The field names of the model (:func:`field_names`); a location part that is
            none of them nor a pydantic type tag is a mapping key, which may be private
            data: it is shown as ``<key>``. ``None``: every part is shown.

    Returns:
        The error to raise (``raise validation_error(exc, ...) from exc``).
    """
    problems: list[JsonValue] = []
    texts = []
    for err in exc.errors(include_url=False, include_context=False, include_input=False):
        loc = err["loc"]
        parts = [_loc_part(p, known) for p in loc]
        if parts and err["type"] == "extra_forbidden" and _NAME.fullmatch(str(loc[-1])):
            parts[-1] = str(loc[-1])  # a misspelt field name: naming it is the fix
        field = ".".join(parts) or model
        problems.append({"field": field, "problem": err["msg"]})
        texts.append(f"{field}: {err['msg']}")
    text = "; ".join(texts)
    return error_for(code, f"invalid {model}: {text}", {"model": model, "errors": problems})


def _nested(inner: MemoryEngineError, model: str, loc: tuple[Any, ...]) -> MemoryEngineError:
    """Re-root a nested model's error at the outer model, prefixing each field with ``loc``."""
    problems = inner.details.get("errors")
    if not loc or not isinstance(problems, list):
        return inner
    prefix = ".".join(str(p) for p in loc)
    fixed: list[JsonValue] = []
    texts = []
    for problem in problems:
        if isinstance(problem, dict):
            field = f"{prefix}.{problem.get('field')}"
            fixed.append({**problem, "field": field})
            texts.append(f"{field}: {problem.get('problem')}")
    text = "; ".join(texts)
    return error_for(inner.code, f"invalid {model}: {text}", {"model": model, "errors": fixed})


class BoundaryModel(BaseModel):
    """Base of every public model.

    Fields are snake_case in Python and camelCase in JSON (``model_dump(by_alias=True)``);
    both spellings are accepted on input. Construction errors are raised as
    :class:`~f09_memory.errors.MemoryEngineError` (``MEMORY_INPUT_INVALID`` unless a field
    maps to a more specific code through ``_field_codes``), never as a bare pydantic error.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        use_enum_values=False,
        validate_default=False,
        hide_input_in_errors=True,  # a chained ValidationError never shows private input
        defer_build=True,  # built by build_models() or at first use: see build_models
    )
    _field_codes: ClassVar[dict[str, ErrorCode]] = {}
    _default_code: ClassVar[ErrorCode] = ErrorCode.MEMORY_INPUT_INVALID

    def __init__(self, **data: object) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise self._translate(exc) from exc

    @classmethod
    def _translate(cls, exc: ValidationError) -> MemoryEngineError:
        for err in exc.errors(include_url=False):
            cause = (err.get("ctx") or {}).get("error")
            if isinstance(cause, MemoryEngineError):  # raised by a nested model or validator
                return _nested(cause, cls.__name__, err["loc"])
        known = field_names(cls)
        for err in exc.errors(include_url=False):
            loc = err["loc"]
            if loc and str(loc[0]) in cls._field_codes:
                return validation_error(exc, cls.__name__, cls._field_codes[str(loc[0])], known)
        return validation_error(exc, cls.__name__, cls._default_code, known)

    @classmethod
    def parse(cls, data: object) -> Self:
        """Validate ``data`` (a mapping in either spelling, or an instance) into this model.

        Raises:
            MemoryEngineError: ``MEMORY_INPUT_INVALID`` (or the field's code) on bad input.
        """
        if isinstance(data, cls):
            return data
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise cls._translate(exc) from exc

    def to_json_dict(self) -> dict[str, JsonValue]:
        """Return the spec-shaped JSON form (camelCase keys, ``None`` fields omitted)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def build_models() -> None:
    """Build the validator and serializer of every :class:`BoundaryModel` imported so far.

    A ``BoundaryModel`` is built at its first use, not when its class is defined: building
    the ~40 models one by one at import took about 0.3 s of the package's start-up, building
    them together takes about 50 ms. ``MemoryEngine()`` calls this, so no first use inside a
    frame pays for a build; code that builds its own adapters over the models (FastAPI's
    request bodies) calls it before. Idempotent: built models are skipped.
    """
    pending = [BoundaryModel]
    while pending:
        model = pending.pop()
        if not model.__pydantic_complete__:
            model.model_rebuild()
        pending.extend(model.__subclasses__())
