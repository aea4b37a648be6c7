"""Recover numbered bibliography entries that layout analysis left inside text blocks.

REVTeX letters print the bibliography without a heading, often run on after the last footnote
(``… Illinois 60439 [1] D. Müller, … [2] A. Radyushkin, …``), and a page break can leave the
tail of a detected bibliography as ordinary paragraphs. Starting at the last ``[1]`` that is
followed by ``[2]``, the entries ``[1]``, ``[2]``, … are followed in order through the document;
the blocks they cover are re-cut at the entry markers into ``reference`` blocks (text before the
first marker keeps its kind). The markdown is unchanged: only block boundaries move.

Example:
    >>> from hepwb.processing.markdown import parse_blocks
    >>> md = "Body text [1].\\n\\nFootnote. [1] A. B, J. 1 (2000) 1. [2] C. D, J. 2 (2001) 2."
    >>> blocks, entries = recover_bibliography(md, parse_blocks(md))
    >>> [(b.kind, md[b.start:b.end]) for b in blocks]  # doctest: +NORMALIZE_WHITESPACE
    [('text', 'Body text [1].'), ('text', 'Footnote.'),
     ('reference', '[1] A. B, J. 1 (2000) 1.'), ('reference', '[2] C. D, J. 2 (2001) 2.')]
    >>> entries
    ['[1] A. B, J. 1 (2000) 1.', '[2] C. D, J. 2 (2001) 2.']
"""

from __future__ import annotations

import bisect
import itertools
import re

from hepwb.types import Block

__all__ = ["recover_bibliography"]

_MARK = re.compile(r"\[(\d{1,4})\]\s+(?=[A-Z\u00c0-\u024f]|https?:|www\.)")
_FIRST_GAP = 2500
_NEXT_GAP = 6000
_TAIL_MAX = 300
_BODY_CITE = re.compile(r"\[\d{1,4}(?:[,–-]\s?\d{1,4})*\][\s.,;]")
_BIBLIO = re.compile(r"\((?:19|20)\d\d\)|\b(?:19|20)\d\d\b|arXiv|doi|\b\d{4}\.\d{4,5}\b|https?://")
_KEEP = frozenset({"heading", "math", "table", "caption", "code", "figure_text"})


class _Markers:
    """Offsets of every entry-like marker ``[n]`` (followed by a capital or a URL), by number."""

    def __init__(self, markdown: str) -> None:
        self.at: dict[int, list[int]] = {}
        for m in _MARK.finditer(markdown):
            self.at.setdefault(int(m.group(1)), []).append(m.start())

    def next(self, n: int, pos: int, limit: int) -> int:
        """The first ``[n]`` in ``[pos, limit)``, or -1."""
        offsets = self.at.get(n, [])
        k = bisect.bisect_left(offsets, pos)
        return offsets[k] if k < len(offsets) and offsets[k] < limit else -1


def _entry_starts(markdown: str, kept: list[tuple[int, int]]) -> list[int]:
    """Offsets of ``[1]``, ``[2]``, … of the bibliography (empty when there is none).

    The gap allowed between two entries does not count tables, equations, captions and headings
    (``kept``): data tables often sit between the bibliography's pages.
    """
    marks = _Markers(markdown)
    first = -1
    for at in marks.at.get(1, []):
        if marks.next(2, at + 3, at + _FIRST_GAP) >= 0:
            first = at
    if first < 0:
        return []
    # kept characters before each span end, to measure gaps without them
    spans = sorted(kept)
    ends = [z for _, z in spans]
    covered = list(itertools.accumulate((z - a for a, z in spans), initial=0))

    def kept_before(x: int) -> int:
        k = bisect.bisect_right(ends, x)
        inside = max(0, x - spans[k][0]) if k < len(spans) else 0
        return covered[k] + inside

    starts = [first]
    n = 2
    while (at := marks.next(n, starts[-1] + 3, len(markdown))) >= 0:
        if at - starts[-1] - (kept_before(at) - kept_before(starts[-1])) > _NEXT_GAP:
            break
        starts.append(at)
        n += 1
    return starts if len(starts) >= 2 else []


def _continuation(text: str) -> bool:
    """Whether an unmarked block reads as the rest of an entry (short, with a year, DOI or arXiv id)."""
    return len(text) <= _TAIL_MAX and not _BODY_CITE.search(text) and bool(_BIBLIO.search(text))


def _trim(markdown: str, a: int, z: int) -> tuple[int, int]:
    while a < z and markdown[a].isspace():
        a += 1
    while z > a and markdown[z - 1].isspace():
        z -= 1
    return a, z


def recover_bibliography(markdown: str, blocks: list[Block]) -> tuple[list[Block], list[str]]:
    """Blocks with the bibliography cut into ``reference`` blocks, and the entry texts.

    Returns the blocks unchanged and no entries when no numbered bibliography of at least two
    entries is found, or when it would recover fewer entries than the blocks already hold.
    """
    starts = _entry_starts(markdown, [(b.start, b.end) for b in blocks if b.kind in _KEEP])
    already = sum(1 for b in blocks if b.kind == "reference")
    if len(starts) <= already:
        return blocks, []
    first = starts[0]
    # the last entry runs to the end of its block, plus short continuation blocks after it
    last_block = next(i for i, b in enumerate(blocks) if b.end > starts[-1])
    end = blocks[last_block].end
    for b in blocks[last_block + 1 :]:
        if b.kind in _KEEP or not _continuation(markdown[b.start : b.end]):
            break
        end = b.end
    out: list[Block] = []
    pieces: list[list[str]] = [[] for _ in starts]
    for b in blocks:
        if b.end <= first or b.start >= end or b.kind in _KEEP:
            out.append(b)
            continue
        lo, hi = bisect.bisect_left(starts, b.start), bisect.bisect_left(starts, b.end)
        inside = starts[lo:hi]
        if not inside and not _continuation(markdown[b.start : b.end]):  # prose between entries
            out.append(b)
            continue
        cuts = sorted({b.start, b.end, *inside})
        for a, z in itertools.pairwise(cuts):
            a, z = _trim(markdown, a, z)
            if z <= a:
                continue
            if z <= first:  # text before the first entry keeps its kind
                out.append(Block(b.kind, a, z, b.page, b.level, b.page_end))
                continue
            k = max(bisect.bisect_right(starts, a) - 1, 0)
            out.append(Block("reference", a, z, b.page, 0, b.page_end))
            pieces[k].append(markdown[a:z])
    return out, [" ".join(p) for p in pieces if p]
