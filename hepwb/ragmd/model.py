"""The contents of a ``.ragmd`` file, as typed records.

A file holds one chunk set embedded with one model: its documents, every chunk (text, character offsets
into the document's ``full_document.md``, pages, section) and one vector per chunk, in the order of the
Chunks section (a chunk's position is its vector's position).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hepwb.types import JSONObject

__all__ = ["FORMAT_VERSION", "RagChunk", "RagDocument", "RagFile"]

FORMAT_VERSION = 1


@dataclass(frozen=True)
class RagChunk:
    """One chunk: its key, its place in the document and its text."""

    chunk_id: str
    document_id: str
    chunk_index: int
    i_start: int
    i_end: int
    text: str
    pages: tuple[int, ...] = ()
    section: str = ""
    token_count: int = 0
    context_start: int = -1
    context_end: int = -1
    context_text: str = ""

    def meta(self) -> JSONObject:
        """The chunk's Document Metadata entry (context fields only for a context span other than its own)."""
        out: JSONObject = {
            "chunk_id": self.chunk_id,
            "chunk_index": self.chunk_index,
            "i_start": self.i_start,
            "i_end": self.i_end,
            "pages": list(self.pages),
            "section": self.section,
            "token_count": self.token_count,
            "text": self.text,
        }
        if self.context_start >= 0 and (self.context_start, self.context_end) != (self.i_start, self.i_end):
            out.update(
                context_start=self.context_start, context_end=self.context_end, context_text=self.context_text
            )
        return out


@dataclass(frozen=True)
class RagDocument:
    """One document: its id, label, title and arXiv id."""

    document_id: str
    label: str
    title: str = ""
    arxiv: str = ""


@dataclass
class RagFile:
    """A whole ``.ragmd`` file.

    Attributes:
        model_name: The embedding model (a sentence-transformers name or a local model hepwb resolves).
        chunkset_id: The chunk set the file was exported from.
        created_at: ISO timestamp of the source (never "now": exports are reproducible).
        updated_at: ISO timestamp of the source's last change.
        documents: Documents in file order (label, then id).
        chunks: Chunks in file order (document order, then chunk index).
        vectors: ``float32`` array, one row per chunk.
    """

    model_name: str
    chunkset_id: str
    created_at: str
    updated_at: str
    documents: list[RagDocument]
    chunks: list[RagChunk]
    vectors: np.ndarray = field(repr=False)
    index_type: str = "flat"

    @property
    def embedding_dim(self) -> int:
        """Vector length."""
        return int(self.vectors.shape[1]) if self.vectors.ndim == 2 else 0

    def unsearchable(self) -> list[str]:
        """Ids of the chunks whose vector cannot be searched: not of unit length (within 1 %).

        hepwb's embedders normalise every vector, and search is by inner product: a vector of norm 100
        would rank first for every question, one of norm 1e-44 never. The file format keeps any finite
        floats (and round-trips them exactly); a search or an import into LanceDB needs them as a model
        made them.

        Example:
            >>> chunks = [RagChunk("a", "d", 0, 0, 1, "x"), RagChunk("b", "d", 1, 1, 2, "y")]
            >>> vectors = np.array([[1.0, 0.0], [0.0, 0.0]], dtype="<f4")
            >>> RagFile("m", "c", "t", "t", [], chunks, vectors).unsearchable()
            ['b']
        """
        with np.errstate(over="ignore"):
            norms = np.linalg.norm(self.vectors.astype(np.float64), axis=1) if self.vectors.ndim == 2 else []
        return [c.chunk_id for c, n in zip(self.chunks, norms, strict=False) if not abs(n - 1) <= 0.01]

    def sorted(self) -> RagFile:
        """The same contents in the file's canonical order (documents by label and id, chunks by index)."""
        docs = sorted(self.documents, key=lambda d: (d.label, d.document_id))
        rank = {d.document_id: i for i, d in enumerate(docs)}
        order = sorted(
            range(len(self.chunks)),
            key=lambda i: (
                rank[self.chunks[i].document_id],
                self.chunks[i].chunk_index,
                self.chunks[i].chunk_id,
            ),
        )
        vecs = self.vectors[order] if len(order) else self.vectors
        return RagFile(
            self.model_name,
            self.chunkset_id,
            self.created_at,
            self.updated_at,
            docs,
            [self.chunks[i] for i in order],
            np.ascontiguousarray(vecs, dtype="<f4"),
            self.index_type,
        )
