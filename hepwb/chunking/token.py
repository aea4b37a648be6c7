"""Fixed-size token windows with overlap (the baseline of chunking studies), atomic blocks kept whole.

Windows hold ``chunk_size`` tokens and start ``chunk_size - overlap`` tokens after the previous one.
A window end that would cut display math, a table or code moves back before it (or, when the block
starts the window, forward past it: that chunk is flagged ``oversized`` if it exceeds the budget).
Windows never cross a bibliography block.

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> doc = markdown_document("a b c d e f g h i j", "S")
    >>> [c.text for c in TokenChunker(chunk_size=8, chunk_overlap=0.25, tokenizer="words").chunk(doc)]
    ['a b c d e f g h', 'g h i j']
"""

from __future__ import annotations

import bisect

import numpy as np

from hepwb.chunking._packing import SizedChunker
from hepwb.chunking._spans import ChunkSpan, TokenIndex, finalize
from hepwb.chunking.base import config_key, register_chunker
from hepwb.chunking.tokenizers import get_tokenizer
from hepwb.types import Chunk, Document

__all__ = ["TokenChunker"]


def _segments(doc: Document) -> list[tuple[int, int]]:
    """Character ranges between non-retrievable blocks."""
    segs, cur = [], 0
    for b in doc.blocks:
        if not b.retrievable:
            segs.append((cur, b.start))
            cur = b.end
    segs.append((cur, len(doc.markdown)))
    return [(a, z) for a, z in segs if z > a]


@register_chunker("token")
class TokenChunker(SizedChunker):
    """Fixed windows of ``chunk_size`` tokens overlapping by ``chunk_size × chunk_overlap`` tokens."""

    name = "token"

    def chunk(self, doc: Document) -> list[Chunk]:
        """Slide token windows over the document."""
        tokens = TokenIndex(doc.markdown, get_tokenizer(self.tokenizer))
        atomic = sorted((b.start, b.end) for b in doc.blocks if b.atomic)
        a_starts = [a for a, _ in atomic]
        spans: list[ChunkSpan] = []
        for seg_start, seg_end in _segments(doc):
            t0 = tokens.first_token_at(seg_start)
            t1 = int(np.searchsorted(tokens.ends, seg_end, side="right"))
            i, own = t0, -1
            while i < t1:
                j = min(i + self.chunk_size, t1)
                s, e = int(tokens.starts[i]), int(tokens.ends[j - 1])
                k = bisect.bisect_right(a_starts, e - 1) - 1  # last atomic block starting before e
                oversized = False
                if k >= 0 and atomic[k][0] < e < atomic[k][1]:
                    a, z = atomic[k]
                    if a > s:  # end the window before the block
                        j = int(np.searchsorted(tokens.ends, a, side="right"))
                    else:  # the block starts the window: take it whole
                        j = int(np.searchsorted(tokens.ends, z, side="right"))
                        oversized = tokens.count(s, z) > self.chunk_size
                    e = int(tokens.ends[j - 1])
                spans.append(ChunkSpan(s, e, max(s, own) if own >= 0 else s, oversized=oversized))
                if j >= t1:
                    break
                nxt = max(j - self.overlap_tokens, i + 1)
                k = bisect.bisect_right(a_starts, int(tokens.starts[nxt])) - 1
                if k >= 0 and atomic[k][0] < int(tokens.starts[nxt]) < atomic[k][1]:
                    nxt = tokens.first_token_at(atomic[k][1])  # do not start inside a block
                own = int(tokens.starts[j]) if j < t1 else e
                i = nxt
        return finalize(doc, spans, tokens, config_key(self))
