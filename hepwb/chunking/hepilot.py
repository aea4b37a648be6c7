"""The HEPilot chunking algorithm.

1. Prefer semantic boundaries: sections > paragraphs > sentences (then words, for a sentence longer
   than the budget).
2. Pack units greedily until ``chunk_size`` tokens would be exceeded. A new section starts a new
   chunk once the current one is at least ``min_section_fill`` full.
3. Overlap: each chunk after the first also begins with about ``chunk_size × chunk_overlap`` tokens
   of the previous chunk's text (snapped forward to a word start, never starting inside display
   math, a table or code); own text is budgeted so the total stays ≤ ``chunk_size``.
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

from dataclasses import dataclass
from typing import Any, Literal

from hepwb.chunking._spans import ChunkSpan, TokenIndex, finalize
from hepwb.chunking.base import config_key, register_chunker
from hepwb.chunking.sentences import sentence_spans
from hepwb.chunking.tokenizers import DEFAULT_TOKENIZER, get_tokenizer
from hepwb.exceptions import ConfigError
from hepwb.types import Chunk, Document

__all__ = ["HepilotChunker"]


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int
    end: int
    kind: Literal["heading", "text", "atomic", "barrier"]
    oversized: bool = False


@register_chunker("hepilot")
class HepilotChunker:
    """Section > paragraph > sentence greedy packing with fractional overlap (HEPilot spec).

    Args:
        chunk_size: Token budget per chunk, overlap included (HEPilot-compliant range 512-4096;
            smaller values are allowed for research sweeps and labelled as such).
        chunk_overlap: Overlap as a fraction of ``chunk_size`` (0 <= x < 1).
        tokenizer: ``"all-MiniLM-L6-v2"`` (default; the embedding model's tokenizer), any Hugging Face
            model name, or ``"words"``.
        min_section_fill: Start a new chunk at a section heading once the current chunk holds at
            least this fraction of its budget.
    """

    name = "hepilot"

    def __init__(
        self,
        chunk_size: int = 512,
        chunk_overlap: float = 0.1,
        tokenizer: str = DEFAULT_TOKENIZER,
        min_section_fill: float = 0.5,
    ) -> None:
        if not isinstance(chunk_size, int) or chunk_size < 8:
            msg = f"chunk_size must be an integer >= 8 tokens, got {chunk_size!r}"
            raise ConfigError(msg)
        if not 0.0 <= float(chunk_overlap) < 1.0:
            msg = f"chunk_overlap is a fraction 0 <= x < 1 (HEPilot), got {chunk_overlap!r}; e.g. 0.1 for 10%"
            raise ConfigError(msg)
        if not 0.0 <= float(min_section_fill) <= 1.0:
            msg = f"min_section_fill must lie in [0, 1], got {min_section_fill!r}"
            raise ConfigError(msg)
        self.chunk_size = chunk_size
        self.chunk_overlap = float(chunk_overlap)
        self.tokenizer = tokenizer
        self.min_section_fill = float(min_section_fill)
        self.overlap_tokens = round(chunk_size * self.chunk_overlap)
        self.budget = max(chunk_size - self.overlap_tokens, 1)

    def params(self) -> dict[str, Any]:
        """Parameters defining this chunker."""
        return {
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "tokenizer": self.tokenizer,
            "min_section_fill": self.min_section_fill,
        }

    def chunk(self, doc: Document) -> list[Chunk]:
        """Split ``doc`` into chunks."""
        tokens = TokenIndex(doc.markdown, get_tokenizer(self.tokenizer))
        units = self._units(doc, tokens)
        own = self._pack(units, tokens)
        spans = self._add_overlap(doc, own, tokens)
        return finalize(doc, spans, tokens, config_key(self))

    # -- stage 1: units at the strongest boundaries that fit -------------------------------------
    def _units(self, doc: Document, tokens: TokenIndex) -> list[_Unit]:
        units: list[_Unit] = []
        for b in doc.blocks:
            if not b.retrievable:  # e.g. the bibliography: no chunk may span or overlap across it
                if units and units[-1].kind != "barrier":
                    units.append(_Unit(b.start, b.end, "barrier"))
                continue
            n = tokens.count(b.start, b.end)
            if b.kind == "heading":
                units.append(_Unit(b.start, b.end, "heading"))
            elif b.atomic:
                units.append(_Unit(b.start, b.end, "atomic", oversized=n > self.budget))
            elif n <= self.budget:
                units.append(_Unit(b.start, b.end, "text"))
            else:
                text = doc.markdown[b.start : b.end]
                for s, e in sentence_spans(text) or [(0, len(text))]:
                    a, z = b.start + s, b.start + e
                    if tokens.count(a, z) <= self.budget:
                        units.append(_Unit(a, z, "text"))
                    else:
                        units.extend(_Unit(p, q, "text") for p, q in tokens.cut_at_tokens(a, z, self.budget))
        return units

    # -- stage 2: greedy packing -------------------------------------------------------------------
    def _pack(self, units: list[_Unit], tokens: TokenIndex) -> list[ChunkSpan]:
        out: list[ChunkSpan] = []
        cur: list[_Unit] = []

        def flush(group: list[_Unit]) -> None:
            if group:
                out.append(ChunkSpan(group[0].start, group[-1].end, group[0].start))

        for u in units:
            if u.kind == "barrier":
                flush(cur)
                cur = []
                continue
            if u.oversized:
                flush(cur)
                cur = []
                out.append(ChunkSpan(u.start, u.end, u.start, oversized=True))
                continue
            if cur:
                total = tokens.count(cur[0].start, u.end)
                fill = tokens.count(cur[0].start, cur[-1].end)
                only_headings = all(c.kind == "heading" for c in cur)
                section_break = (
                    u.kind == "heading" and not only_headings and fill >= self.min_section_fill * self.budget
                )
                if total > self.budget or section_break:
                    # keep trailing headings with the content that follows them
                    carry: list[_Unit] = []
                    while cur and cur[-1].kind == "heading" and not only_headings:
                        carry.insert(0, cur.pop())
                    if carry and tokens.count(carry[0].start, u.end) > self.budget:
                        cur.extend(carry)
                        carry = []
                    flush(cur)
                    cur = carry
            cur.append(u)
        flush(cur)
        return out

    # -- stage 3: overlap from the previous chunk ------------------------------------------------
    def _add_overlap(self, doc: Document, own: list[ChunkSpan], tokens: TokenIndex) -> list[ChunkSpan]:
        if self.overlap_tokens == 0:
            return own
        atomic = [(b.start, b.end) for b in doc.blocks if b.atomic]
        hidden = [b.start for b in doc.blocks if not b.retrievable]
        spans: list[ChunkSpan] = []
        for k, sp in enumerate(own):
            if k == 0 or sp.oversized or own[k - 1].oversized:
                spans.append(sp)
                continue
            prev = own[k - 1]
            if any(prev.end <= h < sp.start for h in hidden):
                spans.append(sp)
                continue
            first = tokens.first_token_at(sp.start)
            j = max(first - self.overlap_tokens, tokens.first_token_at(prev.start))
            start = tokens.word_start_at_or_after(j, sp.start)
            for a, z in atomic:
                if a < start < z:
                    start = tokens.word_start_at_or_after(tokens.first_token_at(z), sp.start)
            spans.append(ChunkSpan(start, sp.end, sp.start))
        return spans
