"""Parent-document retrieval: search small chunks, return the larger span a reader needs.

Children are searched with ``base``; each hit is replaced by its context span (``Chunk.context``:
the parent section of a ``hierarchical`` child, the window of a ``sentence_window`` chunk), and
children of the same parent merge into one hit scored by the best child. On a chunk set without
context spans the chunks themselves come back, marked so in ``Hit.why``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hepwb import defaults
from hepwb.models.embedder import Embedder
from hepwb.retrieval.base import get_retriever, register_retriever
from hepwb.retrieval.explain import explain_match, query_words
from hepwb.retrieval.options import Count
from hepwb.types import Hit, JSONObject

__all__ = ["ParentRetriever"]


@register_retriever("parent")
class ParentRetriever:
    """Children found by ``base``, parents returned (best child's score).

    Args:
        table: LanceDB chunk table (best built with the ``hierarchical`` chunker).
        embedder: Query embedder.
        base: Retriever of the children.
        fetch: Children retrieved per requested parent.
    """

    name = "parent"
    over_base = True  # reads what its base reads (hepwb.retrieval.base.table_parts)

    def __init__(
        self,
        table: Any,
        embedder: Embedder | None = None,
        base: str = defaults.BASE_RETRIEVER,
        fetch: Count = defaults.PARENT_FETCH,
    ) -> None:
        self.table = table
        self.base = get_retriever(base, table, embedder=embedder)
        self.fetch = fetch

    def _contexts(self, chunk_ids: list[str]) -> dict[str, JSONObject]:
        quoted = ", ".join("'" + c + "'" for c in chunk_ids)
        rows = (
            self.table.search()
            .where(f"chunk_id IN ({quoted})")
            .select(["chunk_id", "context_start", "context_end", "context_text"])
            .limit(len(chunk_ids))
            .to_list()
        )
        return {r["chunk_id"]: r for r in rows}

    def search(self, query: str, k: int = defaults.EVAL_K) -> list[Hit]:
        """Top ``k`` parents of the best children."""
        children = self.base.search(query, k * self.fetch)
        if not children:
            return []
        ctx = self._contexts([h.chunk_id for h in children])
        parents: dict[tuple[str, int, int], list[Hit]] = {}
        texts: dict[tuple[str, int, int], str] = {}
        for h in children:
            c = ctx.get(h.chunk_id, {})
            span = (int(c.get("context_start", h.start)), int(c.get("context_end", h.end)))
            key = (h.document_id, *span) if c.get("context_text") else (h.document_id, h.start, h.end)
            parents.setdefault(key, []).append(h)
            texts[key] = c.get("context_text") or h.text
        words = query_words(query)
        out = []
        for rank, (key, kids) in enumerate(list(parents.items())[:k], start=1):
            best = kids[0]
            text = texts[key]
            spans, matched = explain_match(text, words)
            is_parent = (key[1], key[2]) != (best.start, best.end)
            why = (
                f"parent of {len(kids)} child hit(s), best #{best.rank}: {best.why}"
                if is_parent
                else f"chunk has no parent span; #{best.rank}: {best.why}"
            )
            out.append(
                dataclasses.replace(
                    best,
                    start=key[1],
                    end=key[2],
                    text=text,
                    rank=rank,
                    retriever=self.name,
                    pages=tuple(sorted({p for h in kids for p in h.pages})),
                    why=why,
                    matched=tuple(matched),
                    highlights=tuple(spans),
                )
            )
        return out
