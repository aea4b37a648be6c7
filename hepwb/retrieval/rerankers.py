"""A LanceDB reranker that LanceDB lacks: reciprocal-rank fusion with a weight per branch.

The class derives from LanceDB's ``RRFReranker``, so it is made on first use
(:func:`weighted_rrf`): importing hepwb's retrievers does not load LanceDB.

Example:
    >>> import pyarrow as pa
    >>> vec = pa.table({"_rowid": [1, 2], "_distance": [0.1, 0.2]})
    >>> fts = pa.table({"_rowid": [2, 3], "_score": [5.0, 4.0]})
    >>> out = weighted_rrf(vector_weight=0.25).rerank_hybrid("q", vec, fts)
    >>> out["_rowid"].to_pylist()
    [2, 3, 1]
"""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Any

from hepwb import defaults

__all__ = ["weighted_rrf"]


@functools.cache
def _weighted_rrf_class() -> type:
    from lancedb.rerankers import RRFReranker

    class WeightedRRFReranker(RRFReranker):
        """LanceDB's RRF with a weight per branch: ``w / (K + rank_vector) + (1 - w) / (K + rank_fts)``."""

        def __init__(
            self,
            K: int = defaults.RRF_K,
            vector_weight: float = defaults.RRF_VECTOR_WEIGHT,
            return_score: str = "relevance",
        ) -> None:
            super().__init__(K=K, return_score=return_score)
            self.vector_weight = float(vector_weight)

        def rerank_hybrid(self, query: str, vector_results: Any, fts_results: Any) -> Any:
            """Fuse the branches as ``RRFReranker`` does, each rank weighted by its branch's share."""
            import pyarrow as pa

            scores: dict[int, float] = defaultdict(float)
            for results, w in ((vector_results, self.vector_weight), (fts_results, 1.0 - self.vector_weight)):
                ids = results["_rowid"].to_pylist() if results else []
                for rank, rid in enumerate(ids, 1):
                    scores[rid] += w / (rank + self.K)
            combined = self.merge_results(vector_results, fts_results)
            rel = [scores[r] for r in combined["_rowid"].to_pylist()]
            combined = combined.append_column("_relevance_score", pa.array(rel, type=pa.float32()))
            combined = combined.sort_by([("_relevance_score", "descending"), ("_rowid", "ascending")])
            return self._keep_relevance_score(combined) if self.score == "relevance" else combined

    return WeightedRRFReranker


def weighted_rrf(
    K: int = defaults.RRF_K,
    vector_weight: float = defaults.RRF_VECTOR_WEIGHT,
    return_score: str = "relevance",
) -> Any:
    """A LanceDB reranker: RRF, the dense branch weighted ``vector_weight``, BM25 ``1 - vector_weight``."""
    return _weighted_rrf_class()(K=K, vector_weight=vector_weight, return_score=return_score)
