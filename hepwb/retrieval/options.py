"""Retriever options, declared once: by the constructor's signature, checked from it.

A retriever's keyword options are the parameters of its ``__init__`` after ``table`` and ``embedder``;
their annotations carry the bounds, built from :mod:`hepwb.limits` (``Fetch``, ``Count``, ``Share``, …:
``Annotated`` types whose check is the :class:`~hepwb.limits.Bound`'s own message) or ``Literal[...]``,
and their defaults come from :mod:`hepwb.defaults`. This module turns a signature into a pydantic model,
so a sweep file, ``hepwb evaluate --retriever-option`` and :func:`~hepwb.retrieval.base.get_retriever`
check the same declaration before any work starts.

Example:
    >>> from hepwb.retrieval import RETRIEVERS
    >>> bm25 = RETRIEVERS.get("bm25")
    >>> check_options("bm25", bm25, {"prf": True, "prf_docs": 3})
    >>> check_options("bm25", bm25, {"prf_doc": 3})
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: retriever 'bm25' has no option(s) ['prf_doc']; its options are [...]
    >>> check_options("bm25", bm25, {"prf_docs": 0})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: retriever 'bm25': prf_docs is a small whole number (...) from 1 to 100, got 0 (e.g. 3)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
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

__all__ = [
    "Boost",
    "Count",
    "Fetch",
    "Fusion",
    "LexicalFields",
    "Read",
    "Share",
    "TopN",
    "bounded",
    "check_options",
    "options_model",
]


def bounded(bound: limits.Bound) -> Any:
    """``Annotated[int or float, <the bound's check>]``: the option type of a :class:`~hepwb.limits.Bound`.

    A value out of range gets the bound's one message, named after the option it was given for.

    Example:
        >>> TypeAdapter(bounded(limits.SHARE)).validate_python(0.3)
        0.3
    """

    def check(value: Any, info: ValidationInfo) -> Any:
        problem = dataclasses.replace(bound, name=info.field_name or bound.name).problem(value)
        if problem:
            raise ValueError(problem)
        return value

    return Annotated[int if bound.integer else float, AfterValidator(check)]


Fetch = bounded(limits.FETCH)
"""Candidates taken from a base retriever or branch."""
Count = bounded(limits.COUNT)
"""A small whole number of items (documents, terms, windows, queries, papers)."""
Share = bounded(limits.SHARE)
"""A share in [0, 1], e.g. the dense branch's weight."""
Boost = bounded(limits.BOOST)
"""A score multiplier of at least 1."""
TopN = bounded(limits.TOP_N)
"""Candidates re-scored by a cross-encoder."""
Read = Literal["first", "max", "mean"]
"""How a chunk longer than the model's window is read (:mod:`hepwb.retrieval.dense`)."""
LexicalFields = Literal["text", "context"]
"""The lexical fields: the chunk's text, or with its paper title and section path."""
Fusion = Literal["rrf", "linear"]
"""How ``hybrid`` fuses its branches: (weighted) reciprocal rank, or a convex combination of scores."""

_NOT_OPTIONS = {"self", "table", "embedder"}


def _declared(cls: type) -> dict[str, tuple[Any, Any]]:
    """``name → (annotation, default)`` of ``cls.__init__``'s options, following ``**kwargs`` to the base."""
    out: dict[str, tuple[Any, Any]] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        hints = typing.get_type_hints(init, include_extras=True)  # the annotations, resolved
        forwards = False
        for name, p in inspect.signature(init).parameters.items():
            if p.kind is p.VAR_KEYWORD:
                forwards = True
            elif name not in _NOT_OPTIONS and p.kind is not p.VAR_POSITIONAL and name not in out:
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
def options_model(cls: type) -> type[BaseModel]:
    """The pydantic model of retriever class ``cls``'s options (built from its signature once)."""
    config = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)
    return create_model(f"{cls.__name__}Options", __config__=config, **_declared(cls))  # type: ignore[call-overload,no-any-return]


def check_options(name: str, cls: type, options: JSONObject) -> None:
    """Raise :class:`ConfigError` naming each unknown or bad option of retriever ``name`` (class ``cls``)."""
    model = options_model(cls)
    unknown = sorted(set(options) - set(model.model_fields))
    if unknown:
        msg = f"retriever {name!r} has no option(s) {unknown}; its options are {sorted(model.model_fields)}"
        raise ConfigError(msg)
    try:
        model.model_validate(options)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            ctx = err.get("ctx") or {}
            key = ".".join(str(p) for p in err["loc"])
            if err["type"] == "value_error" and "error" in ctx:  # a bound's message names key and value
                lines.append(f"retriever {name!r}: {ctx['error']}")
            else:
                lines.append(f"retriever {name!r}: {key} = {err.get('input')!r}: {err['msg']}")
        raise ConfigError("\n".join(lines)) from None
