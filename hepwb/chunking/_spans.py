"""Shared helpers for chunkers: token offsets over a whole document and chunk finalisation."""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hepwb.models.tokenizers import Tokenizer
from hepwb.processing.figures import caption_label, roman
from hepwb.processing.xrefs import find_mentions
from hepwb.text.ids import content_uuid, text_sha256
from hepwb.types import Block, Chunk, Document, JSONObject

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["ChunkSpan", "TokenIndex", "bare_heading", "finalize"]


_SPANS: dict[tuple[str, str], NDArray[np.int64]] = {}
_SPANS_MAX = 256  # documents whose token spans one process remembers (a paper's are ~0.5 MB)


def _token_spans(text: str, tokenizer: Tokenizer) -> NDArray[np.int64]:
    """``tokenizer.spans(text)``, remembered by tokenizer and content.

    A paper is tokenized once per process, not once per chunk size: chunking at a new size then only packs
    the tokens it already has.
    """
    name = f"{type(tokenizer).__qualname__}:{getattr(tokenizer, 'name', '')}"
    key = (name, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
    spans = _SPANS.get(key)
    if spans is None:
        spans = tokenizer.spans(text)
        if len(_SPANS) >= _SPANS_MAX:
            _SPANS.clear()
        _SPANS[key] = spans
    return spans


class TokenIndex:
    """Token spans of one document, for O(log n) token counts of any character span."""

    def __init__(self, text: str, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        spans = _token_spans(text, tokenizer)
        self.starts = spans[:, 0].copy() if len(spans) else np.zeros(0, dtype=np.int64)
        self.ends = spans[:, 1].copy() if len(spans) else np.zeros(0, dtype=np.int64)
        # one token at a time, Python lists and bisect are ~10x faster than NumPy scalars (the packers ask
        # thousands of counts per paper)
        self._starts: list[int] = self.starts.tolist()
        self._ends: list[int] = self.ends.tolist()
        self.text = text

    def count(self, start: int, end: int) -> int:
        """Number of tokens lying wholly inside ``[start, end)``."""
        return max(0, bisect.bisect_right(self._ends, end) - bisect.bisect_left(self._starts, start))

    def first_token_at(self, offset: int) -> int:
        """Index of the first token starting at or after ``offset``."""
        return bisect.bisect_left(self._starts, offset)

    def word_start_at_or_after(self, token: int, limit: int) -> int:
        """Offset of the first word that starts in a token at index >= ``token`` (``limit`` if none).

        A token begins a word when it is preceded by whitespace or (BPE tokenizers) starts with it;
        the offset returned is that of the word's first non-space character.
        """
        i = max(token, 0)
        starts = self._starts
        while i < len(starts) and starts[i] < limit:
            if self._word_start(i):
                s = starts[i]
                while s < limit and self.text[s].isspace():
                    s += 1
                return min(s, limit)
            i += 1
        return limit

    def _word_start(self, i: int) -> bool:
        s = self._starts[i]
        return s == 0 or self.text[s - 1].isspace() or self.text[s].isspace()

    def cut_at_tokens(self, start: int, end: int, budget: int) -> list[tuple[int, int]]:
        """Split ``[start, end)`` into pieces of at most ``budget`` tokens.

        Pieces end before a word start when one lies within the budget; a single "word" longer than
        the budget (a URL, a formula without spaces) is cut between tokens.
        """
        pieces: list[tuple[int, int]] = []
        hi = bisect.bisect_right(self._ends, end)
        cur = start
        i = self.first_token_at(start)
        while hi - i > budget:
            k = i + budget  # the first token that does not fit
            while k > i + 1 and not self._word_start(k):
                k -= 1
            if k == i + 1 and not self._word_start(k):
                k = i + budget  # no word boundary within the budget: cut between tokens
            cut = self._starts[k]
            piece_end = cut
            while piece_end > cur and self.text[piece_end - 1].isspace():
                piece_end -= 1
            pieces.append((cur, piece_end))
            cur, i = cut, k
        pieces.append((cur, end))
        return pieces


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    """A chunk before finalisation: its span, the start of its own (non-overlap) text, and flags."""

    start: int
    end: int
    own_start: int
    oversized: bool = False
    alone: bool = False  # a caption: its own chunk, no overlap given or taken


def _section_paths(doc: Document) -> tuple[list[int], list[tuple[str, ...]]]:
    starts: list[int] = []
    paths: list[tuple[str, ...]] = []
    stack: list[tuple[int, str]] = []
    for b in doc.blocks:
        if b.kind != "heading":
            continue
        title = doc.block_text(b).lstrip("#").strip()
        level = b.level or 1
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        starts.append(b.start)
        paths.append(tuple(t for _, t in stack))
    return starts, paths


_BACK_MATTER = re.compile(r"^\W*(?:[\dIVX]+\.?\s+)?(references|bibliography|literature)\b", re.IGNORECASE)


def _in_back_matter(path: tuple[str, ...]) -> bool:
    return any(_BACK_MATTER.match(s) for s in path)


def caption_home(
    mentions: list[JSONObject],
    kind: str,
    number: int,
    head_starts: list[int],
    head_paths: list[tuple[str, ...]],
) -> tuple[str, ...]:
    """The section a figure or table floated into the bibliography belongs to.

    The section of its first mention (of the document's ``mentions``, :func:`find_mentions`) in the text
    outside the back matter, else the top level. PDF floats often land after the references; they are not
    part of them.
    """
    for m in mentions:
        n = str(m["number"]).rstrip("abcdefghijklmnopqrstuvwxyz")
        if m["kind"] != kind or (int(n) if n.isdigit() else roman(n.upper())) != number:
            continue
        h = bisect.bisect_right(head_starts, int(m["start"])) - 1
        path = head_paths[h] if h >= 0 else ()
        if not _in_back_matter(path):
            return path
    return ()


def _chunk_type(blocks: list[Block]) -> str:
    kinds = {b.kind for b in blocks if b.kind != "heading"}
    if not kinds:
        return "text"
    if kinds == {"caption"}:
        return "caption"
    if kinds == {"caption", "table"}:
        return "table"
    if kinds == {"table"}:
        return "table"
    if kinds == {"math"}:
        return "equation"
    if kinds & {"table", "math"}:
        return "mixed"
    return "text"


def bare_heading(doc: Document, span: ChunkSpan, block_starts: list[int]) -> bool:
    """Whether ``span``'s own text is only headings (a title before front matter, ``## References``).

    Such a span introduces nothing retrievable: the heading stays in the section path of the chunks after
    it (their citation and lexical context), and the table's title column holds the paper's title.
    """
    lo = max(bisect.bisect_right(block_starts, span.own_start) - 1, 0)
    hi = bisect.bisect_left(block_starts, span.end)
    own = [b for b in doc.blocks[lo:hi] if b.end > span.own_start and b.start < span.end]
    text = [b for b in own if doc.markdown[max(b.start, span.own_start) : min(b.end, span.end)].strip()]
    return bool(text) and all(b.kind == "heading" for b in text)


def _merged(spans: list[ChunkSpan], keep: list[bool]) -> list[ChunkSpan]:
    """The kept spans; one whose overlap came from a dropped span takes that text as its own.

    A bare heading's text is then merged into the chunk it introduces, where it was the overlap.
    """
    out: list[ChunkSpan] = []
    dropped = False
    for sp, k in zip(spans, keep, strict=True):
        if not k:
            dropped = True
            continue
        if dropped and sp.own_start > sp.start:
            sp = dataclasses.replace(sp, own_start=sp.start)
        dropped = False
        out.append(sp)
    return out


def finalize(doc: Document, spans: list[ChunkSpan], tokens: TokenIndex, config_key: str) -> list[Chunk]:
    """Turn spans into :class:`Chunk` records with IDs, pages, section paths and overlap sizes.

    Spans whose own text is only headings are left out (:func:`bare_heading`): no chunk is a bare title.
    """
    head_starts, head_paths = _section_paths(doc)
    block_starts = [b.start for b in doc.blocks]
    spans = _merged(spans, [not bare_heading(doc, sp, block_starts) for sp in spans])
    chunks: list[Chunk] = []
    mentions: list[JSONObject] | None = None
    for idx, sp in enumerate(spans):
        text = doc.markdown[sp.start : sp.end]
        h = bisect.bisect_right(head_starts, sp.own_start) - 1
        # a chunk that opens with a heading belongs to that heading's section
        section = head_paths[h] if h >= 0 else ()
        lo = max(bisect.bisect_right(block_starts, sp.start) - 1, 0)
        hi = bisect.bisect_left(block_starts, sp.end)
        inside = [b for b in doc.blocks[lo:hi] if b.end > sp.start and b.start < sp.end]
        kind = _chunk_type(inside)
        captioned = sp.alone or kind == "caption"
        caption = next((b for b in inside if b.kind == "caption"), None) if captioned else None
        if caption is not None and (label := caption_label(doc.block_text(caption))) is not None:
            if _in_back_matter(section):
                mentions = find_mentions(doc) if mentions is None else mentions  # once per document
                section = caption_home(mentions, label[0], label[1], head_starts, head_paths)
            section = (*section, label[2])  # a caption chunk's citation names its figure or table
        pages = sorted({p for b in inside for p in range(b.page, max(b.page, b.page_end) + 1)})
        chunks.append(
            Chunk(
                chunk_id=content_uuid(
                    "chunk", doc.document_id, config_key, sp.start, sp.end, text_sha256(text)
                ),
                document_id=doc.document_id,
                index=idx,
                start=sp.start,
                end=sp.end,
                text=text,
                token_count=tokens.count(sp.start, sp.end)
                if getattr(tokens.tokenizer, "additive", True)
                else tokens.tokenizer.count(text),
                section_path=section,
                pages=tuple(pages) or (doc.page_at(sp.start),),
                chunk_type=kind,
                overlap_tokens=tokens.count(sp.start, sp.own_start) if sp.own_start > sp.start else 0,
                oversized=sp.oversized,
            )
        )
    return chunks
