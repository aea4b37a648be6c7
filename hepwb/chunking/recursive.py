"""Recursive chunking: split on paragraphs, then lines, then sentences, then words, and merge the pieces.

The separator hierarchy of LangChain's ``RecursiveCharacterTextSplitter`` with a token length
function, on exact offsets, and without ever cutting display math, tables or code.

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> doc = markdown_document("Line one is here\\nline two is here\\n\\nThe next paragraph.", "S")
    >>> [c.text for c in RecursiveChunker(chunk_size=8, chunk_overlap=0.0, tokenizer="words").chunk(doc)]
    ['Line one is here\\nline two is here', 'The next paragraph.']
"""

from __future__ import annotations

import re

from hepwb.chunking._packing import SizedChunker, Unit, add_overlap, caption_units, captioned_tables, pack
from hepwb.chunking._spans import TokenIndex, finalize
from hepwb.chunking.base import config_key, register_chunker
from hepwb.chunking.sentences import sentence_spans
from hepwb.models.tokenizers import get_tokenizer
from hepwb.types import Chunk, Document

__all__ = ["RecursiveChunker"]

_LINE = re.compile(r"[^\n]+")


@register_chunker("recursive")
class RecursiveChunker(SizedChunker):
    """Paragraph > line > sentence > word splitting with greedy merging (section structure ignored)."""

    name = "recursive"

    def _pieces(self, doc: Document, start: int, end: int, tokens: TokenIndex, level: int) -> list[Unit]:
        if tokens.count(start, end) <= self.budget:
            return [Unit(start, end, "text")]
        text = doc.markdown[start:end]
        if level == 0:
            parts = [(start + m.start(), start + m.end()) for m in _LINE.finditer(text)]
        elif level == 1:
            parts = [(start + a, start + b) for a, b in sentence_spans(text)]
        else:
            return [Unit(a, b, "text") for a, b in tokens.cut_at_tokens(start, end, self.budget)]
        if len(parts) <= 1:
            return self._pieces(doc, start, end, tokens, level + 1)
        return [u for a, b in parts for u in self._pieces(doc, a, b, tokens, level + 1)]

    def chunk(self, doc: Document) -> list[Chunk]:
        """Split ``doc`` recursively and merge neighbours up to the budget."""
        tokens = TokenIndex(doc.markdown, get_tokenizer(self.tokenizer))
        units: list[Unit] = []
        tabled = captioned_tables(doc)
        for i, b in enumerate(doc.blocks):  # blocks are the paragraph level ("\n\n")
            if not b.retrievable:
                if units and units[-1].kind != "barrier":
                    units.append(Unit(b.start, b.end, "barrier"))
            elif i in tabled:  # a table with its caption, kept whole
                if (pair := tabled[i]) is not None:
                    a, z = pair
                    units.append(Unit(a, z, "caption", oversized=tokens.count(a, z) > self.budget))
            elif b.atomic:
                units.append(
                    Unit(b.start, b.end, "atomic", oversized=tokens.count(b.start, b.end) > self.budget)
                )
            elif b.kind == "caption":
                units.extend(caption_units(doc, b.start, b.end, tokens, self.budget))
            else:
                units.extend(self._pieces(doc, b.start, b.end, tokens, 0))
        own = pack(units, tokens, self.budget, min_section_fill=None)
        return finalize(doc, add_overlap(doc, own, tokens, self.overlap_tokens), tokens, config_key(self))
