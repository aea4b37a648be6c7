"""Dense retrieval: cosine similarity of sentence-transformers vectors in LanceDB."""

from __future__ import annotations

from typing import Any

from hepwb.exceptions import ConfigError
from hepwb.index.embedder import Embedder
from hepwb.retrieval.base import columns, register_retriever, rows_to_hits
from hepwb.types import Hit

__all__ = ["DenseRetriever", "dense_rows"]


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
        rows = dense_rows(self.table, self.embedder.embed([query])[0], k)
        return rows_to_hits(
            rows, self.name, "_distance", distance=True, query=query, why=lambda r, s: f"cosine {s:.3f}"
        )


def dense_rows(table: Any, vector: Any, k: int) -> list[dict[str, Any]]:
    """Raw nearest-neighbour rows (with ``_distance``, the cosine distance) for ``vector``.

    Exact search unless the table has a vector index (large tables, see :mod:`hepwb.index.store`),
    then HNSW with breadth :data:`~hepwb.index.store.ANN_EF`.
    """
    from hepwb.index.store import ANN_EF

    return (  # type: ignore[no-any-return]
        table.search(vector, vector_column_name="vector")
        .metric("cosine")
        .ef(ANN_EF)
        .select([*columns(), "_distance"])
        .limit(k)
        .to_list()
    )
