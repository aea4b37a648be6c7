"""Cross-encoder reranking of any retriever's top candidates.

A cross-encoder reads (question, chunk) pairs jointly - slower than a bi-encoder, but sharper.
The model is ``model=`` or ``$HEPWB_CROSS_ENCODER`` or ``cross-encoder/ms-marco-MiniLM-L-6-v2``:
a hub name where a hub is reachable, or a local folder. No package ships a cross-encoder, so
offline without a local copy the retriever is unavailable and says how to provide one.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from hepwb.exceptions import RetrieverUnavailableError
from hepwb.models.embedder import Embedder
from hepwb.retrieval.base import get_retriever, register_retriever
from hepwb.types import Hit

__all__ = ["DEFAULT_CROSS_ENCODER", "RerankRetriever", "load_cross_encoder"]

DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L-6-v2"


@lru_cache(maxsize=2)
def load_cross_encoder(model: str) -> Any:
    """The :class:`sentence_transformers.CrossEncoder` ``model`` on CPU, or a clear error."""
    from sentence_transformers import CrossEncoder

    try:
        return CrossEncoder(model, device="cpu")
    except (OSError, ValueError) as exc:
        msg = (
            f"cross-encoder {model!r} is not available here ({type(exc).__name__}: {str(exc)[:200]}). "
            "Set HEPWB_CROSS_ENCODER (or rerank's model=) to a local sentence-transformers CrossEncoder "
            "folder, or run where huggingface.co is reachable; meanwhile use 'hybrid' or 'entity'."
        )
        raise RetrieverUnavailableError(msg) from None


@register_retriever("rerank")
class RerankRetriever:
    """Rerank the top ``top_n`` hits of ``base`` by a cross-encoder's score.

    Args:
        table: LanceDB chunk table.
        embedder: Query embedder (for dense/hybrid bases).
        base: Name of the first-stage retriever.
        top_n: Candidates reranked.
        model: Cross-encoder name or folder (see the module docstring).
    """

    name = "rerank"

    def __init__(
        self,
        table: Any,
        embedder: Embedder | None = None,
        base: str = "hybrid",
        top_n: int = 30,
        model: str | None = None,
    ) -> None:
        self.model_name = model or os.environ.get("HEPWB_CROSS_ENCODER") or DEFAULT_CROSS_ENCODER
        self.model = load_cross_encoder(self.model_name)
        self.base = get_retriever(base, table, embedder=embedder)
        self.top_n = top_n

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Top ``k`` of the base retriever's ``top_n`` candidates by cross-encoder score."""
        import dataclasses

        cands = self.base.search(query, max(k, self.top_n))
        if not cands:
            return []
        scores = self.model.predict([(query, h.text) for h in cands], show_progress_bar=False)
        order = sorted(range(len(cands)), key=lambda i: (-float(scores[i]), cands[i].rank))[:k]
        return [
            dataclasses.replace(
                cands[i],
                rank=rank,
                score=float(scores[i]),
                retriever=self.name,
                why=f"cross-encoder {float(scores[i]):.3f} (was #{cands[i].rank}: {cands[i].why})",
            )
            for rank, i in enumerate(order, start=1)
        ]
