"""Section chunking: one chunk per markdown/LaTeX section, split (HEPilot-style) only when over budget.

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> doc = markdown_document("# A\\n\\nShort.\\n\\n# B\\n\\nAlso short.", "S")
    >>> [c.section_path for c in SectionChunker(chunk_size=64, tokenizer="words").chunk(doc)]
    [('A',), ('B',)]
"""

from __future__ import annotations

from hepwb import defaults
from hepwb.chunking._packing import SizedChunker, add_overlap, block_units, pack
from hepwb.chunking._spans import TokenIndex, finalize
from hepwb.chunking.base import config_key, register_chunker
from hepwb.chunking.options import ChunkSize, Overlap
from hepwb.models.tokenizers import get_tokenizer
from hepwb.types import Chunk, Document

__all__ = ["SectionChunker"]


@register_chunker("section")
class SectionChunker(SizedChunker):
    """One chunk per section; sections longer than the budget are split at paragraphs, then sentences.

    Every heading starts a new chunk. The default overlap is 0: sections are self-contained.
    """

    name = "section"

    def __init__(
        self,
        chunk_size: ChunkSize = defaults.SECTION_CHUNK_SIZE,
        chunk_overlap: Overlap = 0.0,
        tokenizer: str = defaults.EMBEDDING_MODEL,
    ) -> None:
        super().__init__(chunk_size, chunk_overlap, tokenizer)

    def chunk(self, doc: Document) -> list[Chunk]:
        """Split ``doc`` at every section heading."""
        tokens = TokenIndex(doc.markdown, get_tokenizer(self.tokenizer))
        units = block_units(doc, tokens, self.budget)
        own = pack(units, tokens, self.budget, min_section_fill=0.0)
        return finalize(doc, add_overlap(doc, own, tokens, self.overlap_tokens), tokens, config_key(self))
