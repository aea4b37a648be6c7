r"""Locate evidence quotes in processed documents and measure how much of a quote a chunk holds.

Quotes are compared through :func:`key` - the rule of ``shared/eval/check_quotes.py``: NFKC,
lowercase, keep only ``[a-z0-9]``. That makes matching independent of the extractor (spacing,
hyphenation, ligatures, Greek letters and math symbols all drop out). A
:class:`~hepwb.evaluation.keyindex.KeyIndex` maps a match in key space back to a ``[start, end)``
span of ``Document.markdown``.

How a quote is located (:func:`locate_evidence`):

* A quote whose key has at least ``SHORT_KEY_CHARS`` (25) characters is located **strictly** (its
  whole key occurs in the document's key; the occurrence on the evidence page first) or, failing that,
  **tolerantly** (check_quotes' rule: 90 % of its 16-character pieces in order). A long quote that
  occurs several times is a repeated sentence (abstract and conclusion): every verbatim copy counts as
  relevant (:func:`is_relevant`), so which copy is located changes no score.
* A **short** quote (fewer key characters, e.g. ``"The fitted amplitude is"`` or one table row) is
  located only where it is **unambiguous**: exactly once on the page the evidence names, or exactly
  once in the document (when no page is named, or none of its copies is on that page). A short quote
  that occurs in several places is reported as ``ambiguous`` with the pages where it matched, never
  scored by guess; only the located copy counts as relevant.
* Otherwise the evidence is :class:`Unlocated`, with a status (``no_document``, ``no_text``,
  ``ambiguous``, ``not_found``) and a reason a person can act on.

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
    >>> locate_evidence(Evidence("Q#e1", "P01", 2, "asymmetry"), {"P01": doc}).method
    'unique'
    >>> print(locate_evidence(Evidence("Q#e2", "P01", None, "A ="), {"P01": doc}).reason)
    the short quote 'A =' matches in 3 places (page 2); quote more of the passage so that it is unique
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from hepwb import defaults
from hepwb.evaluation.keyindex import KeyIndex, as_index, build_keyindexes, key_index
from hepwb.evaluation.questions import Evidence, Question
from hepwb.exceptions import ConfigError
from hepwb.textkey import key
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
_MAX_OCCURRENCES = 200

_HINT_MAX_KEY = 1_000
"""A quote not found gets the nearest passage as a hint when its key is at most this long (rapidfuzz's
alignment costs the quote's length times the paper's)."""

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


def _occurrences(text: str, sub: str, limit: int = _MAX_OCCURRENCES) -> Iterator[int]:
    j, count = text.find(sub), 0
    while j >= 0 and count < limit:
        yield j
        j, count = text.find(sub, j + 1), count + 1


def _strict(qk: str, index: KeyIndex, page: int | None) -> tuple[int, int] | None:
    first: int | None = None
    for j in _occurrences(index.key, qk):
        if _page_info(index, int(index.starts[j]), page)[1]:
            return j, j + len(qk)
        first = j if first is None else first
    return None if first is None else (first, first + len(qk))


def _unique(qk: str, index: KeyIndex, page: int | None) -> tuple[int | None, list[int]]:
    """A short quote's only occurrence on its page (else in its document), and every occurrence."""
    found = list(_occurrences(index.key, qk, _MAX_OCCURRENCES + 1))
    on_page = [j for j in found if _page_info(index, int(index.starts[j]), page)[1]]
    for candidates in (on_page, found):
        if candidates:
            return (candidates[0] if len(candidates) == 1 else None), found
    return None, found


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
    if len(qk) > _HINT_MAX_KEY or not index.key:
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
    """
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
    if len(qk) < SHORT_KEY_CHARS:
        method = "unique"
        at, every = _unique(qk, index, evidence.page)
        if at is None and every:
            pages = tuple(_page_info(index, int(index.starts[j]), None)[0] for j in every)
            places = f"{len(every)}+" if len(every) > _MAX_OCCURRENCES else str(len(every))
            why = (
                f"the short quote {evidence.quote!r} matches in {places} places{_pages(pages)}; "
                "quote more of the passage so that it is unique"
            )
            return Unlocated(evidence, "ambiguous", why, pages)
        found = None if at is None else (at, at + len(qk))
    else:
        found = _strict(qk, index, evidence.page)
        if found is None:
            method = "tolerant"
            found = _tolerant(qk, index, evidence.page)
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
