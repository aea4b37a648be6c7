"""Building blocks shared by the chunking strategies: units, greedy packing, overlap, size checks.

Every strategy reduces a document to *units* (spans that must not be cut: a heading, a paragraph, a
sentence, an atomic block), packs them greedily into a token budget, then prepends an overlap taken
from the previous chunk. Keeping this in one place keeps the invariants identical everywhere:
exact offsets, atomic blocks never split, nothing spans a bibliography, sizes within budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hepwb import defaults
from hepwb.chunking._spans import ChunkSpan, TokenIndex
from hepwb.chunking.options import ChunkSize, Overlap
from hepwb.chunking.sentences import sentence_spans
from hepwb.models.tokenizers import get_tokenizer
from hepwb.types import Document, JSONObject

__all__ = ["SizedChunker", "Unit", "add_overlap", "block_units", "caption_units", "captioned_tables", "pack"]

UnitKind = Literal["heading", "text", "atomic", "barrier", "caption"]
_BPE_MARGIN = 4


@dataclass(frozen=True, slots=True)
class Unit:
    """A span no chunk boundary may fall inside.

    ``barrier``: a span no chunk may cross; ``caption``: a figure or table caption (or a piece of
    a long one; a table caption with its table), packed alone into its own chunk.
    """

    start: int
    end: int
    kind: UnitKind
    oversized: bool = False


class SizedChunker:
    """Common parameters of the token-budgeted strategies (checked by the registered strategies).

    Args:
        chunk_size: Token budget per chunk, overlap included.
        chunk_overlap: Overlap, a fraction of ``chunk_size``: 0 to 0.75 (:data:`hepwb.limits.CHUNK_OVERLAP`).
        tokenizer: ``"all-MiniLM-L6-v2"`` (default), any Hugging Face model name, ``"cl100k"`` or ``"words"``.
    """

    name = "sized"

    def __init__(
        self,
        chunk_size: ChunkSize = defaults.CHUNK_SIZE,
        chunk_overlap: Overlap = defaults.CHUNK_OVERLAP,
        tokenizer: str = defaults.EMBEDDING_MODEL,
    ) -> None:
        self.chunk_size: int = chunk_size
        self.chunk_overlap = float(chunk_overlap)
        self.tokenizer = tokenizer
        self.overlap_tokens: int = round(self.chunk_size * self.chunk_overlap)

    @property
    def margin(self) -> int:
        """Tokens kept free: BPE counts are not additive over spans, so the recounted chunk must still fit."""
        return 0 if getattr(get_tokenizer(self.tokenizer), "additive", True) else _BPE_MARGIN

    @property
    def budget(self) -> int:
        """Tokens of new text per chunk (the overlap and the margin taken off)."""
        return max(self.chunk_size - self.overlap_tokens - self.margin, 1)

    def params(self) -> JSONObject:
        """Parameters defining this chunker."""
        return {
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "tokenizer": self.tokenizer,
        }


def _split_text(
    doc: Document, start: int, end: int, tokens: TokenIndex, budget: int, sentences: bool
) -> list[Unit]:
    if not sentences and tokens.count(start, end) <= budget:
        return [Unit(start, end, "text")]
    units: list[Unit] = []
    text = doc.markdown[start:end]
    for s, e in sentence_spans(text) or [(0, len(text))]:
        a, z = start + s, start + e
        if tokens.count(a, z) <= budget:
            units.append(Unit(a, z, "text"))
        else:
            units.extend(Unit(p, q, "text") for p, q in tokens.cut_at_tokens(a, z, budget))
    return units


def block_units(doc: Document, tokens: TokenIndex, budget: int, *, sentences: bool = False) -> list[Unit]:
    """Units from the document's blocks: one per heading, atomic block, caption and paragraph.

    Paragraphs longer than ``budget`` (all paragraphs when ``sentences``) become sentence units, and
    sentences longer than ``budget`` are cut at word (or token) boundaries. Non-retrievable blocks
    (the bibliography) become barriers.
    """
    units: list[Unit] = []
    tabled = captioned_tables(doc)
    for i, b in enumerate(doc.blocks):
        if not b.retrievable:
            if units and units[-1].kind != "barrier":
                units.append(Unit(b.start, b.end, "barrier"))
            continue
        if i in tabled:  # a table with its caption: one caption unit, kept whole
            if (pair := tabled[i]) is not None:
                a, z = pair
                units.append(Unit(a, z, "caption", oversized=tokens.count(a, z) > budget))
            continue
        if b.kind == "heading" and tokens.count(b.start, b.end) <= budget:
            units.append(Unit(b.start, b.end, "heading"))
        elif b.kind == "heading":  # a heading longer than the budget is cut like text
            units.extend(_split_text(doc, b.start, b.end, tokens, budget, sentences=False))
        elif b.atomic:
            units.append(Unit(b.start, b.end, "atomic", oversized=tokens.count(b.start, b.end) > budget))
        elif b.kind == "caption":
            units.extend(caption_units(doc, b.start, b.end, tokens, budget))
        else:
            units.extend(_split_text(doc, b.start, b.end, tokens, budget, sentences))
    return units


def captioned_tables(doc: Document) -> dict[int, tuple[int, int] | None]:
    """Tables next to their caption, as block index -> span of the pair.

    The first block of a caption-table pair maps to the span of both, the second to None.
    """
    out: dict[int, tuple[int, int] | None] = {}
    blocks = doc.blocks
    for i in range(len(blocks) - 1):
        a, b = blocks[i], blocks[i + 1]
        if i in out or {a.kind, b.kind} != {"caption", "table"}:
            continue
        out[i], out[i + 1] = (a.start, b.end), None
    return out


def caption_units(doc: Document, start: int, end: int, tokens: TokenIndex, budget: int) -> list[Unit]:
    """A caption as one ``caption`` unit (sentence pieces when it exceeds ``budget``)."""
    return [Unit(u.start, u.end, "caption") for u in _split_text(doc, start, end, tokens, budget, False)]


def pack(
    units: list[Unit], tokens: TokenIndex, budget: int, min_section_fill: float | None = None
) -> list[ChunkSpan]:
    """Greedy packing of ``units`` into chunks of at most ``budget`` tokens.

    A heading starts a new chunk when the current one is at least ``min_section_fill`` full (never
    when ``None``); trailing headings move on with the content that follows them; every caption
    unit is a chunk of its own.
    """
    out: list[ChunkSpan] = []
    cur: list[Unit] = []

    def flush(group: list[Unit]) -> None:
        if group:
            out.append(ChunkSpan(group[0].start, group[-1].end, group[0].start))

    for u in units:
        if u.kind in ("barrier", "caption") or u.oversized:
            flush(cur)
            cur = []
            if u.oversized or u.kind == "caption":
                out.append(
                    ChunkSpan(u.start, u.end, u.start, oversized=u.oversized, alone=u.kind == "caption")
                )
            continue
        if cur:
            total = tokens.count(cur[0].start, u.end)
            fill = tokens.count(cur[0].start, cur[-1].end)
            only_headings = all(c.kind == "heading" for c in cur)
            section_break = (
                min_section_fill is not None
                and u.kind == "heading"
                and not only_headings
                and fill >= min_section_fill * budget
            )
            if total > budget or section_break:
                carry: list[Unit] = []
                while cur and cur[-1].kind == "heading" and not only_headings:
                    carry.insert(0, cur.pop())
                if carry and tokens.count(carry[0].start, u.end) > budget:
                    cur.extend(carry)
                    carry = []
                flush(cur)
                cur = carry
        cur.append(u)
    flush(cur)
    return out


def add_overlap(
    doc: Document, own: list[ChunkSpan], tokens: TokenIndex, overlap_tokens: int
) -> list[ChunkSpan]:
    """Prepend exactly ``overlap_tokens`` tokens of the previous chunk to each chunk (HEPilot rule).

    The overlap starts at a token boundary (possibly inside a word), is shortened only where it
    would start inside an atomic block or before the previous chunk, never reaches across a
    non-retrievable block, and oversized and caption chunks neither get nor give overlap.
    """
    if overlap_tokens == 0:
        return own
    atomic = [(b.start, b.end) for b in doc.blocks if b.atomic]
    hidden = [b.start for b in doc.blocks if not b.retrievable]
    spans: list[ChunkSpan] = []
    for k, sp in enumerate(own):
        prev = own[k - 1] if k else None
        if (
            prev is None
            or sp.oversized
            or prev.oversized
            or sp.alone
            or prev.alone
            or any(prev.end <= h < sp.start for h in hidden)
        ):
            spans.append(sp)
            continue
        first = tokens.first_token_at(sp.start)
        j = max(first - overlap_tokens, tokens.first_token_at(prev.start))
        start = int(tokens.starts[j]) if j < first else sp.start  # exactly `overlap_tokens` tokens back
        while start < sp.start and doc.markdown[start].isspace():  # BPE tokens may begin with a space
            start += 1
        for a, z in atomic:
            if a < start < z:  # never start inside display math, a table or code: less overlap instead
                start = tokens.word_start_at_or_after(tokens.first_token_at(z), sp.start)
        spans.append(ChunkSpan(start, sp.end, sp.start))
    return spans
