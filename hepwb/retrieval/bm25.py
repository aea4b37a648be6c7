"""Lexical retrieval: BM25 over LanceDB's native full-text index."""

from __future__ import annotations

from typing import Any

from hepwb.index.embedder import Embedder
from hepwb.retrieval.base import columns, register_retriever, rows_to_hits
from hepwb.types import Hit

__all__ = ["BM25Retriever"]


@register_retriever("bm25")
class BM25Retriever:
    """BM25 ranking of the chunk text (LanceDB FTS: simple tokenizer, lowercase, English stemming)."""

    name = "bm25"

    def __init__(self, table: Any, embedder: Embedder | None = None) -> None:
        self.table = table

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Top ``k`` chunks by BM25 score (an OR match of the query terms)."""
        rows = self.table.search(query, query_type="fts").select([*columns(), "_score"]).limit(k).to_list()
        return rows_to_hits(rows, self.name, "_score")
