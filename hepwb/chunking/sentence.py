"""Sentence chunking: whole sentences packed greedily into the token budget, section structure ignored.

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> doc = markdown_document("One is here. Two is here. Three is here.", "S")
    >>> [c.text for c in SentenceChunker(chunk_size=8, chunk_overlap=0.0, tokenizer="words").chunk(doc)]
    ['One is here. Two is here.', 'Three is here.']
"""

from __future__ import annotations

from hepwb.chunking._packing import SizedChunker, add_overlap, block_units, pack
from hepwb.chunking._spans import TokenIndex, finalize
from hepwb.chunking.base import config_key, register_chunker
from hepwb.models.tokenizers import get_tokenizer
from hepwb.types import Chunk, Document

__all__ = ["SentenceChunker"]


@register_chunker("sentence")
class SentenceChunker(SizedChunker):
    """Sentences (Punkt with scientific abbreviations) packed up to ``chunk_size`` tokens.

    Atomic blocks (display math, tables, code) are units of their own; overlap is taken from the
    previous chunk as in every strategy.
    """

    name = "sentence"

    def chunk(self, doc: Document) -> list[Chunk]:
        """Split ``doc`` into chunks of whole sentences."""
        tokens = TokenIndex(doc.markdown, get_tokenizer(self.tokenizer))
        units = block_units(doc, tokens, self.budget, sentences=True)
        own = pack(units, tokens, self.budget, min_section_fill=None)
        return finalize(doc, add_overlap(doc, own, tokens, self.overlap_tokens), tokens, config_key(self))
