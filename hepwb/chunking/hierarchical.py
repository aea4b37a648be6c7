"""Hierarchical (parent-child) chunking: small children for search, their parent returned for reading.

Children are HEPilot chunks of ``chunk_size`` tokens; parents are HEPilot chunks of ``parent_size``
tokens without overlap. A child's context (``Chunk.context``) is the span of the parent(s) it lies in.

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> doc = markdown_document("# A\\n\\n" + "Word " * 60, "S")
    >>> chunker = HierarchicalChunker(chunk_size=16, parent_size=64, chunk_overlap=0.0, tokenizer="words")
    >>> kids = chunker.chunk(doc)
    >>> all(c.context_start <= c.start and c.end <= c.context_end for c in kids)
    True
"""

from __future__ import annotations

import bisect
import dataclasses

from hepwb import defaults
from hepwb.chunking._packing import SizedChunker
from hepwb.chunking._spans import TokenIndex, finalize
from hepwb.chunking.base import config_key, register_chunker
from hepwb.chunking.hepilot import HepilotChunker
from hepwb.chunking.options import ChunkSize, Overlap, ParentSize
from hepwb.exceptions import ConfigError
from hepwb.models.tokenizers import get_tokenizer
from hepwb.types import Chunk, Document, JSONObject

__all__ = ["HierarchicalChunker"]


@register_chunker("hierarchical")
class HierarchicalChunker(SizedChunker):
    """Children of ``chunk_size`` tokens, each pointing at its parent of ``parent_size`` tokens.

    Args:
        chunk_size: Child size in tokens (what is embedded and searched).
        chunk_overlap: Overlap between children, as a fraction.
        tokenizer: Token counter name.
        parent_size: Parent size in tokens (what a reader gets); larger than ``chunk_size``.
    """

    name = "hierarchical"

    def __init__(
        self,
        chunk_size: ChunkSize = defaults.HIERARCHICAL_CHUNK_SIZE,
        chunk_overlap: Overlap = defaults.CHUNK_OVERLAP,
        tokenizer: str = defaults.EMBEDDING_MODEL,
        parent_size: ParentSize = defaults.PARENT_SIZE,
    ) -> None:
        super().__init__(chunk_size, chunk_overlap, tokenizer)
        if parent_size <= chunk_size:
            msg = (
                f"chunker 'hierarchical': parent_size ({parent_size}) must be larger than chunk_size "
                f"({chunk_size}), e.g. {2 * chunk_size}"
            )
            raise ConfigError(msg)
        self.parent_size = parent_size

    def params(self) -> JSONObject:
        """Parameters defining this chunker."""
        return {**super().params(), "parent_size": self.parent_size}

    def chunk(self, doc: Document) -> list[Chunk]:
        """Children with their parents' spans as context (one tokenization for both levels)."""
        tokens = TokenIndex(doc.markdown, get_tokenizer(self.tokenizer))
        parents = HepilotChunker(self.parent_size, 0.0, self.tokenizer).spans(doc, tokens)
        children = finalize(
            doc,
            HepilotChunker(self.chunk_size, self.chunk_overlap, self.tokenizer).spans(doc, tokens),
            tokens,
            config_key(self),
        )
        starts = [p.start for p in parents]
        out = []
        for c in children:
            lo = max(bisect.bisect_right(starts, c.start) - 1, 0)
            hi = max(bisect.bisect_left(starts, c.end) - 1, lo)
            out.append(
                dataclasses.replace(
                    c, context_start=min(parents[lo].start, c.start), context_end=max(parents[hi].end, c.end)
                )
            )
        return out
