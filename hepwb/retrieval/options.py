"""Retriever options, declared once: by the constructor's signature, checked from it.

A retriever's keyword options are the parameters of its ``__init__`` after ``table`` and ``embedder``;
their annotations carry the bounds (``Annotated[int, Field(ge=1, le=100)]``, ``Literal[...]``). This
module turns a signature into a pydantic model, so a sweep file, ``hepwb evaluate --retriever-option``
and :func:`~hepwb.retrieval.base.get_retriever` check the same declaration before any work starts.

Example:
    >>> from hepwb.retrieval import RETRIEVERS
    >>> bm25 = RETRIEVERS.get("bm25")
    >>> check_options("bm25", bm25, {"prf": True, "prf_docs": 3})
    >>> check_options("bm25", bm25, {"prf_doc": 3})
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: retriever 'bm25' has no option(s) ['prf_doc']; its options are [...]
    >>> check_options("bm25", bm25, {"prf_docs": 0})
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: retriever 'bm25': prf_docs = 0: Input should be greater than or equal to 1
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.errors import PydanticSchemaGenerationError
from pydantic_core import SchemaError

from hepwb.exceptions import ConfigError
from hepwb.types import JSONObject

__all__ = ["Count", "Fetch", "Fusion", "LexicalFields", "Read", "Share", "check_options", "options_model"]

Fetch = Annotated[int, Field(ge=1, le=10_000, description="candidates per branch, e.g. 50")]
"""Candidates taken from a base retriever or branch."""
Count = Annotated[int, Field(ge=1, le=100)]
"""A small whole number of items (documents, terms, windows, queries)."""
Share = Annotated[float, Field(ge=0, le=1)]
"""A share in [0, 1], e.g. the dense branch's weight."""
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
        module = vars(sys.modules[klass.__module__])
        forwards = False
        for name, p in inspect.signature(init).parameters.items():
            if p.kind is p.VAR_KEYWORD:
                forwards = True
            elif name not in _NOT_OPTIONS and p.kind is not p.VAR_POSITIONAL and name not in out:
                try:
                    ann = eval(p.annotation, module) if isinstance(p.annotation, str) else p.annotation
                except NameError:  # a type named only for type checkers: not a sweep option
                    ann = Any
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
            text = str(ctx["error"]) if err["type"] == "value_error" and "error" in ctx else err["msg"]
            key = ".".join(str(p) for p in err["loc"])
            lines.append(f"retriever {name!r}: {key} = {err.get('input')!r}: {text}")
        raise ConfigError("\n".join(lines)) from None
