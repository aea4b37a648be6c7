"""Hybrid retrieval: dense vectors and HEP BM25 fused by LanceDB's rerankers.

``hybrid`` fuses the two rankings by reciprocal-rank fusion (``RRFReranker``, k = 60);
``hybrid_linear`` blends min-max-normalised scores, ``0.7 × cosine + 0.3 × BM25``
(``LinearCombinationReranker``). Each branch contributes its top ``fetch`` candidates.
"""

from __future__ import annotations

import math
from typing import Any

from hepwb.exceptions import ConfigError
from hepwb.index.analyzer import search_terms
from hepwb.index.embedder import Embedder
from hepwb.index.store import ANN_EF
from hepwb.retrieval.base import columns, register_retriever, rows_to_hits
from hepwb.types import Hit

__all__ = ["HybridRetriever", "LinearHybridRetriever"]


def _fmt(value: Any, fmt: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, fmt)


@register_retriever("hybrid")
class HybridRetriever:
    """Dense + BM25 (HEP terms), fused by reciprocal rank.

    Args:
        table: LanceDB chunk table.
        embedder: Query embedder.
        fetch: Candidates taken from each branch before fusing (at least ``k``).
    """

    name = "hybrid"

    def __init__(self, table: Any, embedder: Embedder | None = None, fetch: int = 50) -> None:
        if embedder is None:
            msg = f"{self.name} needs an embedder: get_retriever({self.name!r}, table, embedder=...)"
            raise ConfigError(msg)
        self.table = table
        self.embedder = embedder
        self.fetch = fetch

    def reranker(self) -> Any:
        """The LanceDB reranker that fuses the branches."""
        from lancedb.rerankers import RRFReranker

        return RRFReranker(K=60, return_score="all")

    def rows(self, query: str, k: int) -> list[dict[str, Any]]:
        """Fused result rows with ``_relevance_score``, ``_distance`` and ``_score``."""
        vec = self.embedder.embed([query])[0]
        terms = search_terms(query)
        if not terms.strip():  # nothing lexical to match: the dense branch alone
            from hepwb.retrieval.dense import dense_rows

            return [
                {**r, "_relevance_score": 1.0 - r["_distance"], "_score": None}
                for r in dense_rows(self.table, vec, k)
            ]
        from lancedb.query import LanceHybridQueryBuilder

        # the two legs are run here, each asking for its own score column (LanceDB's hybrid builder
        # projects them away and its scanner then warns on every query), and fused by LanceDB's own
        # hybrid combination: min-max normalisation, then the reranker
        n = max(k, self.fetch)
        vec_rows = (
            self.table.search(vec, vector_column_name="vector")
            .metric("cosine")
            .ef(ANN_EF)
            .select([*columns(), "_distance"])
            .with_row_id(True)
            .limit(n)
            .to_arrow()
        )
        fts_rows = (
            self.table.search(terms, query_type="fts", fts_columns="search_text")
            .select([*columns(), "_score"])
            .with_row_id(True)
            .limit(n)
            .to_arrow()
        )
        fused = LanceHybridQueryBuilder._combine_hybrid_results(
            fts_results=fts_rows,
            vector_results=vec_rows,
            norm="score",
            fts_query=terms,
            reranker=self.reranker(),
            limit=n,
            with_row_ids=False,
        )
        return fused.to_pylist()[:k]  # type: ignore[no-any-return]

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Top ``k`` chunks by fused score; ``why`` shows both branch scores ("-": not in that branch)."""

        def why(r: dict[str, Any], score: float) -> str:
            cos = None if r.get("_distance") is None else 1.0 - float(r["_distance"])
            bm25 = _fmt(r.get("_score"), ".2f")
            return f"{self.name} {score:.4f} = fuse(cosine {_fmt(cos, '.3f')}, bm25 {bm25})"

        return rows_to_hits(self.rows(query, k), self.name, "_relevance_score", query=query, why=why)


@register_retriever("hybrid_linear")
class LinearHybridRetriever(HybridRetriever):
    """Dense + BM25 (HEP terms), blended linearly: ``weight × cosine + (1 - weight) × BM25``.

    Scores are min-max normalised per branch by LanceDB before blending.
    """

    name = "hybrid_linear"

    def __init__(
        self, table: Any, embedder: Embedder | None = None, fetch: int = 50, weight: float = 0.7
    ) -> None:
        super().__init__(table, embedder, fetch)
        if not 0.0 <= weight <= 1.0:
            msg = f"weight must lie in [0, 1] (share of the dense score), got {weight}"
            raise ConfigError(msg)
        self.weight = weight

    def reranker(self) -> Any:
        """LanceDB's linear-combination reranker."""
        from lancedb.rerankers import LinearCombinationReranker

        return LinearCombinationReranker(weight=self.weight, return_score="all")
