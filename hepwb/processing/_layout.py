"""Page-geometry helpers for :mod:`hepwb.processing.pdf`: lines, page furniture and reading order.

The functions work on the ``page.get_text("dict")`` output of pymupdf but never import pymupdf
themselves, so they can be unit-tested on plain dictionaries.

Pipeline per document: :func:`extract_page` turns each page into :class:`Row` objects in the page's
dominant text direction; :func:`drop_line_numbers` removes draft line numbers;
:func:`drop_furniture` removes running headers/footers and page numbers across the document;
:func:`order_rows` puts the remaining rows in reading order (columns included).

Example:
    >>> page = {"width": 600.0, "height": 800.0, "blocks": [{"type": 0, "lines": [{"dir": (1.0, 0.0),
    ...     "bbox": (50.0, 100.0, 200.0, 110.0), "spans": [{"text": "Hello", "size": 10.0,
    ...     "flags": 0, "font": "Times"}]}]}]}
    >>> pt = extract_page(page, 1)
    >>> pt.rows[0].text, pt.rotated, pt.dropped_chars
    ('Hello', False, 0)
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from hepwb.types import JSONObject

__all__ = [
    "PageText",
    "Row",
    "body_font_size",
    "clean_text",
    "drop_furniture",
    "drop_line_numbers",
    "extract_page",
    "order_rows",
]

_LIGATURES = {chr(c): unicodedata.normalize("NFKC", chr(c)) for c in range(0xFB00, 0xFB07)}
_SPACES = dict.fromkeys(
    map(
        ord,
        "\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
        "\u200a\u202f\u205f\u3000\t\n\r\x0b\x0c",
    ),
    " ",
)
_WS_RE = re.compile(r" {2,}")
_BOLD_FONT_RE = re.compile(r"bold|black|heavy|demi|semibold|medi|cmbx|cmb\d|bx\d|[-,]b\b", re.IGNORECASE)
_PAGE_NUM_RE = re.compile(
    r"^[\s\-–—(\[]*(?:page\s*)?(?:\d{1,4}|[ivxlc]{1,7})(?:\s*(?:of|/)\s*\d{1,4})?[\s\-–—)\]]*$",
    re.IGNORECASE,
)
_MATH_FONT_RE = re.compile(
    r"^(?:[A-Z]{6}\+)?(?:cmmi|cmsy|cmex|cmbsy|msbm|msam|eufm|eusm|rsfs|stmary|wasy|symbol|txsy|txex|rtxmi"
    r"|pxsy|pxex|rpxmi|lmmath|pazomath|euler|mathematicalpi|mt(?:sy|ex|mi)|stix.*math|cambria.?math"
    r"|latinmodernmath|xits.?math)",
    re.IGNORECASE,
)
_DIGITS_RE = re.compile(r"^\d{1,5}$")
_EDGE = 0.09  # share of the page height treated as header/footer zone


@dataclass(slots=True)
class Row:
    """One visual text line of a page (pymupdf lines on the same baseline merged).

    Attributes:
        x0: Left edge in the page's reading frame.
        y0: Top edge.
        x1: Right edge.
        y1: Bottom edge.
        text: Cleaned text (ligatures expanded, zero-width and control characters removed).
        size: Dominant font size of the row's characters.
        bold: Whether (nearly) all characters use a bold font.
        page: 1-based page number.
        block: Index of the pymupdf block on the page that holds the row.
        column: Reading-order unit the row belongs to after :func:`order_rows`.
        math: Number of (non-blank) characters set in a math font (CMMI, CMSY, Symbol ...).
        segs: The pymupdf lines merged into the row as ``(x0, x1, text)`` (table cells).
    """

    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    size: float
    bold: bool
    page: int
    block: int
    column: int = 0
    math: int = 0
    segs: list[tuple[float, float, str]] = field(default_factory=list)

    @property
    def height(self) -> float:
        """Row height (at least 1 point)."""
        return max(self.y1 - self.y0, 1.0)


def clean_text(text: str) -> str:
    r"""Normalise extracted text: ligatures, odd spaces, zero-width and control characters.

    Greek letters and mathematical symbols are left as they are (no global NFKC).

    Example:
        >>> clean_text("e\ufb03cient\u200b  data\x07")
        'efficient data'
    """
    if not text.isascii():
        text = "".join(_LIGATURES.get(ch, ch) for ch in text)
    text = text.translate(_SPACES)
    if not text.isprintable():
        text = "".join(ch for ch in text if ch == " " or unicodedata.category(ch) not in ("Cc", "Cf"))
    return _WS_RE.sub(" ", text)


def _frame(bbox: tuple[float, ...], direction: tuple[int, int], w: float, h: float) -> tuple[float, ...]:
    """Map a page bbox into the reading frame of text running in ``direction``."""
    x0, y0, x1, y1 = bbox
    if direction == (0, -1):  # rotated 90 degrees counter-clockwise: reads upwards
        return (h - y1, x0, h - y0, x1)
    if direction == (0, 1):  # rotated clockwise: reads downwards
        return (y0, w - x1, y1, w - x0)
    if direction == (-1, 0):  # upside down
        return (w - x1, h - y1, w - x0, h - y0)
    return (x0, y0, x1, y1)


def _line_direction(line: JSONObject) -> tuple[int, int]:
    dx, dy = line["dir"]
    return (round(dx), round(dy)) if abs(abs(dx) - 1) < 0.02 or abs(abs(dy) - 1) < 0.02 else (9, 9)


@dataclass(slots=True)
class PageText:
    """The rows of one page and what was learnt while extracting them.

    Attributes:
        rows: Rows in stream order.
        width: Page width in the reading frame.
        height: Page height in the reading frame.
        rotated: Whether the page was read in a rotated frame (landscape content).
        dropped_chars: Characters of text in another direction that were dropped (stamps, labels).
        line_numbers: Draft line numbers removed.
    """

    rows: list[Row]
    width: float
    height: float
    rotated: bool = False
    dropped_chars: int = 0
    line_numbers: int = 0


def extract_page(page: JSONObject, page_no: int) -> PageText:
    """Turn one page's ``get_text("dict")`` output into rows in stream order.

    Only text in the page's dominant direction is kept, read in that direction's frame, so a
    landscape table page is read normally while margin stamps (arXiv identifiers printed
    vertically) and rotated axis labels are dropped. Draft line numbers are removed before pymupdf
    lines on the same baseline are merged into rows.

    Args:
        page: The dictionary returned by ``page.get_text("dict")``.
        page_no: 1-based page number stored on the rows.

    Returns:
        The page's rows and extraction facts.
    """
    w, h = float(page["width"]), float(page["height"])
    chars: Counter[tuple[int, int]] = Counter()
    blocks = [b for b in page["blocks"] if b.get("type", 0) == 0]
    for b in blocks:
        for line in b["lines"]:
            chars[_line_direction(line)] += sum(len(s["text"].strip()) for s in line["spans"])
    if not sum(chars.values()):
        return PageText([], w, h)
    main = max(chars.items(), key=lambda kv: (kv[1], kv[0] == (1, 0)))[0]
    fw, fh = (h, w) if main in ((0, -1), (0, 1)) else (w, h)
    raw: list[Row] = []
    for bi, b in enumerate(blocks):
        for line in b["lines"]:
            if _line_direction(line) == main:
                row = _make_row(line, _frame(line["bbox"], main, w, h), page_no, bi)
                if row is not None:
                    raw.append(row)
    raw, numbers = drop_line_numbers(raw)
    rows: list[Row] = []
    for row in raw:
        if rows and rows[-1].block == row.block and _same_row(rows[-1], row):
            _merge(rows[-1], row)
        else:
            rows.append(row)
    dropped = sum(n for d, n in chars.items() if d != main)
    return PageText(rows, fw, fh, main != (1, 0), dropped, numbers)


def _make_row(line: JSONObject, bbox: tuple[float, ...], page_no: int, block: int) -> Row | None:
    sizes: Counter[float] = Counter()
    bold = total = math = 0
    parts = []
    for s in line["spans"]:
        t = s["text"]
        parts.append(t)
        n = len(t.strip())
        if not n:
            continue
        total += n
        sizes[round(float(s["size"]), 1)] += n
        if s["flags"] & 16 or _BOLD_FONT_RE.search(s["font"]):
            bold += n
        if _MATH_FONT_RE.search(s["font"]):
            math += n
    raw = "".join(parts).rstrip()
    if raw.endswith("\u00ad"):  # soft hyphen at the end of a line: a hyphenation point
        raw = raw[:-1] + "-"
    text = clean_text(raw).strip()
    if not text or not total:
        return None
    size = max(sizes.items(), key=lambda kv: (kv[1], kv[0]))[0]
    x0, y0, x1, y1 = bbox
    row = Row(x0, y0, x1, y1, text=text, size=size, bold=bold >= 0.9 * total, page=page_no, block=block)
    row.math = math
    row.segs = [(row.x0, row.x1, text)]
    return row


def _same_row(a: Row, b: Row) -> bool:
    overlap = min(a.y1, b.y1) - max(a.y0, b.y0)
    return overlap >= 0.5 * min(a.height, b.height) and b.x0 >= a.x1 - 2.0


def _merge(a: Row, b: Row) -> None:
    sep = "" if b.x0 - a.x1 < 0.15 * max(a.size, b.size) else " "
    a.segs = [*(a.segs or [(a.x0, a.x1, a.text)]), *(b.segs or [(b.x0, b.x1, b.text)])]
    a.text = a.text + sep + b.text
    a.math += b.math
    if len(b.text) > len(a.text) - len(b.text):
        a.size, a.bold = b.size, b.bold and a.bold
    else:
        a.bold = a.bold and (b.bold or len(b.text) <= 3)
    a.x0, a.y0, a.x1, a.y1 = min(a.x0, b.x0), min(a.y0, b.y0), max(a.x1, b.x1), max(a.y1, b.y1)


def drop_line_numbers(rows: list[Row]) -> tuple[list[Row], int]:
    """Remove draft line numbers: isolated columns of consecutive integers.

    Args:
        rows: One page's rows before same-baseline merging (numbers are rows of their own).

    Returns:
        The remaining rows and the number removed.
    """
    cands = sorted((r for r in rows if _DIGITS_RE.match(r.text)), key=lambda r: r.x1)
    groups: list[list[Row]] = []
    for r in cands:
        if groups and r.x1 - groups[-1][-1].x1 <= 2.5:
            groups[-1].append(r)
        else:
            groups.append([r])
    drop: set[int] = set()
    for g in groups:
        if len(g) < 5:
            continue
        g.sort(key=lambda r: r.y0)
        diffs = [int(b.text) - int(a.text) for a, b in itertools.pairwise(g)]
        if sum(d > 0 for d in diffs) < 0.9 * len(diffs) or sum(d == 1 for d in diffs) < 0.6 * len(diffs):
            continue
        lo, hi = min(r.x0 for r in g), max(r.x1 for r in g)
        ids = {id(r) for r in g}
        if not any(r.x0 < hi and r.x1 > lo for r in rows if id(r) not in ids):
            drop |= ids
    return [r for r in rows if id(r) not in drop], len(drop)


def _furniture_key(text: str) -> str:
    return re.sub(r"[^a-z#]", "", re.sub(r"\d+", "#", text.lower()))


def drop_furniture(pages: list[list[Row]], heights: list[float], body: float) -> tuple[list[list[Row]], int]:
    """Remove running headers/footers and bare page numbers from all pages.

    A row is furniture when it lies in the top or bottom ``_EDGE`` share of its page, among the
    three outermost rows, and either looks like a page number or (digits ignored) repeats on at
    least two pages and 30% of all pages. Title-sized rows on the first page are kept.

    Args:
        pages: Rows per page.
        heights: Page heights in the rows' reading frame.
        body: The document's body font size.

    Returns:
        The cleaned pages and the number of rows removed.
    """
    edge_rows: list[list[Row]] = []
    counts: Counter[str] = Counter()
    for rows, h in zip(pages, heights, strict=True):
        by_y = sorted(rows, key=lambda r: r.y0)
        cand = [r for r in by_y[:3] if r.y1 <= _EDGE * h] + [r for r in by_y[-3:] if r.y0 >= (1 - _EDGE) * h]
        uniq = list({id(r): r for r in cand}.values())
        edge_rows.append(uniq)
        for k in {_furniture_key(r.text) for r in uniq}:
            counts[k] += 1
    need = max(2.0, 0.3 * len(pages))
    out: list[list[Row]] = []
    removed = 0
    for rows, cand in zip(pages, edge_rows, strict=True):
        drop = set()
        for r in cand:
            if r.page == 1 and r.size >= 1.15 * body:
                continue
            k = _furniture_key(r.text)
            if _PAGE_NUM_RE.match(r.text) or (len(k) >= 1 and counts[k] >= need and len(pages) >= 2):
                drop.add(id(r))
        removed += len(drop)
        out.append([r for r in rows if id(r) not in drop])
    return out, removed


def body_font_size(pages: list[list[Row]]) -> float:
    """Most common font size by character count over the document (10.0 when there is no text)."""
    sizes: Counter[float] = Counter()
    for rows in pages:
        for r in rows:
            sizes[round(r.size * 2) / 2] += len(r.text)
    return max(sizes.items(), key=lambda kv: (kv[1], -kv[0]))[0] if sizes else 10.0


def order_rows(rows: list[Row], width: float) -> list[Row]:
    """Return one page's rows in reading order and set their ``column`` ids.

    Single-column pages keep pymupdf's stream order. On two-column pages (both halves hold at least
    20% of the characters, with wide lines on each side) blocks are read band by band: full-width
    blocks (title, abstract, wide figures) split the page into bands, and in each band the left
    column is read before the right one; within a column pymupdf's stream order is kept (inline
    formulas split into several blocks on one line stay in place).

    Args:
        rows: The page's rows in stream order.
        width: Page width in the reading frame.

    Returns:
        The rows in reading order; rows of different columns or bands get different ``column`` ids.
    """
    blocks: dict[int, list[Row]] = {}
    for r in rows:
        blocks.setdefault(r.block, []).append(r)
    mid, tol = width / 2, 0.02 * width
    side: dict[int, str] = {}
    chars = Counter[str]()
    wide = Counter[str]()
    for bi, rs in blocks.items():
        x0, x1 = min(r.x0 for r in rs), max(r.x1 for r in rs)
        s = "L" if x1 <= mid + tol else "R" if x0 >= mid - tol else "F"
        side[bi] = s
        n = sum(len(r.text) for r in rs)
        chars[s] += n
        wide[s] += sum(1 for r in rs if r.x1 - r.x0 >= 0.3 * width)
    total = sum(chars.values()) or 1
    if chars["L"] < 0.2 * total or chars["R"] < 0.2 * total or wide["L"] < 3 or wide["R"] < 3:
        for r in rows:
            r.column = 0
        return rows
    order: list[int] = []
    col = 0
    band: dict[str, list[int]] = {"L": [], "R": []}

    def top(bi: int) -> tuple[float, float]:
        return (round(min(r.y0 for r in blocks[bi])), min(r.x0 for r in blocks[bi]))

    def emit(ids: list[int]) -> None:
        nonlocal col
        col += 1
        for bi in ids:
            order.append(bi)
            for r in blocks[bi]:
                r.column = col

    full: list[int] = []
    for bi in sorted(blocks, key=top):
        if side[bi] == "F":
            if band["L"] or band["R"]:
                emit(sorted(band["L"]))
                emit(sorted(band["R"]))
                band = {"L": [], "R": []}
            full.append(bi)
        else:
            if full:
                emit(full)
                full = []
            band[side[bi]].append(bi)
    emit(full)
    emit(sorted(band["L"]))
    emit(sorted(band["R"]))
    return [r for bi in order for r in blocks[bi]]
