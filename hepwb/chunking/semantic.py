"""Semantic chunking: cut where consecutive sentences stop being about the same thing.

Sentences are embedded (all-MiniLM-L6-v2 by default); a breakpoint falls between two neighbours
whose cosine distance is above the document's ``breakpoint_percentile``-th percentile of such
distances. Pieces between breakpoints are packed greedily into the token budget (so a long topic is
still split), atomic blocks stay whole and nothing spans the bibliography.

Embedding every sentence costs time (about 170 short texts/s on 2 CPU cores); chunk sets are cached.
"""

from __future__ import annotations

import numpy as np

from hepwb import defaults
from hepwb.chunking._packing import SizedChunker, Unit, add_overlap, block_units, pack
from hepwb.chunking._spans import TokenIndex, finalize
from hepwb.chunking.base import config_key, register_chunker
from hepwb.chunking.options import ChunkSize, Overlap, Percentile
from hepwb.models.embedder import get_embedder
from hepwb.models.tokenizers import get_tokenizer
from hepwb.types import Chunk, Document, JSONObject

__all__ = ["SemanticChunker"]


@register_chunker("semantic")
class SemanticChunker(SizedChunker):
    """Breakpoints at unusually large embedding distances between consecutive sentences.

    Args:
        chunk_size: Token budget per chunk, overlap included.
        chunk_overlap: Overlap as a fraction of ``chunk_size`` (default 0).
        tokenizer: Token counter name.
        embedding_model: Sentence-transformers model embedding the sentences.
        breakpoint_percentile: Distances above this percentile (0-100) of the document's
            neighbour distances start a new chunk.
    """

    name = "semantic"

    def __init__(
        self,
        chunk_size: ChunkSize = defaults.CHUNK_SIZE,
        chunk_overlap: Overlap = 0.0,
        tokenizer: str = defaults.EMBEDDING_MODEL,
        embedding_model: str = defaults.EMBEDDING_MODEL,
        breakpoint_percentile: Percentile = defaults.BREAKPOINT_PERCENTILE,
    ) -> None:
        super().__init__(chunk_size, chunk_overlap, tokenizer)
        self.embedding_model = embedding_model
        self.breakpoint_percentile = float(breakpoint_percentile)

    def params(self) -> JSONObject:
        """Parameters defining this chunker."""
        return {
            **super().params(),
            "embedding_model": self.embedding_model,
            "breakpoint_percentile": self.breakpoint_percentile,
        }

    def _breaks(self, doc: Document, units: list[Unit]) -> set[int]:
        """Indices ``i`` of text units after which a semantic breakpoint falls."""
        text_idx = [i for i, u in enumerate(units) if u.kind == "text"]
        if len(text_idx) < 3:
            return set()
        vecs = get_embedder(self.embedding_model).embed(
            [doc.markdown[units[i].start : units[i].end] for i in text_idx]
        )
        dist = 1.0 - np.einsum("ij,ij->i", vecs[:-1], vecs[1:])
        threshold = float(np.percentile(dist, self.breakpoint_percentile))
        return {text_idx[k] for k in range(len(dist)) if dist[k] > threshold}

    def chunk(self, doc: Document) -> list[Chunk]:
        """Split ``doc`` at semantic breakpoints (and at the token budget)."""
        tokens = TokenIndex(doc.markdown, get_tokenizer(self.tokenizer))
        units = block_units(doc, tokens, self.budget, sentences=True)
        breaks = self._breaks(doc, units)
        marked: list[Unit] = []
        for i, u in enumerate(units):
            marked.append(u)
            if i in breaks:
                marked.append(Unit(u.end, u.end, "barrier"))  # zero-width: flush here
        own = pack(marked, tokens, self.budget, min_section_fill=None)
        return finalize(doc, add_overlap(doc, own, tokens, self.overlap_tokens), tokens, config_key(self))
