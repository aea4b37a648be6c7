"""Hybrid retrieval: dense vectors and HEP BM25 fused by LanceDB rerankers.

* ``hybrid``: with ``method=linear`` a convex combination of min-max-normalised scores,
  ``w × cosine + (1 - w) × BM25`` (LanceDB's ``LinearCombinationReranker``); with ``method=rrf``
  reciprocal-rank fusion, k = 60 (LanceDB's ``RRFReranker``), weighted by ``weight`` (the dense branch's
  share, 0-1): ``w / (60 + rank_dense) + (1 - w) / (60 + rank_bm25)``
  (:func:`~hepwb.retrieval.rerankers.weighted_rrf`). Its defaults (method, dense share, lexical fields) are
  :data:`hepwb.defaults.HYBRID_METHOD`, ``HYBRID_WEIGHT`` and ``HYBRID_FIELDS``;
* ``hybrid_linear``: ``hybrid(method=linear)`` with w = 0.7 and the text field by default.

Options of both: ``dense_read``/``top_m`` (how the dense branch reads long chunks, see
:mod:`hepwb.retrieval.dense`), ``fields`` (the lexical branch's fields, see :mod:`hepwb.retrieval.bm25`)
and ``fetch`` (candidates per branch). Weights chosen by cross-validation: :mod:`hepwb.retrieval.fusion`.
"""

from __future__ import annotations

import math
from typing import Any

from hepwb import defaults
from hepwb.exceptions import ConfigError
from hepwb.models.analyzer import search_terms
from hepwb.models.embedder import Embedder
from hepwb.retrieval.base import columns, register_retriever, rows_to_hits
from hepwb.retrieval.bm25 import FIELDS, note_context_fields
from hepwb.retrieval.dense import dense_arrow
from hepwb.retrieval.options import Count, Fetch, Fusion, LexicalFields, Read, Share
from hepwb.retrieval.rerankers import weighted_rrf
from hepwb.types import Hit, JSONObject

__all__ = ["HybridRetriever", "LinearHybridRetriever"]


def _fmt(value: Any, fmt: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, fmt)


@register_retriever("hybrid")
class HybridRetriever:
    """Dense + BM25 (HEP terms), fused by reciprocal rank (weighted with ``weight``).

    Args:
        table: LanceDB chunk table.
        embedder: Query embedder.
        fetch: Candidates taken from each branch before fusing (at least ``k``).
        weight: The dense branch's share in [0, 1]; ``None``: LanceDB's equal-weight RRF.
        dense_read: How the dense branch reads long chunks (``first``, ``max``, ``mean``).
        top_m: With ``dense_read="max"``: average the ``top_m`` best windows.
        fields: The lexical branch's fields (``text`` or ``context``).
        method: ``rrf`` (reciprocal rank, weighted by ``weight``) or ``linear`` (``weight × cosine +
            (1 - weight) × BM25`` of min-max-normalised scores).

    The defaults (``hepwb.defaults.HYBRID_METHOD``, ``HYBRID_WEIGHT``, ``HYBRID_FIELDS``) are what the
    measurements support (``docs/results.md``, ``docs/explanations/bm25-context.md``);
    ``hybrid(method=rrf, fields=text, weight=null)`` is the equal-weight RRF of earlier releases.
    """

    name = "hybrid"
    default_fields = defaults.HYBRID_FIELDS

    @classmethod
    def parts(cls, options: JSONObject) -> set[str]:
        """The table parts it reads: the vectors, and the terms of its lexical branch's fields."""
        text = options.get("fields", cls.default_fields) == "text"
        return {"vector", "search_text"} if text else {"vector"}

    def __init__(
        self,
        table: Any,
        embedder: Embedder | None = None,
        fetch: Fetch = defaults.FETCH,
        weight: Share | None = defaults.HYBRID_WEIGHT,
        dense_read: Read = defaults.DENSE_READ,
        top_m: Count = defaults.TOP_M,
        fields: LexicalFields = defaults.HYBRID_FIELDS,
        method: Fusion = defaults.HYBRID_METHOD,
    ) -> None:
        if embedder is None:
            msg = f"{self.name} needs an embedder: get_retriever({self.name!r}, table, embedder=...)"
            raise ConfigError(msg)
        self.table = table
        self.embedder = embedder
        self.fetch = fetch
        self.weight = weight
        self.dense_read = dense_read
        self.top_m = top_m
        self.fields = fields
        self.method = method
        if fields == "context":
            note_context_fields(table)

    def reranker(self) -> Any:
        """The LanceDB reranker that fuses the branches."""
        from lancedb.rerankers import LinearCombinationReranker, RRFReranker

        if self.method == "linear":
            return LinearCombinationReranker(
                weight=0.7 if self.weight is None else self.weight, return_score="all"
            )
        if self.weight is None:
            return RRFReranker(K=60, return_score="all")
        return weighted_rrf(K=60, vector_weight=self.weight, return_score="all")

    def legs(self, query: str, k: int = 0) -> tuple[Any, Any]:
        """The two branches as Arrow tables, each with its own score column and ``_rowid``.

        The dense branch has ``_distance``, the lexical one ``_score`` (``None`` when the query has no
        lexical term). They are run here, not through LanceDB's hybrid query builder, which projects the
        score columns away (its scanner then warns on every query).
        """
        return self.dense_leg(query, k), self.lexical_leg(query, k)

    def dense_leg(self, query: str, k: int = 0) -> Any:
        """The dense branch (``_distance``, ``_rowid``) of :meth:`legs`."""
        vec = self.embedder.embed([query])[0]
        rows = dense_arrow(self.table, vec, max(k, self.fetch), read=self.dense_read, top_m=self.top_m)
        return rows.drop(["_windows"]) if "_windows" in rows.column_names else rows

    def lexical_leg(self, query: str, k: int = 0) -> Any:
        """The lexical branch (``_score``, ``_rowid``) of :meth:`legs`; ``None`` without lexical terms."""
        terms = search_terms(query)
        if not terms.strip():
            return None
        return (
            self.table.search(terms, query_type="fts", fts_columns=FIELDS[self.fields])
            .select([*columns(), "_score"])
            .with_row_id(True)
            .limit(max(k, self.fetch))
            .to_arrow()
        )

    def rows(self, query: str, k: int) -> list[JSONObject]:
        """Fused result rows with ``_relevance_score``, ``_distance`` and ``_score``.

        The branches are fused by LanceDB's own hybrid combination: min-max normalisation, then the
        reranker.
        """
        from lancedb.query import LanceHybridQueryBuilder

        vec_rows, fts_rows = self.legs(query, k)
        if fts_rows is None:  # nothing lexical to match: the dense branch alone
            return [
                {**r, "_relevance_score": 1.0 - r["_distance"], "_score": None} for r in vec_rows.to_pylist()
            ][:k]
        fused = LanceHybridQueryBuilder._combine_hybrid_results(
            fts_results=fts_rows,
            vector_results=vec_rows,
            norm="score",
            fts_query="",
            reranker=self.reranker(),
            limit=max(k, self.fetch),
            with_row_ids=False,
        )
        return fused.to_pylist()[:k]  # type: ignore[no-any-return]

    def search(self, query: str, k: int = defaults.EVAL_K) -> list[Hit]:
        """Top ``k`` chunks by fused score; ``why`` shows both branch scores ("-": not in that branch)."""

        def why(r: JSONObject, score: float) -> str:
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
    default_fields = defaults.LEXICAL_FIELDS

    def __init__(
        self,
        table: Any,
        embedder: Embedder | None = None,
        fetch: Fetch = defaults.FETCH,
        weight: Share = defaults.HYBRID_LINEAR_WEIGHT,
        dense_read: Read = defaults.DENSE_READ,
        top_m: Count = defaults.TOP_M,
        fields: LexicalFields = defaults.LEXICAL_FIELDS,
    ) -> None:
        super().__init__(table, embedder, fetch, weight, dense_read, top_m, fields, method="linear")
