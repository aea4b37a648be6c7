"""Dense retrieval: cosine similarity of sentence-transformers vectors (exact search in LanceDB)."""

from __future__ import annotations

from typing import Any

from hepwb.exceptions import ConfigError
from hepwb.index.embedder import Embedder
from hepwb.retrieval.base import columns, register_retriever, rows_to_hits
from hepwb.types import Hit

__all__ = ["DenseRetriever"]


@register_retriever("dense")
class DenseRetriever:
    """Nearest chunks by cosine similarity of the query embedding."""

    name = "dense"

    def __init__(self, table: Any, embedder: Embedder | None = None) -> None:
        if embedder is None:
            msg = "the dense retriever needs an embedder: get_retriever('dense', table, embedder=...)"
            raise ConfigError(msg)
        self.table = table
        self.embedder = embedder

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Top ``k`` chunks by cosine similarity."""
        vec = self.embedder.embed([query])[0]
        rows = (
            self.table.search(vec, vector_column_name="vector")
            .metric("cosine")
            .select([*columns(), "_distance"])
            .limit(k)
            .to_list()
        )
        return rows_to_hits(rows, self.name, "_distance", distance=True)
