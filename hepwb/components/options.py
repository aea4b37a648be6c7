"""Component options, declared once: by the constructor's signature, checked from it.

A component's keyword options (a chunker's, a retriever's, a vector index's) are the parameters of its
``__init__``; their annotations carry the bounds, built by :func:`bounded` from a :class:`~hepwb.limits.Bound`
(an ``Annotated`` type whose check is the bound's own message) or ``Literal[...]``, and their defaults come
from :mod:`hepwb.defaults`. :func:`options_model` turns a signature into a strict pydantic model, so a sweep
file, a CLI option and the Python API check the same declaration before any work starts;
:func:`check_options` reports one line per problem, naming the component (``chunker 'hepilot': …``).
:func:`checked_init` makes a class check its options whenever it is constructed.

Example:
    >>> from hepwb import limits
    >>> class Toy:
    ...     def __init__(self, window: bounded(limits.COUNT) = 3, name: str = "a") -> None:
    ...         self.window = window
    >>> check_options("chunker", "toy", Toy, {"window": 2})
    >>> check_options("chunker", "toy", Toy, {"windw": 2})
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: chunker 'toy' has no option(s) ['windw']; its options are ['name', 'window']
    >>> Toy = checked_init("chunker", "toy", Toy)
    >>> Toy(window=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: chunker 'toy': window is ... from 1 to 100, got 0 (e.g. 3)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    create_model,
)
from pydantic.errors import PydanticSchemaGenerationError
from pydantic_core import SchemaError

from hepwb import limits
from hepwb.exceptions import ConfigError
from hepwb.types import JSONObject

__all__ = ["bound_check", "bounded", "check_options", "checked_init", "options_model", "problem_lines"]

T = TypeVar("T", bound=type)

_SELF = frozenset({"self"})


def bound_check(bound: limits.Bound, *, optional: bool = False) -> BeforeValidator:
    """The pydantic validator of a :class:`~hepwb.limits.Bound`: its one message, named after the field.

    For a pydantic model's field, ``Annotated[int, bound_check(limits.X)]``; for a signature, :func:`bounded`.
    The value is checked as written, before pydantic converts it: ``"86400"`` or YAML's ``yes`` is refused,
    never read as 86400 or 1. With ``optional``, ``None`` (no value) passes.
    """

    def check(value: Any, info: ValidationInfo) -> Any:
        if optional and value is None:
            return None
        problem = dataclasses.replace(bound, name=info.field_name or bound.name).problem(value)
        if problem:
            raise ValueError(problem)
        return value

    return BeforeValidator(check)


def bounded(bound: limits.Bound) -> Any:
    """``Annotated[int or float, <the bound's check>]``: the option type of a :class:`~hepwb.limits.Bound`.

    Any value out of range, or not a number at all, gets the bound's one message, named after the option
    it was given for.

    Example:
        >>> TypeAdapter(bounded(limits.SHARE)).validate_python(0.3)
        0.3
        >>> TypeAdapter(bounded(limits.SHARE)).validate_python("0.3")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for ...
          Value error, share is ... from 0 to 1, got '0.3' (e.g. 0.5) ...
    """
    return Annotated[int if bound.integer else float, bound_check(bound)]


def _declared(cls: type, skip: frozenset[str]) -> dict[str, tuple[Any, Any]]:
    """``name → (annotation, default)`` of ``cls.__init__``'s options, following ``**kwargs`` to the base."""
    out: dict[str, tuple[Any, Any]] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        init = inspect.unwrap(init)  # a checked_init wrapper: the constructor it checks
        hints = typing.get_type_hints(init, include_extras=True)  # the annotations, resolved (no eval)
        forwards = False
        for name, p in inspect.signature(init).parameters.items():
            if p.kind is p.VAR_KEYWORD:
                forwards = True
            elif name not in skip and p.kind is not p.VAR_POSITIONAL and name not in out:
                ann = hints.get(name, Any)
                ann = ann if _checkable(ann) else Any  # e.g. a Protocol: passed in Python, not in a file
                out[name] = (ann, ... if p.default is p.empty else p.default)
        if not forwards:
            break
    return out


def _checkable(ann: Any) -> bool:
    try:
        TypeAdapter(ann, config=ConfigDict(arbitrary_types_allowed=True))
    except (SchemaError, PydanticSchemaGenerationError, TypeError):
        return False
    return True


@functools.cache
def options_model(cls: type, skip: frozenset[str] = _SELF) -> type[BaseModel]:
    """The pydantic model of class ``cls``'s constructor options (built from its signature once).

    ``skip`` names the parameters that are no options (``self``; a retriever's ``table`` and ``embedder``).
    """
    config = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)
    return create_model(f"{cls.__name__}Options", __config__=config, **_declared(cls, skip))  # type: ignore[call-overload,no-any-return]


def problem_lines(kind: str, name: str, exc: ValidationError) -> list[str]:
    """One line per bad option of ``exc``: the bound's message where there is one, else pydantic's.

    An option whose type is a union (``Share | None``) gets one line, not one per member it failed.
    """
    lines: dict[str, str] = {}
    for err in exc.errors():
        loc = err["loc"]
        key = str(loc[0]) if loc else "options"
        ctx = err.get("ctx") or {}
        if err["type"] == "value_error" and "error" in ctx:  # a bound's message names key and value
            line = f"{kind} {name!r}: {ctx['error']}"
            if key not in lines or " = " in lines[key]:  # the bound's words win over a union's other member
                lines[key] = line
        elif key not in lines:
            lines[key] = f"{kind} {name!r}: {key} = {err.get('input')!r}: {err['msg']}"
    return list(lines.values())


def check_options(
    kind: str, name: str, cls: type, options: JSONObject, *, skip: Iterable[str] = _SELF
) -> None:
    """Raise :class:`ConfigError` naming each unknown or bad option of ``kind`` ``name`` (class ``cls``)."""
    model = options_model(cls, frozenset(skip))
    unknown = sorted(set(options) - set(model.model_fields))
    if unknown:
        msg = f"{kind} {name!r} has no option(s) {unknown}; its options are {sorted(model.model_fields)}"
        raise ConfigError(msg)
    try:
        model.model_validate(options)
    except ValidationError as exc:
        raise ConfigError("\n".join(problem_lines(kind, name, exc))) from None


_CHECKED: ContextVar[bool] = ContextVar("hepwb_options_checked", default=False)


@contextmanager
def checked_already() -> Iterator[None]:
    """Build components from options a validated configuration has checked: not checked again inside.

    A run builds its chunker and retriever from an :class:`~hepwb.experiment.config.ExperimentConfig`,
    whose construction checked every option; a direct construction outside the block is checked as ever.
    """
    token = _CHECKED.set(True)
    try:
        yield
    finally:
        _CHECKED.reset(token)


def options_trusted() -> bool:
    """Whether the caller is inside :func:`checked_already`."""
    return _CHECKED.get()


def checked_init(kind: str, name: str, cls: T) -> T:
    """``cls`` whose constructor checks its options (:func:`check_options`) before it runs.

    A direct construction (``HepilotChunker(min_section_fill=2)``) gets the same one-line message as a
    configuration or a sweep file; an unknown keyword is named with the options there are.
    """
    init: Callable[..., None] = cls.__init__  # type: ignore[misc]
    signature = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if options_trusted():  # built from a validated configuration (checked_already)
            init(self, *args, **kwargs)
            return
        try:
            given = signature.bind(self, *args, **kwargs).arguments
        except TypeError:
            check_options(kind, name, cls, kwargs)  # names an unknown keyword
            raise
        options = {k: v for k, v in given.items() if k != "self"}
        for key, p in signature.parameters.items():  # forwarded **kwargs are options too
            if p.kind is p.VAR_KEYWORD:
                options.update(options.pop(key, {}))
        check_options(kind, name, cls, options)
        init(self, *args, **kwargs)

    cls.__init__ = __init__  # type: ignore[misc]
    return cls
