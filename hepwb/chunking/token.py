"""Fixed-size token windows with overlap (the baseline of chunking studies), atomic blocks kept whole.

Windows hold ``chunk_size`` tokens and start ``chunk_size - overlap`` tokens after the previous one.
A window end that would cut display math, a table or code moves back before it (or, when the block
starts the window, forward past it: that chunk is flagged ``oversized`` if it exceeds the budget).
Windows never cross a bibliography block, and every figure or table caption is windowed on its own.

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> doc = markdown_document("a b c d e f g h i j", "S")
    >>> [c.text for c in TokenChunker(chunk_size=8, chunk_overlap=0.25, tokenizer="words").chunk(doc)]
    ['a b c d e f g h', 'g h i j']
"""

from __future__ import annotations

import bisect

import numpy as np

from hepwb.chunking._packing import SizedChunker, captioned_tables
from hepwb.chunking._spans import ChunkSpan, TokenIndex, finalize
from hepwb.chunking.base import config_key, register_chunker
from hepwb.models.tokenizers import get_tokenizer
from hepwb.types import Chunk, Document

__all__ = ["TokenChunker"]


def _segments(doc: Document) -> list[tuple[int, int]]:
    """Ranges between non-retrievable blocks; every caption (with its table) is a range of its own."""
    segs, cur = [], 0
    tabled = captioned_tables(doc)
    for i, b in enumerate(doc.blocks):
        if not b.retrievable:
            segs.append((cur, b.start))
            cur = b.end
        elif i in tabled:
            if (pair := tabled[i]) is not None:
                a, z = pair
                segs.extend([(cur, a), (a, z)])
                cur = z
        elif b.kind == "caption":
            segs.extend([(cur, b.start), (b.start, b.end)])
            cur = b.end
    segs.append((cur, len(doc.markdown)))
    return [(a, z) for a, z in segs if z > a and doc.markdown[a:z].strip()]


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
        size = self.chunk_size - self.margin  # BPE tokenizers: margin for the recount
        captions = {(b.start, b.end) for b in doc.blocks if b.kind == "caption"}
        captions |= {span for span in captioned_tables(doc).values() if span is not None}
        for seg_start, seg_end in _segments(doc):
            alone = (seg_start, seg_end) in captions
            t0 = tokens.first_token_at(seg_start)
            t1 = int(np.searchsorted(tokens.ends, seg_end, side="right"))
            i, prev_end = t0, -1
            while i < t1:
                j = min(i + size, t1)
                s, e = int(tokens.starts[i]), int(tokens.ends[j - 1])
                k = bisect.bisect_right(a_starts, e - 1) - 1  # last atomic block starting before e
                oversized, forced = False, None
                if k >= 0 and atomic[k][0] < e < atomic[k][1]:
                    a, z = atomic[k]
                    before = int(np.searchsorted(tokens.ends, a, side="right"))
                    if a > s and before > i:  # end the window before the block; the next one starts at it
                        j, forced, e = before, tokens.first_token_at(a), a
                    else:  # the block starts the window: take it whole, no overlap after it
                        j = max(tokens.first_token_at(z), i + 1)
                        forced, e = j, z
                        oversized = tokens.count(s, z) > size
                text = doc.markdown
                while s < e and text[s].isspace():  # BPE tokens may carry leading/trailing whitespace
                    s += 1
                while e > s and text[e - 1].isspace():
                    e -= 1
                if e > s:
                    own = min(max(s, prev_end), e) if prev_end >= 0 else s
                    spans.append(ChunkSpan(s, e, own, oversized=oversized, alone=alone))
                    prev_end = e
                if j >= t1:
                    break
                nxt = forced if forced is not None else max(j - self.overlap_tokens, i + 1)
                start_char = int(tokens.starts[nxt])
                k = bisect.bisect_right(a_starts, start_char) - 1
                if forced is None and k >= 0 and atomic[k][0] < start_char < atomic[k][1]:
                    nxt = max(tokens.first_token_at(atomic[k][1]), i + 1)  # never start inside a block
                i = max(nxt, i + 1)
        return finalize(doc, spans, tokens, config_key(self))
