"""Searching a ``.ragmd`` file directly: no database, the file alone.

Vectors are decoded into one numpy matrix and searched exactly by inner product (the vectors are
normalised, so it is cosine similarity); BM25 uses bm25s over the same HEP analyzer as hepwb's LanceDB
indexes (:func:`hepwb.models.analyzer.search_terms`): ``bm25`` (``fields=text``) reads the chunk's text as
``search_text`` does, ``bm25(fields=context)`` (hepwb's default retriever) also its paper's title and
section as ``search_context`` does; ``hybrid`` fuses the dense and the text lists with LanceDB's
reciprocal-rank fusion. Hits are :class:`~hepwb.types.Hit` records, as from any retriever.

Example (in a notebook)::

    idx = RagmdIndex.load("corpus.ragmd")
    idx.search("DVCS beam-spin asymmetry at HERMES", "hybrid", k=5)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hepwb import defaults
from hepwb.components.callspec import named
from hepwb.exceptions import ConfigError
from hepwb.index import get_embedder
from hepwb.models.analyzer import search_terms
from hepwb.models.embedder import Embedder
from hepwb.ragmd.model import RagFile
from hepwb.ragmd.reader import load_searchable, model_name_problem
from hepwb.retrieval.base import rows_to_hits
from hepwb.types import Hit

__all__ = ["METHODS", "RagmdIndex"]

METHODS = ("dense", "bm25", "hybrid")
"""The retrievers of a ``.ragmd`` file; ``bm25`` takes ``fields=text`` (the default) or ``context``."""


@dataclass
class RagmdIndex:
    """A loaded ``.ragmd`` file with its BM25 index built in memory."""

    file: RagFile
    embedder: Embedder | None = None
    _bm25: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, path: str | Path, embedder: Embedder | None = None) -> RagmdIndex:
        """Read and check ``path`` (see :func:`hepwb.ragmd.reader.load`); unsearchable vectors are refused."""
        return cls(load_searchable(path), embedder)

    def lexical_index(self, fields: str = defaults.LEXICAL_FIELDS) -> Any:
        """The BM25 index (bm25s) of the chunks' HEP search terms over ``fields``, built on first use, kept.

        ``text``: the chunk's text; ``context``: its paper's title, its section and its text.
        """
        if fields not in self._bm25:
            import logging

            import bm25s

            logging.getLogger("bm25s").setLevel(logging.WARNING)  # no per-call "Building index" lines
            titles = {d.document_id: d.title for d in self.file.documents}

            def terms(c: Any) -> list[str]:
                text = (
                    f"{titles.get(c.document_id, '')} {c.section} {c.text}" if fields == "context" else c.text
                )
                return search_terms(text).lower().split()

            index = bm25s.BM25()
            index.index([terms(c) for c in self.file.chunks], show_progress=False)
            self._bm25[fields] = index
        return self._bm25[fields]

    def dense_ranks(self, query: str, k: int) -> list[tuple[int, float]]:
        """``(position, cosine)`` of the ``k`` nearest chunks (exact)."""
        if self.embedder is None:
            problem = model_name_problem(self.file.model_name)  # a file read elsewhere (a table) is checked
            if problem:
                raise ConfigError(problem)
            self.embedder = get_embedder(self.file.model_name)
        q = np.asarray(self.embedder.embed([query], progress=False)[0], dtype=np.float32)
        if q.shape[0] != self.file.embedding_dim:
            msg = (
                f"{self.embedder.model} gives {q.shape[0]} dimensions, the file's vectors have "
                f"{self.file.embedding_dim}: search with model {self.file.model_name!r}"
            )
            raise ConfigError(msg)
        scores = self.file.vectors @ q
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k] if k else np.array([], dtype=int)
        return sorted(((int(i), float(scores[i])) for i in top), key=lambda t: (-t[1], t[0]))

    def bm25_ranks(
        self, query: str, k: int, fields: str = defaults.LEXICAL_FIELDS
    ) -> list[tuple[int, float]]:
        """``(position, BM25 score)`` of the best ``k`` chunks with a positive score (over ``fields``)."""
        tokens = search_terms(query).lower().split()
        n = len(self.file.chunks)
        if not tokens or not n:
            return []
        docs, scores = self.lexical_index(fields).retrieve([tokens], k=min(k, n), show_progress=False)
        return [(int(d), float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def search(
        self, query: str, method: str = defaults.RAGMD_METHOD, k: int = defaults.SEARCH_K
    ) -> list[Hit]:
        """The top ``k`` chunks by ``method``: ``dense``, ``bm25``, ``bm25(fields=context)`` or ``hybrid``."""
        name, options = named(method)
        fields = options.pop("fields", defaults.LEXICAL_FIELDS) if name == "bm25" else None
        if name not in METHODS or options or fields not in (None, "text", "context"):
            msg = (
                f"a .ragmd file is searched by {METHODS} (bm25 with fields=text or context), not {method!r}; "
                "import it (hepwb import-ragmd) for the others"
            )
            raise ConfigError(msg)
        if name == "dense":
            ranked = self.dense_ranks(query, k)
        elif name == "bm25":
            ranked = self.bm25_ranks(query, k, str(fields))
        else:
            ranked = self._hybrid(query, k)
        return self._hits(ranked, method, query)

    def _hybrid(self, query: str, k: int, fetch: int = defaults.FETCH) -> list[tuple[int, float]]:
        import pyarrow as pa
        from lancedb.rerankers import RRFReranker

        fetch = max(fetch, k)
        dense, lexical = self.dense_ranks(query, fetch), self.bm25_ranks(query, fetch)
        vec = pa.table(
            {
                "_rowid": pa.array([p for p, _ in dense], pa.uint64()),
                "_distance": pa.array([1 - s for _, s in dense], pa.float32()),
            }
        )
        fts = pa.table(
            {
                "_rowid": pa.array([p for p, _ in lexical], pa.uint64()),
                "_score": pa.array([s for _, s in lexical], pa.float32()),
            }
        )
        fused = RRFReranker().rerank_hybrid(query, vec, fts)
        ids, rel = fused["_rowid"].to_pylist(), fused["_relevance_score"].to_pylist()
        return [(int(i), float(s)) for i, s in zip(ids, rel, strict=True)][:k]

    def _hits(self, ranked: list[tuple[int, float]], method: str, query: str) -> list[Hit]:
        docs = {d.document_id: d for d in self.file.documents}
        rows = []
        for pos, score in ranked:
            c = self.file.chunks[pos]
            d = docs[c.document_id]
            rows.append(
                {
                    "chunk_id": c.chunk_id,
                    "document_id": c.document_id,
                    "label": d.label,
                    "start": c.i_start,
                    "end": c.i_end,
                    "text": c.text,
                    "pages": list(c.pages),
                    "section": c.section,
                    "title": d.title,
                    "arxiv": d.arxiv,
                    "_s": score,
                }
            )
        return rows_to_hits(rows, f"ragmd:{method}", "_s", query=query)
