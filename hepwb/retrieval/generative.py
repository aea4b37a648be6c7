"""LLM-assisted retrieval: multi-query reformulation and HyDE, fused by reciprocal rank.

* ``multi_query``: the LLM writes ``n_queries`` reformulations of the question; the question and
  each reformulation are searched with ``base`` and the rankings fused with LanceDB's
  ``RRFReranker`` (k = 60).
* ``hyde`` (Hypothetical Document Embeddings): the LLM writes a short passage that would answer
  the question; question and passage are searched with ``base`` and fused the same way.

The endpoint is any OpenAI-compatible chat API (:class:`hepwb.runtime.llm.LLMEndpoint`: ``llm_url=`` and
``llm_model=``, or ``HEPWB_LLM_URL`` / ``HEPWB_LLM_MODEL``). Without one these retrievers raise
:class:`~hepwb.exceptions.RetrieverUnavailableError` when built. Generated texts are cached per
process, so a sweep asks the LLM once per question.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from hepwb import defaults
from hepwb.models.embedder import Embedder
from hepwb.retrieval.base import get_retriever, register_retriever
from hepwb.retrieval.options import Count, Fetch
from hepwb.runtime.llm import LLMEndpoint
from hepwb.types import Hit

__all__ = ["HydeRetriever", "MultiQueryRetriever", "rrf_fuse"]

MULTI_QUERY_PROMPT = (
    "You help physicists search High-Energy-Physics papers. Write {n} different search queries that "
    "would find the passage answering the question below: vary the wording, spell out abbreviations "
    "and name the physics quantities involved. One query per line, no numbering, nothing else.\n\n"
    "Question: {question}"
)
HYDE_PROMPT = (
    "Write a short passage (3-5 sentences) from a High-Energy-Physics paper that answers the question "
    "below, in the style of the paper's text, with plausible numbers and units. Only the passage.\n\n"
    "Question: {question}"
)


def rrf_fuse(rankings: list[list[Hit]], k: int, name: str, labels: list[str]) -> list[Hit]:
    """Fuse hit lists with LanceDB's ``RRFReranker``; ``labels`` name the lists in ``Hit.why``."""
    import pyarrow as pa
    from lancedb.rerankers import RRFReranker

    ids: dict[str, int] = {}
    best: dict[str, Hit] = {}
    seen: dict[str, list[str]] = {}
    tables = []
    for hits, label in zip(rankings, labels, strict=True):
        for h in hits:
            ids.setdefault(h.chunk_id, len(ids))
            best.setdefault(h.chunk_id, h)
            seen.setdefault(h.chunk_id, []).append(f"{label} #{h.rank}")
        tables.append(
            pa.table(
                {
                    "chunk_id": [h.chunk_id for h in hits],
                    "_rowid": pa.array([ids[h.chunk_id] for h in hits], pa.uint64()),
                    "_distance": pa.array([0.0] * len(hits), pa.float32()),
                }
            )
        )
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return []
    fused = RRFReranker(K=60).rerank_multivector(tables).to_pylist()
    return [
        dataclasses.replace(
            best[r["chunk_id"]],
            rank=rank,
            score=float(r["_relevance_score"]),
            retriever=name,
            why=f"rrf {float(r['_relevance_score']):.4f} of " + ", ".join(seen[r["chunk_id"]]),
        )
        for rank, r in enumerate(fused[:k], start=1)
    ]


class _Generative:
    name = ""
    over_base = True  # reads what its base reads (hepwb.retrieval.base.table_parts)
    prompt = ""

    def __init__(
        self,
        table: Any,
        embedder: Embedder | None = None,
        base: str = defaults.BASE_RETRIEVER,
        llm_url: str | None = None,
        llm_model: str | None = None,
        fetch: Fetch = defaults.GENERATIVE_FETCH,
    ) -> None:
        self.llm = LLMEndpoint.from_env(llm_url, llm_model)
        self.base = get_retriever(base, table, embedder=embedder)
        self.fetch = fetch
        self._cache: dict[str, list[str]] = {}

    def generate(self, question: str) -> list[str]:
        """The LLM's texts for ``question`` (cached)."""
        raise NotImplementedError

    def search(self, query: str, k: int = defaults.EVAL_K) -> list[Hit]:
        """Top ``k`` chunks by RRF over the question's and the generated texts' rankings."""
        texts = self.generate(query)
        rankings = [self.base.search(t, max(k, self.fetch)) for t in [query, *texts]]
        labels = ["question", *(f"{self.name}[{i}]" for i in range(1, len(texts) + 1))]
        return rrf_fuse(rankings, k, self.name, labels)


@register_retriever("multi_query")
class MultiQueryRetriever(_Generative):
    """The question plus ``n_queries`` LLM reformulations, searched with ``base``, RRF-fused."""

    name = "multi_query"

    def __init__(
        self, table: Any, embedder: Embedder | None = None, n_queries: Count = defaults.N_QUERIES, **kw: Any
    ) -> None:
        super().__init__(table, embedder, **kw)
        self.n_queries = n_queries

    def generate(self, question: str) -> list[str]:
        """Up to ``n_queries`` reformulations of ``question``."""
        if question not in self._cache:
            reply = self.llm.chat(MULTI_QUERY_PROMPT.format(n=self.n_queries, question=question))
            lines = [re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", ln).strip() for ln in reply.splitlines()]
            self._cache[question] = [ln for ln in dict.fromkeys(lines) if ln and ln != question][
                : self.n_queries
            ]
        return self._cache[question]


@register_retriever("hyde")
class HydeRetriever(_Generative):
    """The question and an LLM-written hypothetical answer passage, searched with ``base``, RRF-fused."""

    name = "hyde"

    def generate(self, question: str) -> list[str]:
        """One hypothetical passage answering ``question``."""
        if question not in self._cache:
            passage = self.llm.chat(HYDE_PROMPT.format(question=question)).strip()
            self._cache[question] = [passage] if passage else []
        return self._cache[question]
