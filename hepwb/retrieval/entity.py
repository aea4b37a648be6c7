"""Entity-filtered lexical retrieval (lexical-first "Document RAG").

At indexing time every chunk's HEP entities (particles, experiments, accelerators, detectors,
observables, processes, energies - :mod:`hepwb.models.entities`) are stored as a keyword list. At
query time the question's entities select two branches, in the manner of an Elasticsearch
``dis_max`` over a ``terms_set`` (all terms required) query and a soft OR query:

* **strict**: BM25 (HEP terms) restricted to chunks holding *all* the question's entities,
  scored ``boost × BM25``;
* **soft**: BM25 over every chunk (an OR match of the question's terms).

Each chunk keeps its best branch (``tie_breaker = 0``). A question without entities is plain
``bm25``. Every hit lists the question entities it holds (``Hit.matched``) and highlights them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hepwb import defaults
from hepwb.models.embedder import Embedder
from hepwb.models.entities import EntityExtractor
from hepwb.ner.source import EntitySource, ner_source
from hepwb.retrieval.base import register_retriever, rows_to_hits
from hepwb.retrieval.bm25 import fts_rows
from hepwb.retrieval.explain import query_words
from hepwb.retrieval.options import Boost, Fetch
from hepwb.types import Hit, JSONObject

__all__ = ["EntityRetriever", "strict_filter"]


def strict_filter(entities: list[str]) -> str:
    """The LanceDB SQL filter "holds every one of ``entities``".

    Example:
        >>> strict_filter(["experiment:lhcb", "particle:jpsi"])
        "array_has_all(entities, ['experiment:lhcb', 'particle:jpsi'])"
    """
    quoted = ", ".join("'" + e.replace("'", "''") + "'" for e in entities)
    return f"array_has_all(entities, [{quoted}])"


@register_retriever("entity")
class EntityRetriever:
    """Strict (all entities) and soft (OR) BM25 branches, best branch per chunk.

    Args:
        table: LanceDB chunk table (with the ``entities`` column).
        embedder: Unused (lexical method).
        boost: Factor on the strict branch's BM25 score (> 1 ranks chunks holding every entity first
            among equally good lexical matches).
        fetch: Candidates taken from each branch.
        ner: Entity source for questions (default: :func:`~hepwb.ner.source.ner_source`, the NER service
            when ``HEPWB_NER_URL`` is set, else in process).
    """

    name = "entity"

    @staticmethod
    def parts(options: JSONObject) -> set[str]:
        """The table parts it reads: the chunks' entities and their HEP terms (BM25 over ``fields=text``)."""
        return {"entities", "search_text"}

    def __init__(
        self,
        table: Any,
        embedder: Embedder | None = None,
        boost: Boost = defaults.ENTITY_BOOST,
        fetch: Fetch = defaults.FETCH,
        ner: EntitySource | None = None,
    ) -> None:
        self.table = table
        self.boost = boost
        self.fetch = fetch
        self.extractor = EntityExtractor.default()
        self.ner = ner if ner is not None else ner_source()

    def search(self, query: str, k: int = defaults.EVAL_K) -> list[Hit]:
        """Top ``k`` chunks by the better of the strict and soft branch scores."""
        return self.rank(query, k)

    def rank(
        self, query: str, k: int = defaults.EVAL_K, *, entities: list[str] | None = None, strict: bool = False
    ) -> list[Hit]:
        """Top ``k`` chunks for ``query`` whose ``entities`` are given or found by the NER source.

        With ``strict`` only chunks holding every entity are returned (the soft branch is skipped; a
        question without entities then returns nothing).
        """
        ents = self.ner.batch([query])[0] if entities is None else entities
        n = max(k, self.fetch)
        best: dict[str, tuple[float, str, JSONObject]] = {}
        if ents:
            for r in fts_rows(self.table, query, n, where=strict_filter(ents), extra=("entities",)):
                best[r["chunk_id"]] = (self.boost * float(r["_score"]), "strict", r)
        for r in [] if strict else fts_rows(self.table, query, n, extra=("entities",)):
            score = float(r["_score"])
            if r["chunk_id"] not in best or best[r["chunk_id"]][0] < score:
                best[r["chunk_id"]] = (score, "soft", r)
        ranked = sorted(best.values(), key=lambda t: (-t[0], t[2]["chunk_id"]))[:k]
        rows = [{**r, "_entity_score": score, "_branch": branch} for score, branch, r in ranked]
        aliases = [m.surface for m in self.extractor.find(query)]

        def why(r: JSONObject, score: float) -> str:
            if r["_branch"] == "strict":
                return f"strict: all of {', '.join(ents)} (bm25 {score / self.boost:.2f} × {self.boost:g})"
            if ents:
                return f"soft: bm25 {score:.2f}; holds {len(held(r))}/{len(ents)} entities"
            return f"bm25 {score:.2f} (no entity in the question)"

        def held(r: JSONObject) -> list[str]:
            return sorted(set(ents) & set(r.get("entities") or ()))

        words = [w for a in aliases for w in query_words(a)]
        hits = rows_to_hits(rows, self.name, "_entity_score", query=query, why=why, extra_words=words)
        return [dataclasses.replace(h, matched=tuple(held(r))) for h, r in zip(hits, rows, strict=True)]
