r"""Locate evidence quotes in processed documents and measure how much of a quote a chunk holds.

Quotes are compared through :func:`key` - the rule of ``shared/eval/check_quotes.py``: NFKC,
lowercase, keep only ``[a-z0-9]``. That makes matching independent of the extractor (spacing,
hyphenation, ligatures, Greek letters and math symbols all drop out). A
:class:`~hepwb.evaluation.keyindex.KeyIndex` maps a match in key space back to a ``[start, end)``
span of ``Document.markdown``.

How a quote is located (:func:`locate_evidence`):

* A quote whose key has at least ``SHORT_KEY_CHARS`` (25) characters is located **strictly** (its
  whole key occurs in the document's key; the occurrence on the evidence page first) or, failing that,
  **tolerantly** (check_quotes' rule: 90 % of its 16-character pieces in order, within twice the quote's
  length; where most pieces are found, on the evidence page first). A long quote that stands in several
  places is a repeated sentence (abstract and conclusion): it is located at one and every other place is
  listed in :attr:`Located.copies` - each other verbatim occurrence of a strict quote; each other place
  where a tolerant quote (a repeated sentence quoted with a typo) has as many pieces as where it is
  located. Every copy counts as relevant (:func:`is_relevant`), so which copy is located changes no
  score, and none is scored by guess. A place matching less well (a sibling sentence differing in a
  word, e.g. another particle or energy) is no copy: a tolerant quote holds it to be another passage,
  as a strict quote does.
* A **short** quote (fewer key characters, e.g. ``"The fitted amplitude is"`` or one table row) is
  located only where it is **unambiguous**: exactly once on the page the evidence names, or exactly
  once in the document (when no page is named, or none of its copies is on that page). A short quote
  that occurs in several places is reported as ``ambiguous`` with the pages where it matched, never
  scored by guess; only the located copy counts as relevant.
* Otherwise the evidence is :class:`Unlocated`, with a status (``no_document``, ``no_text``,
  ``ambiguous``, ``not_found``) and a reason a person can act on.
* A quote of more than :data:`~hepwb.limits.MAX_QUOTE_CHARS` characters is refused (``ConfigError``).
  Locating any other quote takes time about linear in the quote and the paper: each place a quote may
  start is one of the first ``MAX_QUOTE_OCCURRENCES`` occurrences of one of its opening pieces, and a place
  already followed as part of another, or that can no longer reach 90 %, is not followed further.

Relevance rule (used by :mod:`hepwb.evaluation.metrics`): a retrieved chunk is *relevant* to an
evidence quote when it lies in the same document and covers at least ``min_coverage`` (default
0.5) of the quote's key characters (:func:`coverage`), or holds one of its :attr:`~Located.copies`
whole. A quote wholly inside a chunk has coverage 1.0 - the check_quotes strict rule applied to the
chunk's text; a quote straddling two chunks counts for whichever chunk holds at least half of it (with
overlapping chunks, possibly both). ``min_coverage=1.0`` asks for strict containment.

Example:
    >>> from hepwb.types import Block, Document, Hit
    >>> md = "# Intro\n\nThe beam-spin asymmetry is A = -0.23 ± 0.04."
    >>> doc = Document("d1", "P01", md, (Block("heading", 0, 7, 1, 1), Block("text", 9, len(md), 2)))
    >>> ev = Evidence("Q#e0", "P01", 2, "beam spin asymmetry is A = −0.23 ± 0.04")
    >>> loc = locate(ev, {"P01": doc})
    >>> loc.method, loc.page_ok, md[loc.start:loc.end]
    ('strict', True, 'beam-spin asymmetry is A = -0.23 ± 0.04')
    >>> locate_evidence(Evidence("Q#e1", "P01", 2, "asymmetry"), {"P01": doc}).method
    'unique'
    >>> print(locate_evidence(Evidence("Q#e2", "P01", None, "A ="), {"P01": doc}).reason)
    the short quote 'A =' matches in 3 places (page 2); quote more of the passage so that it is unique
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from hepwb import defaults, limits
from hepwb.evaluation.keyindex import KeyIndex, as_index, build_keyindexes, key_index
from hepwb.evaluation.questions import Evidence, Question
from hepwb.exceptions import ConfigError
from hepwb.limits import MAX_QUOTE_CHARS
from hepwb.text.textkey import key
from hepwb.types import Document, Hit, JSONObject

__all__ = [
    "PIECE",
    "SHORT_KEY_CHARS",
    "TOLERANT_SHARE",
    "KeyIndex",
    "Located",
    "Unlocated",
    "build_keyindexes",
    "coverage",
    "is_relevant",
    "key",
    "key_index",
    "locate",
    "locate_all",
    "locate_evidence",
    "unlocated_reason",
]

SHORT_KEY_CHARS = 25
"""Quotes whose key is shorter than this are *short*: located only where they are unambiguous."""
PIECE = defaults.QUOTE_PIECE_CHARS
"""Length of the key pieces of the tolerant rule."""
TOLERANT_SHARE = 0.9
"""Share of pieces that must be found, in order, for a tolerant match."""

_HINT_MAX_KEY = 1_000
"""A quote not found gets the nearest passage as a hint when its key is at most this long (rapidfuzz's
alignment costs the quote's length times the paper's)."""

_HINT_MAX_WORK = 300_000_000
"""...and when its key's length times the paper key's is at most this (some 0.3 s: 300 key characters in a
1 MB paper, 1,000 in 300 kB): a quote not found is reported at once, with or without a hint."""

_HINT_MIN_SCORE = 60.0
"""How alike (rapidfuzz's partial ratio, 0-100) the nearest passage must be to be shown as a hint."""

Status = Literal["no_document", "no_text", "ambiguous", "not_found"]


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
        method: ``"strict"`` (whole key found), ``"tolerant"`` (>= 90 % of 16-char pieces, in order) or
            ``"unique"`` (a short quote found exactly once on its page or in its document).
        page: Page of the block containing ``start`` (None when the document has no blocks there).
        page_ok: Whether the evidence page lies within that block's pages.
        copies: ``(key_start, key_end)`` of every other place the quote stands (a sentence repeated in
            abstract and conclusion), in key order: the other verbatim occurrences of a strict quote; the
            other places where a tolerant quote has as many pieces, in order, as where it is located (at
            most ``MAX_QUOTE_OCCURRENCES`` places in all). Each is as relevant as the located one; empty for a
            quote found once and for short quotes.
    """

    eid: str
    qid: str
    label: str
    document_id: str
    start: int
    end: int
    key_start: int
    key_end: int
    method: Literal["strict", "tolerant", "unique"]
    page: int | None
    page_ok: bool
    copies: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        """Keep ``copies`` a tuple of pairs when read back from JSON (lists of lists)."""
        if not isinstance(self.copies, tuple) or any(not isinstance(c, tuple) for c in self.copies):
            object.__setattr__(self, "copies", tuple((int(a), int(b)) for a, b in self.copies))


@dataclass(frozen=True, slots=True)
class Unlocated:
    """An evidence quote that cannot be scored, and why.

    Attributes:
        evidence: The evidence entry.
        status: ``no_document`` (no document has its label), ``no_text`` (the quote has no letter or
            digit), ``ambiguous`` (a short quote found in several places) or ``not_found``.
        reason: One sentence saying what is wrong and what to do.
        pages: The pages where an ambiguous quote matched (``None`` for text without a page).
    """

    evidence: Evidence
    status: Status
    reason: str
    pages: tuple[int | None, ...] = field(default=())

    @property
    def eid(self) -> str:
        """The evidence id."""
        return self.evidence.eid

    @property
    def qid(self) -> str:
        """The question id."""
        return self.evidence.qid

    def row(self) -> JSONObject:
        """One table row: question, evidence, document, page, quote, status, reason, pages matched."""
        ev = self.evidence
        return {
            "qid": ev.qid,
            "evidence": ev.eid,
            "doc": ev.doc,
            "page": ev.page,
            "quote": ev.quote,
            "status": self.status,
            "reason": self.reason,
            "matched_pages": sorted({p for p in self.pages if p is not None}),
        }


def _page_info(index: KeyIndex, offset: int, wanted: int | None) -> tuple[int | None, bool]:
    """The page at ``offset`` and whether it is the ``wanted`` one (any page is, when none is wanted)."""
    block = index.block_at(offset)
    if block is None:
        return None, wanted is None
    if wanted is None:
        return block.page, True
    return block.page, block.page <= wanted <= max(block.page, block.page_end)


def _occurrences(text: str, sub: str, limit: int = limits.MAX_QUOTE_OCCURRENCES) -> Iterator[int]:
    j, count = text.find(sub), 0
    while j >= 0 and count < limit:
        yield j
        j, count = text.find(sub, j + 1), count + 1


def _strict(qk: str, index: KeyIndex, page: int | None) -> list[tuple[int, int]]:
    """Every verbatim occurrence of ``qk`` (at most ``MAX_QUOTE_OCCURRENCES``), the one on ``page`` first."""
    found = list(_occurrences(index.key, qk))
    if not found:
        return []
    at = next((j for j in found if _page_info(index, int(index.starts[j]), page)[1]), found[0])
    return [(at, at + len(qk))] + [(j, j + len(qk)) for j in found if j != at]


def _unique(qk: str, index: KeyIndex, page: int | None) -> tuple[int | None, list[int]]:
    """A short quote's only occurrence on its page (else in its document), and every occurrence."""
    found = list(_occurrences(index.key, qk, limits.MAX_QUOTE_OCCURRENCES + 1))
    on_page = [j for j in found if _page_info(index, int(index.starts[j]), page)[1]]
    for candidates in (on_page, found):
        if candidates:
            return (candidates[0] if len(candidates) == 1 else None), found
    return None, found


class _Next:
    """The first occurrence of one piece at or after a position, remembering a stretch known to lack it.

    Invariant: no occurrence starts in ``[lo, nxt)``, and ``nxt`` is one (``len(text)``: none). The places a
    match is followed from are taken in key order, so most questions are answered from what is known, and
    the text is searched about once per piece, not once per place.
    """

    __slots__ = ("_lo", "_nxt", "_piece", "_text")

    def __init__(self, text: str, piece: str) -> None:
        self._text, self._piece = text, piece
        self._lo = self._nxt = -1  # nothing known yet

    def at(self, cur: int) -> int:
        """The first occurrence starting at or after ``cur``; ``len(text)`` when there is none."""
        lo, nxt = self._lo, self._nxt
        if 0 <= lo <= cur <= nxt:
            return nxt
        if lo < 0 or cur > nxt:
            j = self._text.find(self._piece, cur)
            nxt = len(self._text) if j < 0 else j
        else:  # cur < lo: only the gap before the stretch known to lack it is searched
            j = self._text.find(self._piece, cur, lo + len(self._piece) - 1)
            nxt = nxt if j < 0 else j
        self._lo, self._nxt = cur, nxt
        return nxt


def _tolerant(qk: str, index: KeyIndex, page: int | None) -> list[tuple[int, int]]:
    """check_quotes' tolerant rule, anchored at each occurrence of an early piece, within a window.

    Returns:
        The best place the rule holds (most pieces found, then on ``page``, then shortest, then earliest:
        the place of hepwb's former search, which followed every anchor; this one skips those that cannot
        change the result), then every other place, apart from it, where as many pieces are found: key
        spans, ``[]`` when the rule holds nowhere.
    """
    pieces = [qk[i : i + PIECE] for i in range(0, len(qk), PIECE)]
    n = len(pieces)
    need = next(f for f in range(n + 1) if f / n >= TOLERANT_SHARE)
    window = 2 * len(qk) + 256
    text = index.key
    size = len(text)
    nexts = {p: _Next(text, p) for p in pieces}
    # some piece among the first n-need+1 must be found: each of their first occurrences is an anchor
    anchors = sorted((pos, a) for a in range(n - need + 1) for pos in _occurrences(text, pieces[a]))
    followed: set[tuple[int, int]] = set()
    floor = need  # fewest pieces a place may have and still be returned: the most found so far
    ranked: list[tuple[tuple[int, bool, int, int, int], int, int]] = []
    for pos, a in anchors:
        if (a, pos) in followed:  # a match from an earlier anchor went through it: the same, less its start
            continue
        limit = min(pos + window, size)
        found, cur = 1, pos + len(pieces[a])
        end, cut = cur, a  # cut: the last piece missed only because the window ends before it
        matched = [(a, pos)]
        for i in range(a + 1, n):
            if found + n - i < floor:  # cannot reach the share, or the best place, any more
                break
            j = nexts[pieces[i]].at(cur)
            if j + len(pieces[i]) <= limit:
                found += 1
                cur = end = j + len(pieces[i])
                matched.append((i, j))
            elif j < size:
                cut = i
        followed.update(m for m in matched if m[0] > cut)  # followed from there, the same pieces are found
        if found >= floor:
            floor = found
            page_ok = _page_info(index, int(index.starts[pos]), page)[1]
            ranked.append(((found, page_ok, pos - end, -pos, -a), pos, end))
    ranked.sort(reverse=True)
    most = ranked[0][0][0] if ranked else 0
    starts: list[int] = []
    spans: list[tuple[int, int]] = []  # ascending, disjoint: the places taken so far
    best: list[tuple[int, int]] = []
    for rank, start, end in ranked:
        if rank[0] < most:  # fewer pieces: another passage, alike but not the same
            break
        i = bisect_left(starts, end)
        if i and spans[i - 1][1] > start:
            continue  # overlaps a better place: the same passage, matched from another anchor
        starts.insert(i, start)
        spans.insert(i, (start, end))
        best.append((start, end))
        if len(best) >= limits.MAX_QUOTE_OCCURRENCES:
            break
    return best


def _pages(pages: Sequence[int | None]) -> str:
    known = sorted({p for p in pages if p is not None})
    if not known:
        return ""
    shown = ", ".join(str(p) for p in known[:8]) + (", …" if len(known) > 8 else "")
    return f" (page{'s' if len(known) > 1 else ''} {shown})"


def _nearest(qk: str, index: KeyIndex) -> str:
    """``; the nearest passage (page 4) is 87 % alike: '…'``: a hint for a quote not found ("" if none).

    The page is named for a document with pages (a markdown note has one page: none is named).
    """
    if len(qk) > _HINT_MAX_KEY or not index.key or len(qk) * len(index.key) > _HINT_MAX_WORK:
        return ""
    from rapidfuzz import fuzz

    found = fuzz.partial_ratio_alignment(qk, index.key)
    if found is None or found.score < _HINT_MIN_SCORE or found.dest_end <= found.dest_start:
        return ""
    start, end = index.span(found.dest_start, found.dest_end)
    page = _page_info(index, start, None)[0]
    paged = any((b.page or 1) > 1 for b in index.blocks)
    where = f" (page {page})" if paged and page is not None else ""
    text = " ".join(index.markdown[start:end].split())
    shown = f": {text[:160] + ('…' if len(text) > 160 else '')!r}" if text else ""
    return f"; the nearest passage{where} is {found.score:.0f} % alike{shown}"


def locate_evidence(
    evidence: Evidence, documents_by_label: Mapping[str, Document | KeyIndex]
) -> Located | Unlocated:
    """Find ``evidence``'s quote in the document whose label is ``evidence.doc`` (rules: module docstring).

    Args:
        evidence: The quote to find.
        documents_by_label: Documents (or their key indexes) by label.

    Returns:
        The :class:`Located` match, or an :class:`Unlocated` record with its status and reason.

    Raises:
        ConfigError: The quote is longer than :data:`~hepwb.limits.MAX_QUOTE_CHARS`.
    """
    if len(evidence.quote) > MAX_QUOTE_CHARS:
        msg = (
            f"question {evidence.qid!r}, evidence {evidence.eid} ({evidence.doc}): the quote has "
            f"{len(evidence.quote)} characters; at most {MAX_QUOTE_CHARS} are matched (quote the sentence "
            "or paragraph that holds the answer, not a whole section)"
        )
        raise ConfigError(msg)
    doc = documents_by_label.get(evidence.doc)
    if doc is None:
        why = f"no document is labelled {evidence.doc!r}; fix the evidence's 'doc' or add the paper"
        return Unlocated(evidence, "no_document", why)
    qk = key(evidence.quote)
    if not qk:
        return Unlocated(evidence, "no_text", "the quote has no letter or digit; quote the passage's words")
    index = as_index(doc)
    method: Literal["strict", "tolerant", "unique"] = "strict"
    found: tuple[int, int] | None
    places: list[tuple[int, int]] = []
    if len(qk) < SHORT_KEY_CHARS:
        method = "unique"
        at, every = _unique(qk, index, evidence.page)
        if at is None and every:
            pages = tuple(_page_info(index, int(index.starts[j]), None)[0] for j in every)
            count = f"{len(every)}+" if len(every) > limits.MAX_QUOTE_OCCURRENCES else str(len(every))
            why = (
                f"the short quote {evidence.quote!r} matches in {count} places{_pages(pages)}; "
                "quote more of the passage so that it is unique"
            )
            return Unlocated(evidence, "ambiguous", why, pages)
        found = None if at is None else (at, at + len(qk))
    else:
        places = _strict(qk, index, evidence.page)
        if not places:
            method = "tolerant"
            places = _tolerant(qk, index, evidence.page)
        found = places[0] if places else None
    if found is None:
        why = (
            f"the quote is not in {evidence.doc}'s converted text; copy it verbatim from the paper "
            "(the document view shows the converted text)"
        )
        return Unlocated(evidence, "not_found", why + _nearest(qk, index))
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
        copies=tuple(sorted(places[1:])),
    )


def locate(evidence: Evidence, documents_by_label: Mapping[str, Document | KeyIndex]) -> Located | None:
    """The :class:`Located` match of ``evidence``, or None (:func:`unlocated_reason` says why)."""
    found = locate_evidence(evidence, documents_by_label)
    return found if isinstance(found, Located) else None


def unlocated_reason(evidence: Evidence, documents_by_label: Mapping[str, Document | KeyIndex]) -> str:
    """Explain why :func:`locate` returns None for ``evidence`` (``""`` when it is located)."""
    found = locate_evidence(evidence, documents_by_label)
    return found.reason if isinstance(found, Unlocated) else ""


def locate_all(
    questions: Sequence[Question], documents: Iterable[Document | KeyIndex]
) -> tuple[list[Located], list[Unlocated]]:
    """Locate every evidence quote of ``questions`` in ``documents`` (matched by label).

    Returns:
        ``(located, unlocated)``: the located quotes, and an :class:`Unlocated` record (status and
        reason) for every quote that could not be located. Report them: they are not scored.

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
            by_label[d.label] = as_index(d)
    located: list[Located] = []
    unlocated: list[Unlocated] = []
    for q in questions:
        for ev in q.evidence:
            found = locate_evidence(ev, by_label)
            if isinstance(found, Located):
                located.append(found)
            else:
                unlocated.append(found)
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
    located occurrence, or holds one of its :attr:`~Located.copies` whole, or (a strict quote) holds the
    quote verbatim elsewhere (the ``check_quotes.py`` strict rule applied to the chunk): a repeated
    sentence, e.g. abstract and conclusion, counts wherever it is, whether quoted verbatim or with a typo.
    """
    if hit.document_id != loc.document_id:
        return False
    if coverage(loc, hit.start, hit.end, idx) >= min_coverage:
        return True
    ks, ke = idx.key_range(hit.start, hit.end)
    if any(ks <= start and end <= ke for start, end in loc.copies):
        return True
    if loc.method != "strict":
        return False
    return ke - ks >= loc.key_end - loc.key_start and idx.key[loc.key_start : loc.key_end] in idx.key[ks:ke]
