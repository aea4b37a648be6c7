"""Questions that name a figure or table: "What does Figure 3 of the HERMES paper show?".

Words cannot find "Figure 3": every paper has one, and its caption may say ``FIG. 3.``. Caption
chunks carry their figure's label as the last element of their section path (see
:mod:`hepwb.chunking`), so ``xref`` answers such questions structurally: it runs its ``base``
retriever, takes the papers of the best hits in rank order, and puts the caption chunks of the
named figures and tables of those papers first (best paper first), then the base hits. A query
naming no figure or table gets the base hits unchanged.

Example:
    >>> named_labels("What does Fig. 3 show, and Table II?")
    ['Figure 3', 'Table 2']
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from hepwb import defaults
from hepwb.models.embedder import Embedder
from hepwb.processing.figures import roman
from hepwb.retrieval.base import columns, get_retriever, register_retriever, rows_to_hits
from hepwb.retrieval.options import Count
from hepwb.types import Hit

__all__ = ["XrefRetriever", "named_labels"]

_NAMED = re.compile(r"\b(?:(fig(?:ure)?s?\.?)|(tab(?:le)?s?\.?))\s*(\d{1,3}|[IVX]{1,5})\b", re.I)


def _number(text: str) -> int:
    return int(text) if text.isdigit() else roman(text.upper())


def _last(row: dict[str, Any]) -> str:
    return str(row["section"]).split(" > ")[-1]


def named_labels(query: str) -> list[str]:
    """The figure and table labels a query names, normalised (``Fig. 3`` -> ``Figure 3``)."""
    out: list[str] = []
    for m in _NAMED.finditer(query):
        label = f"{'Figure' if m.group(1) else 'Table'} {_number(m.group(3))}"
        if label not in out:
            out.append(label)
    return out


@register_retriever("xref")
class XrefRetriever:
    """Caption chunks of the figures and tables a query names, then ``base``'s hits.

    Args:
        table: LanceDB chunk table.
        embedder: Query embedder (for a dense or hybrid ``base``).
        base: Retriever whose hits choose the papers and fill the list.
        papers: How many of the best papers are searched for the named captions.
    """

    name = "xref"
    over_base = True  # reads what its base reads (hepwb.retrieval.base.table_parts)

    def __init__(
        self,
        table: Any,
        embedder: Embedder | None = None,
        base: str = defaults.BASE_RETRIEVER,
        papers: Count = defaults.XREF_PAPERS,
    ) -> None:
        self.table = table
        self.base = get_retriever(base, table, embedder=embedder)
        self.papers = papers

    def _captions(self, labels: list[str], documents: list[str]) -> list[Hit]:
        docs = ", ".join("'" + d.replace("'", "''") + "'" for d in documents)
        ends = " OR ".join(f"section LIKE '%{lab}' " for lab in labels)
        rows = (
            self.table.search()
            .where(f"document_id IN ({docs}) AND ({ends})")
            .select(columns())
            .limit(len(documents) * len(labels) * 4)
            .to_list()
        )
        wanted = [r for r in rows if _last(r) in labels]
        wanted.sort(key=lambda r: (documents.index(r["document_id"]), labels.index(_last(r)), r["start"]))
        for r in wanted:
            r["_score"] = 1.0
        return rows_to_hits(
            wanted, self.name, "_score", why=lambda r, _s: f"caption of {_last(r)} named in the query"
        )

    def search(self, query: str, k: int = defaults.EVAL_K) -> list[Hit]:
        """Named captions of the best papers first, then the base hits (deduplicated)."""
        labels = named_labels(query)
        hits = self.base.search(query, k if not labels else max(k, 20))
        if not labels:
            return hits
        documents: list[str] = []
        for h in hits:
            if h.document_id not in documents:
                documents.append(h.document_id)
        captions = self._captions(labels, documents[: self.papers]) if documents else []
        seen = {h.chunk_id for h in captions}
        merged = [*captions, *(h for h in hits if h.chunk_id not in seen)][:k]
        return [dataclasses.replace(h, rank=i) for i, h in enumerate(merged, start=1)]
