r"""Locate evidence quotes in processed documents and measure how much of a quote a chunk holds.

Quotes are compared through :func:`key` - the rule of ``shared/eval/check_quotes.py``: NFKC,
lowercase, keep only ``[a-z0-9]``. That makes matching independent of the extractor (spacing,
hyphenation, ligatures, Greek letters and math symbols all drop out).

A :class:`KeyIndex` holds a document's key string plus, for every key character, the markdown
span of the source character(s) it came from, so a match in key space maps back to a
``[start, end)`` span of ``Document.markdown``.

Relevance rule (used by :mod:`hepwb.evaluation.metrics`): a retrieved chunk is *relevant* to an
evidence quote when it lies in the same document and covers at least ``min_coverage`` (default
0.5) of the quote's key characters (:func:`coverage`). A quote wholly inside a chunk has coverage
1.0 - the check_quotes strict rule applied to the chunk's text; a quote straddling two chunks
counts for whichever chunk holds at least half of it (with overlapping chunks, possibly both).
``min_coverage=1.0`` asks for strict containment.

Example:
    >>> from hepwb.types import Block, Document, Hit
    >>> md = "# Intro\n\nThe beam-spin asymmetry is A = -0.23 ± 0.04."
    >>> doc = Document("d1", "P01", md, (Block("heading", 0, 7, 1, 1), Block("text", 9, len(md), 2)))
    >>> ev = Evidence("Q#e0", "P01", 2, "beam spin asymmetry is A = −0.23 ± 0.04")
    >>> loc = locate(ev, {"P01": doc})
    >>> loc.method, loc.page_ok, md[loc.start:loc.end]
    ('strict', True, 'beam-spin asymmetry is A = -0.23 ± 0.04')
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from hepwb import defaults
from hepwb.evaluation.questions import Evidence, Question
from hepwb.exceptions import ConfigError
from hepwb.textkey import NON_KEY, key
from hepwb.types import Block, Document, Hit

__all__ = [
    "MIN_KEY_CHARS",
    "PIECE",
    "TOLERANT_SHARE",
    "KeyIndex",
    "Located",
    "build_keyindexes",
    "coverage",
    "is_relevant",
    "key",
    "key_index",
    "locate",
    "locate_all",
    "unlocated_reason",
]

MIN_KEY_CHARS = 25
"""Quotes whose key is shorter than this are too unspecific to locate (check_quotes rule)."""
PIECE = 16
"""Length of the key pieces of the tolerant rule."""
TOLERANT_SHARE = 0.9
"""Share of pieces that must be found, in order, for a tolerant match."""
_MAX_OCCURRENCES = 200


@dataclass(frozen=True, eq=False)
class KeyIndex:
    """A document's key string with a map from key characters back to markdown offsets.

    Attributes:
        document_id: The document's UUID.
        label: The document's short name (``"P01"``).
        key: ``key(markdown)``, built segment by segment (a base character plus its combining marks).
        starts: ``starts[i]`` is the markdown offset of the source of key character ``i`` (non-decreasing).
        ends: ``ends[i]`` is one past the source of key character ``i``.
        blocks: The document's blocks, for page look-ups.
        block_starts: ``Block.start`` of every block, ascending.

    Example:
        >>> idx = KeyIndex.build(Document("d", "P00", "Ef-ﬁcient α!", ()))
        >>> idx.key, idx.starts.tolist(), idx.span(0, len(idx.key))
        ('efficient', [0, 1, 3, 3, 4, 5, 6, 7, 8], (0, 9))
    """

    document_id: str
    label: str
    key: str
    starts: np.ndarray
    ends: np.ndarray
    blocks: tuple[Block, ...]
    block_starts: np.ndarray

    @classmethod
    def build(cls, document: Document) -> KeyIndex:
        """Build the index of ``document`` (vectorised over ASCII; non-ASCII handled one by one)."""
        text = document.markdown
        n = len(text)
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        lower = codes | 0x20
        counts = (((codes >= 48) & (codes <= 57)) | ((lower >= 97) & (lower <= 122))).astype(np.int64)
        seg_end = np.arange(1, n + 1, dtype=np.int64)
        special: dict[int, str] = {}
        cache: dict[str, str] = {}
        base = prev_mark = -2
        for i in np.flatnonzero(codes > 127).tolist():
            if not unicodedata.combining(text[i]):
                special[i] = ""
                continue
            if prev_mark != i - 1:  # first mark after a base character (or at the very start)
                base = max(i - 1, 0)
            if base != i:
                counts[i] = 0
            seg_end[base] = i + 1
            special[base] = ""
            prev_mark = i
        for s in special:
            seg = text[s : int(seg_end[s])]
            piece = cache.get(seg)
            if piece is None:
                piece = cache[seg] = key(seg)
            special[s] = piece
            counts[s] = len(piece)
        parts: list[str] = []
        prev = 0
        for s in sorted(special):
            parts.append(text[prev:s].lower())
            parts.append(special[s])
            prev = int(seg_end[s])
        parts.append(text[prev:].lower())
        key_text = NON_KEY.sub("", "".join(parts))
        # int32 offsets (a document is far below 2**31 characters): half the memory of the map
        starts = np.repeat(np.arange(n, dtype=np.int32), counts)
        ends = np.repeat(seg_end.astype(np.int32), counts)
        if len(key_text) != len(starts):  # pragma: no cover - guards the construction above
            msg = f"KeyIndex of document {document.label!r}: key/offset length mismatch; please report"
            raise ConfigError(msg)
        return cls(
            document_id=document.document_id,
            label=document.label,
            key=key_text,
            starts=starts,
            ends=ends,
            blocks=document.blocks,
            block_starts=np.fromiter((b.start for b in document.blocks), dtype=np.int64),
        )

    def span(self, key_start: int, key_end: int) -> tuple[int, int]:
        """Return the markdown span ``[start, end)`` of key characters ``[key_start, key_end)``."""
        if key_end <= key_start:
            msg = f"empty key range [{key_start}, {key_end}) in document {self.label!r}"
            raise ConfigError(msg)
        return int(self.starts[key_start]), int(self.ends[key_end - 1])

    def key_range(self, start: int, end: int) -> tuple[int, int]:
        """Return the key characters ``[ks, ke)`` whose source starts in markdown span ``[start, end)``."""
        lo, hi = np.searchsorted(self.starts, (start, end), side="left")
        return int(lo), int(hi)

    def block_at(self, offset: int) -> Block | None:
        """Return the last block starting at or before ``offset`` (None before the first block)."""
        i = int(np.searchsorted(self.block_starts, offset, side="right")) - 1
        return self.blocks[i] if i >= 0 else None


_INDEX_CACHE: dict[tuple[str, int, int], KeyIndex] = {}
_CACHE_SIZE = 256


def key_index(document: Document) -> KeyIndex:
    """Return the (cached) :class:`KeyIndex` of ``document``; built once per document content."""
    ck = (document.document_id, len(document.markdown), hash(document.markdown))
    idx = _INDEX_CACHE.get(ck)
    if idx is None or idx.blocks != document.blocks:
        _INDEX_CACHE.pop(ck, None)
        if len(_INDEX_CACHE) >= _CACHE_SIZE:
            _INDEX_CACHE.pop(next(iter(_INDEX_CACHE)))
        idx = _INDEX_CACHE[ck] = KeyIndex.build(document)
    return idx


def build_keyindexes(documents: Iterable[Document | KeyIndex]) -> dict[str, KeyIndex]:
    """Return ``{document_id: KeyIndex}`` for ``documents`` (the ``keyindexes`` of ``evaluate``).

    Raises:
        ConfigError: Two documents share a ``document_id`` but differ in text.
    """
    out: dict[str, KeyIndex] = {}
    for d in documents:
        idx = _as_index(d)
        if idx.document_id in out and out[idx.document_id].key != idx.key:
            msg = f"two different documents share document_id {idx.document_id!r}; evaluate one at a time"
            raise ConfigError(msg)
        out[idx.document_id] = idx
    return out


@dataclass(frozen=True, slots=True)
class Located:
    """Where an evidence quote stands in a processed document.

    Attributes:
        eid: The evidence id (``"{qid}#e{i}"``).
        qid: The question id.
        label: Document label (``"P01"``).
        document_id: Document UUID.
        start: Markdown offset where the match begins.
        end: Markdown offset one past the match.
        key_start: First matched character in the document's key string.
        key_end: One past the last matched key character.
        method: ``"strict"`` (whole key found) or ``"tolerant"`` (>= 90 % of 16-char pieces, in order).
        page: Page of the block containing ``start`` (None when the document has no blocks there).
        page_ok: Whether the evidence page lies within that block's pages.
    """

    eid: str
    qid: str
    label: str
    document_id: str
    start: int
    end: int
    key_start: int
    key_end: int
    method: Literal["strict", "tolerant"]
    page: int | None
    page_ok: bool


def _page_info(index: KeyIndex, offset: int, wanted: int | None) -> tuple[int | None, bool]:
    """The page at ``offset`` and whether it is the ``wanted`` one (any page is, when none is wanted)."""
    block = index.block_at(offset)
    if block is None:
        return None, wanted is None
    if wanted is None:
        return block.page, True
    return block.page, block.page <= wanted <= max(block.page, block.page_end)


def _occurrences(text: str, sub: str) -> Iterator[int]:
    j, count = text.find(sub), 0
    while j >= 0 and count < _MAX_OCCURRENCES:
        yield j
        j, count = text.find(sub, j + 1), count + 1


def _strict(qk: str, index: KeyIndex, page: int | None) -> tuple[int, int] | None:
    first: int | None = None
    for j in _occurrences(index.key, qk):
        if _page_info(index, int(index.starts[j]), page)[1]:
            return j, j + len(qk)
        first = j if first is None else first
    return None if first is None else (first, first + len(qk))


def _tolerant(qk: str, index: KeyIndex, page: int | None) -> tuple[int, int] | None:
    """check_quotes' tolerant rule, anchored at each occurrence of an early piece, within a window."""
    pieces = [qk[i : i + PIECE] for i in range(0, len(qk), PIECE)]
    n = len(pieces)
    need = next(f for f in range(n + 1) if f / n >= TOLERANT_SHARE)
    window = 2 * len(qk) + 256
    best: tuple[int, bool, int, int] | None = None  # found, page_ok, -span, -start
    best_span = (0, 0)
    text = index.key
    for a in range(n - need + 1):  # some piece among the first n-need+1 must be found
        for pos in _occurrences(text, pieces[a]):
            limit = min(pos + window, len(text))
            found, cur = 1, pos + len(pieces[a])
            end = cur
            for p in pieces[a + 1 :]:
                j = text.find(p, cur, limit)
                if j >= 0:
                    found += 1
                    cur = end = j + len(p)
            if found < need:
                continue
            cand = (found, _page_info(index, int(index.starts[pos]), page)[1], pos - end, -pos)
            if best is None or cand > best:
                best, best_span = cand, (pos, end)
    return None if best is None else best_span


def _as_index(value: Document | KeyIndex) -> KeyIndex:
    return value if isinstance(value, KeyIndex) else key_index(value)


def unlocated_reason(evidence: Evidence, documents_by_label: Mapping[str, Document | KeyIndex]) -> str:
    """Explain why :func:`locate` returns None for ``evidence`` (``""`` when it is located)."""
    if evidence.doc not in documents_by_label:
        return f"no document labelled {evidence.doc!r}"
    n = len(key(evidence.quote))
    if n < MIN_KEY_CHARS:
        return f"quote key has {n} characters (< {MIN_KEY_CHARS})"
    if locate(evidence, documents_by_label) is None:
        return "quote not found (strict or tolerant)"
    return ""


def locate(evidence: Evidence, documents_by_label: Mapping[str, Document | KeyIndex]) -> Located | None:
    """Find ``evidence``'s quote in the document whose label is ``evidence.doc``.

    Strict first (the quote's key is a substring of the document key; the first occurrence on the
    evidence page, else the first occurrence), then tolerant (check_quotes' 90 % rule; the span runs
    from the first to the last matched piece).

    Args:
        evidence: The quote to find.
        documents_by_label: Documents (or their key indexes) by label.

    Returns:
        The location, or None when the document is missing, the quote key is shorter than
        ``MIN_KEY_CHARS`` characters, or the quote is not found (see :func:`unlocated_reason`).
    """
    doc = documents_by_label.get(evidence.doc)
    qk = key(evidence.quote)
    if doc is None or len(qk) < MIN_KEY_CHARS:
        return None
    index = _as_index(doc)
    method: Literal["strict", "tolerant"] = "strict"
    found = _strict(qk, index, evidence.page)
    if found is None:
        method = "tolerant"
        found = _tolerant(qk, index, evidence.page)
        if found is None:
            return None
    key_start, key_end = found
    start, end = index.span(key_start, key_end)
    page, page_ok = _page_info(index, start, evidence.page)
    return Located(
        eid=evidence.eid,
        qid=evidence.qid,
        label=index.label,
        document_id=index.document_id,
        start=start,
        end=end,
        key_start=key_start,
        key_end=key_end,
        method=method,
        page=page,
        page_ok=page_ok,
    )


def locate_all(
    questions: Sequence[Question], documents: Iterable[Document | KeyIndex]
) -> tuple[list[Located], list[Evidence]]:
    """Locate every evidence quote of ``questions`` in ``documents`` (matched by label).

    Returns:
        ``(located, unlocated)``: the located quotes, and the evidence that could not be located
        (report them; :func:`unlocated_reason` says why).

    Raises:
        ConfigError: Two documents share a label.
    """
    wanted = {ev.doc for q in questions for ev in q.evidence}
    ids: dict[str, str] = {}
    by_label: dict[str, KeyIndex] = {}
    for d in documents:
        if ids.setdefault(d.label, d.document_id) != d.document_id:
            msg = f"two documents are labelled {d.label!r}; labels must be unique to match evidence"
            raise ConfigError(msg)
        if d.label in wanted:  # only documents some evidence names are indexed (not a corpus's distractors)
            by_label[d.label] = _as_index(d)
    located: list[Located] = []
    unlocated: list[Evidence] = []
    for q in questions:
        for ev in q.evidence:
            loc = locate(ev, by_label)
            if loc is None:
                unlocated.append(ev)
            else:
                located.append(loc)
    return located, unlocated


def coverage(located: Located, chunk_start: int, chunk_end: int, keyindex: KeyIndex) -> float:
    """Share of the located quote's key characters whose source lies in ``[chunk_start, chunk_end)``.

    O(log n) through binary search on the key-to-offset map. The caller checks that the chunk is
    in the same document.

    Example:
        >>> from hepwb.types import Document
        >>> idx = KeyIndex.build(Document("d", "P00", "aaaa bbbb cccc", ()))
        >>> loc = Located("Q#e0", "Q", "P00", "d", 5, 14, 4, 12, "strict", None, False)
        >>> coverage(loc, 0, 9, idx), coverage(loc, 5, 14, idx), coverage(loc, 12, 20, idx)
        (0.5, 1.0, 0.25)
    """
    total = located.key_end - located.key_start
    if total <= 0:
        return 0.0
    lo, hi = keyindex.key_range(chunk_start, chunk_end)
    inside = min(hi, located.key_end) - max(lo, located.key_start)
    return max(inside, 0) / total


def is_relevant(loc: Located, hit: Hit, idx: KeyIndex, min_coverage: float = defaults.MIN_COVERAGE) -> bool:
    """Whether ``hit`` is relevant to the located quote ``loc``.

    True when the hit is in the quote's document and either covers at least ``min_coverage`` of the
    located occurrence, or holds the quote verbatim elsewhere (the ``check_quotes.py`` strict rule
    applied to the chunk: a repeated sentence, e.g. abstract and conclusion, counts wherever it is).
    """
    if hit.document_id != loc.document_id:
        return False
    if coverage(loc, hit.start, hit.end, idx) >= min_coverage:
        return True
    if loc.method != "strict":
        return False
    ks, ke = idx.key_range(hit.start, hit.end)
    return ke - ks >= loc.key_end - loc.key_start and idx.key[loc.key_start : loc.key_end] in idx.key[ks:ke]
