"""Lexical retrieval: BM25 over LanceDB's native full-text indexes.

``bm25`` searches the HEP search terms of each chunk (:func:`hepwb.index.analyzer.search_terms`:
``J/\\psi`` → ``jpsi``, ``√s = 13 TeV`` → ``sqrts 13tev``, ``B_s^0`` → ``bs0 bs b0``), with the
question turned into terms the same way; ``bm25_plain`` searches the raw text with LanceDB's
simple tokenizer, as a baseline. Both: lowercase, English stemming, stop words removed, OR match.
"""

from __future__ import annotations

from typing import Any

from hepwb.index.analyzer import search_terms
from hepwb.index.embedder import Embedder
from hepwb.retrieval.base import columns, register_retriever, rows_to_hits
from hepwb.types import Hit

__all__ = ["BM25Retriever", "PlainBM25Retriever", "fts_rows"]


def fts_rows(
    table: Any, query: str, k: int, *, hep: bool = True, where: str | None = None
) -> list[dict[str, Any]]:
    """Raw BM25 result rows (with ``_score``) for ``query``; ``where`` is a SQL prefilter."""
    text = search_terms(query) if hep else query
    if not text.strip():
        return []
    q = table.search(text, query_type="fts", fts_columns="search_text" if hep else "text")
    if where:
        q = q.where(where, prefilter=True)
    return q.select([*columns(), "_score"]).limit(k).to_list()  # type: ignore[no-any-return]


@register_retriever("bm25")
class BM25Retriever:
    """BM25 ranking of the chunks' HEP search terms."""

    name = "bm25"
    hep = True

    def __init__(self, table: Any, embedder: Embedder | None = None) -> None:
        self.table = table

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Top ``k`` chunks by BM25 score (an OR match of the query terms)."""
        rows = fts_rows(self.table, query, k, hep=self.hep)
        return rows_to_hits(rows, self.name, "_score", query=query)


@register_retriever("bm25_plain")
class PlainBM25Retriever(BM25Retriever):
    """BM25 ranking of the raw chunk text (LanceDB simple tokenizer), the baseline of ``bm25``."""

    name = "bm25_plain"
    hep = False
