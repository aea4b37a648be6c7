"""Retrievers as objects: ``BM25(fields="context")``, ``Rerank(base=Hybrid(), top_n=20)``.

Each registered retriever has a spec class named after it. A spec holds the retriever's options, checked
at construction against the retriever's own signature (:mod:`hepwb.retrieval.options`), and is accepted
wherever a retriever name is: :class:`~hepwb.experiment.config.ExperimentConfig`,
:func:`~hepwb.experiment.compare.compare`, :meth:`~hepwb.experiment.search.Searcher.search` and
:func:`get_retriever`. ``str(spec)`` is the call string the CLI and sweep files take, so a spec and its
string give the same run (the same configuration hash). :meth:`RetrieverSpec.over` binds one to a table.

Example:
    >>> Rerank(base=Hybrid(weight=0.3), top_n=20)
    Rerank(base='hybrid(weight=0.3)', top_n=20)
    >>> str(BM25(fields="context"))
    'bm25(fields=context)'
    >>> BM25(feilds="context")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hepwb.exceptions.ConfigError: retriever 'bm25' has no option(s) ['feilds']; its options are [...]
"""

from __future__ import annotations

import inspect
from typing import Any

from hepwb.components.callspec import Spec
from hepwb.models.embedder import Embedder
from hepwb.retrieval.base import RETRIEVERS, Retriever, check_retriever_options, get_retriever
from hepwb.retrieval.options import options_model

__all__ = [
    "BM25",
    "Dense",
    "Entity",
    "Fusion",
    "HyDE",
    "Hybrid",
    "HybridLinear",
    "MultiQuery",
    "Parent",
    "PlainBM25",
    "Rerank",
    "RetrieverSpec",
    "Xref",
    "spec_class",
    "spec_for",
]


class RetrieverSpec(Spec):
    """A retriever named with its options, before it is bound to a table (see the module docstring)."""

    def check(self) -> None:
        """Check the options against the retriever's signature (one line per problem)."""
        check_retriever_options(self.name, self.options)

    def over(self, table: Any, embedder: Embedder | None = None) -> Retriever:
        """The retriever searching LanceDB ``table`` (``embedder``: the table's model, for dense search)."""
        return get_retriever(self.name, table, embedder=embedder, **self.options)


def spec_class(class_name: str, name: str) -> type[RetrieverSpec]:
    """A :class:`RetrieverSpec` subclass for registered retriever ``name``, with its options' signature.

    The signature (what ``help()`` and tab completion show) is the retriever's keyword options with
    their defaults, taken from the retriever's constructor.
    """
    retriever = RETRIEVERS.get(name)
    fields = options_model(retriever).model_fields
    signature = inspect.Signature(
        [
            inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.annotation)
            for key, f in fields.items()
        ]
    )
    summary = (inspect.getdoc(retriever) or name).splitlines()[0]
    namespace = {
        "name": name,
        "__doc__": f"The ``{name}`` retriever as an object: {summary}",
        "__signature__": signature,
        "__module__": __name__,
        "__qualname__": class_name,
    }
    return type(class_name, (RetrieverSpec,), namespace)


_MADE: dict[str, type[RetrieverSpec]] = {}
"""The specs made by :func:`spec_for` for retrievers registered elsewhere."""


def spec_for(name: str) -> type[RetrieverSpec]:
    """The spec class of registered retriever ``name``: one of this module's, or made from the registry.

    A retriever registered after this module was written needs no line here: ``spec_for("shortest")`` (and
    ``specs.Shortest``, its name in CamelCase) is made on first use.

    Example:
        >>> spec_for("bm25") is BM25, spec_for("hybrid_linear").__name__
        (True, 'HybridLinear')
    """
    for value in list(globals().values()):
        if isinstance(value, type) and issubclass(value, RetrieverSpec) and value.name == name:
            return value
    if name not in _MADE:
        _MADE[name] = spec_class(camel_case(name), name)  # raises ConfigError for a name not registered
    return _MADE[name]


def camel_case(name: str) -> str:
    """A registered name as a class name: ``multi_query`` → ``MultiQuery``.

    >>> camel_case("shortest"), camel_case("bm25_plain")
    ('Shortest', 'Bm25Plain')
    """
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def __getattr__(attr: str) -> type[RetrieverSpec]:
    """``specs.Shortest``: the spec of a retriever registered under a name whose CamelCase is ``attr``."""
    for name in RETRIEVERS.names():
        if camel_case(name) == attr:
            return spec_for(name)
    msg = f"module {__name__!r} has no attribute {attr!r}"
    raise AttributeError(msg)


BM25 = spec_class("BM25", "bm25")
PlainBM25 = spec_class("PlainBM25", "bm25_plain")
Dense = spec_class("Dense", "dense")
Entity = spec_class("Entity", "entity")
Fusion = spec_class("Fusion", "fusion")
Hybrid = spec_class("Hybrid", "hybrid")
HybridLinear = spec_class("HybridLinear", "hybrid_linear")
HyDE = spec_class("HyDE", "hyde")
MultiQuery = spec_class("MultiQuery", "multi_query")
Parent = spec_class("Parent", "parent")
Rerank = spec_class("Rerank", "rerank")
Xref = spec_class("Xref", "xref")
