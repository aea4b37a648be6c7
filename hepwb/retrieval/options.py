"""Retriever options, declared once: by the constructor's signature (:mod:`hepwb.components.options`).

A retriever's keyword options are the parameters of its ``__init__`` after ``table`` and ``embedder``;
their annotations carry the bounds, built from :mod:`hepwb.limits` (``Fetch``, ``Count``, ``Share``, …:
``Annotated`` types whose check is the :class:`~hepwb.limits.Bound`'s own message) or ``Literal[...]``,
and their defaults come from :mod:`hepwb.defaults`. A sweep file, ``hepwb evaluate --retriever-option``
and :func:`~hepwb.retrieval.base.get_retriever` check the same declaration before any work starts.

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
    hepwb.exceptions.ConfigError: retriever 'bm25': prf_docs is ... from 1 to 100, got 0 (e.g. 3)
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from hepwb import limits
from hepwb.components import options
from hepwb.components.options import bounded
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

_NOT_OPTIONS = frozenset({"self", "table", "embedder"})


def options_model(cls: type) -> type[BaseModel]:
    """The pydantic model of retriever class ``cls``'s options (built from its signature once)."""
    return options.options_model(cls, _NOT_OPTIONS)


def check_options(name: str, cls: type, given: JSONObject) -> None:
    """Raise :class:`~hepwb.exceptions.ConfigError` naming each unknown or bad option of retriever ``name``.

    ``given`` is checked against ``cls``'s signature, whose ``table`` and ``embedder`` are no options.
    """
    options.check_options("retriever", name, cls, given, skip=_NOT_OPTIONS)


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
