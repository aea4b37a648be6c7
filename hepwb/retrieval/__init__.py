"""Retrieval methods, registered by name (see :func:`get_retriever`)."""

from __future__ import annotations

from hepwb.retrieval import bm25 as _bm25  # noqa: F401  (registers "bm25")
from hepwb.retrieval import dense as _dense  # noqa: F401  (registers "dense")
from hepwb.retrieval.base import RETRIEVERS, Retriever, get_retriever, register_retriever

__all__ = ["RETRIEVERS", "Retriever", "get_retriever", "register_retriever"]


def __dir__() -> list[str]:
    return __all__
