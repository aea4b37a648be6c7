"""Retrieval methods, registered by name (see :func:`get_retriever`).

``dense``, ``bm25`` (HEP terms), ``bm25_plain``, ``hybrid`` (dense + BM25 fused; defaults in
:mod:`hepwb.defaults`), ``hybrid_linear``, ``fusion`` (cross-validated weights), ``entity``,
``rerank`` (cross-encoder), ``multi_query`` and ``hyde`` (OpenAI-compatible LLM endpoint) and
``parent`` (children searched, parents returned) and ``xref`` (the captions of the figures and
tables a question names, then a base retriever's hits). :func:`availability` says which can run here.

Each also exists as an object (:mod:`hepwb.retrieval.specs`), accepted wherever its name is::

    from hepwb.retrieval import BM25, Hybrid, Rerank
    systems = [BM25(fields="context"), Hybrid(), Rerank(base=Hybrid(), top_n=20)]
"""

from __future__ import annotations

from hepwb.retrieval import bm25 as _bm25  # noqa: F401  (registers "bm25", "bm25_plain")
from hepwb.retrieval import dense as _dense  # noqa: F401  (registers "dense")
from hepwb.retrieval import entity as _entity  # noqa: F401  (registers "entity")
from hepwb.retrieval import fusion as _fusion  # noqa: F401  (registers "fusion")
from hepwb.retrieval import generative as _generative  # noqa: F401  (registers "multi_query", "hyde")
from hepwb.retrieval import hybrid as _hybrid  # noqa: F401  (registers "hybrid", "hybrid_linear")
from hepwb.retrieval import parent as _parent  # noqa: F401  (registers "parent")
from hepwb.retrieval import rerank as _rerank  # noqa: F401  (registers "rerank")
from hepwb.retrieval import xref as _xref  # noqa: F401  (registers "xref")
from hepwb.retrieval.base import (
    RETRIEVERS,
    Retriever,
    check_retriever_options,
    get_retriever,
    reads_vectors,
    register_retriever,
)
from hepwb.retrieval.explain import citation, hits_frame, hits_html, snippet
from hepwb.retrieval.specs import (
    BM25,
    Dense,
    Entity,
    Fusion,
    Hybrid,
    HybridLinear,
    HyDE,
    MultiQuery,
    Parent,
    PlainBM25,
    Rerank,
    RetrieverSpec,
    Xref,
)

__all__ = [
    "BM25",
    "RETRIEVERS",
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
    "Retriever",
    "RetrieverSpec",
    "Xref",
    "check_retriever_options",
    "citation",
    "get_retriever",
    "hits_frame",
    "hits_html",
    "reads_vectors",
    "register_retriever",
    "snippet",
]


def __dir__() -> list[str]:
    return __all__
