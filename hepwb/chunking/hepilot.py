"""The HEPilot chunking algorithm.

1. Prefer semantic boundaries: sections > paragraphs > sentences (then words, for a sentence longer
   than the budget).
2. Pack units greedily until ``chunk_size`` tokens would be exceeded. A new section starts a new
   chunk once the current one is at least ``min_section_fill`` full.
3. Overlap: each chunk after the first also begins with exactly ``chunk_size × chunk_overlap``
   tokens of the previous chunk's text (from a token boundary; shortened only to avoid starting
   inside display math, a table or code); own text is budgeted so the total stays ≤ ``chunk_size``.
4. Display math, tables and fenced code are never split; one that alone exceeds the budget becomes
   its own chunk flagged ``oversized``.
5. Non-retrievable blocks (bibliography entries) are left out; no chunk spans or overlaps across them.

Every chunk is a contiguous span: ``doc.markdown[chunk.start:chunk.end] == chunk.text``.

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> doc = markdown_document("# A\\n\\n" + "One two three. " * 20 + "\\n\\n$$\\nx = y\\n$$", "S")
    >>> chunks = HepilotChunker(chunk_size=32, chunk_overlap=0.25, tokenizer="words").chunk(doc)
    >>> all(doc.markdown[c.start:c.end] == c.text and c.token_count <= 32 for c in chunks)
    True
"""

from __future__ import annotations

from hepwb import defaults
from hepwb.chunking._packing import SizedChunker, add_overlap, block_units, pack
from hepwb.chunking._spans import ChunkSpan, TokenIndex, finalize
from hepwb.chunking.base import config_key, register_chunker
from hepwb.chunking.options import ChunkSize, Overlap, SectionFill
from hepwb.models.tokenizers import get_tokenizer
from hepwb.types import Chunk, Document, JSONObject

__all__ = ["HepilotChunker"]


@register_chunker("hepilot")
class HepilotChunker(SizedChunker):
    """Section > paragraph > sentence greedy packing with fractional overlap (HEPilot spec).

    Args:
        chunk_size: Token budget per chunk, overlap included (HEPilot-compliant range 512-4096;
            smaller values are allowed for research sweeps and labelled as such).
        chunk_overlap: Overlap, a fraction of ``chunk_size``: 0 to 0.75 (:data:`hepwb.limits.CHUNK_OVERLAP`).
        tokenizer: ``"all-MiniLM-L6-v2"`` (default; the embedding model's tokenizer), any Hugging Face
            model name, ``"cl100k"`` or ``"words"``.
        min_section_fill: Start a new chunk at a section heading once the current chunk holds at
            least this fraction of its budget.
    """

    name = "hepilot"

    def __init__(
        self,
        chunk_size: ChunkSize = defaults.CHUNK_SIZE,
        chunk_overlap: Overlap = defaults.CHUNK_OVERLAP,
        tokenizer: str = defaults.EMBEDDING_MODEL,
        min_section_fill: SectionFill = defaults.MIN_SECTION_FILL,
    ) -> None:
        super().__init__(chunk_size, chunk_overlap, tokenizer)
        self.min_section_fill = float(min_section_fill)

    def params(self) -> JSONObject:
        """Parameters defining this chunker."""
        return {**super().params(), "min_section_fill": self.min_section_fill}

    def spans(self, doc: Document, tokens: TokenIndex) -> list[ChunkSpan]:
        """Chunk spans of ``doc`` over an existing token index (shared by composite strategies)."""
        units = block_units(doc, tokens, self.budget)
        own = pack(units, tokens, self.budget, self.min_section_fill)
        return add_overlap(doc, own, tokens, self.overlap_tokens)

    def chunk(self, doc: Document) -> list[Chunk]:
        """Split ``doc`` into chunks."""
        tokens = TokenIndex(doc.markdown, get_tokenizer(self.tokenizer))
        return finalize(doc, self.spans(doc, tokens), tokens, config_key(self))
