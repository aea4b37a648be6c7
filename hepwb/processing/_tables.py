"""Table detection and GFM rendering for :mod:`hepwb.processing.pdf`.

A table region is a run of rows of one page and column that look tabular: several cells (pymupdf
lines on one baseline separated by wide gaps) or mostly numbers, with at most short header rows
in between. A run is kept when a ``Table N`` caption sits just above or below it, or, without a
caption, when it has at least four rows of three or more cells carrying numbers. Rows keep their
stream order, so the table text reads as before; cells are assigned to columns found by
clustering the x-extents of the cells.

Example:
    >>> from hepwb.processing._layout import Row
    >>> def row(y, *cells):
    ...     segs = [(100.0 + 80 * i, 140.0 + 80 * i, c) for i, c in enumerate(cells)]
    ...     return Row(100, y, 140 + 80 * (len(cells) - 1), y + 9, " ".join(cells), 9.0, False, 1, 0,
    ...                segs=segs)
    >>> rows = [Row(100, 80, 400, 89, "Table 1: Yields.", 9.0, False, 1, 0),
    ...         row(100, "bin", "N", "A"), row(112, "1", "10", "0.1"), row(124, "2", "20", "0.2")]
    >>> ids = find_tables(rows, 10.0)
    >>> ids
    [-1, 0, 0, 0]
    >>> print(render_table(rows[1:]))
    | bin | N | A |
    |---|---|---|
    | 1 | 10 | 0.1 |
    | 2 | 20 | 0.2 |
"""

from __future__ import annotations

import re

from hepwb.processing._layout import Row

__all__ = ["TABLE_CAPTION_RE", "find_tables", "render_table"]

TABLE_CAPTION_RE = re.compile(r"^tab(?:le)?s?\.?\s*(?:\d+|[IVX]+)[a-z]?\s*[.:|]", re.I)
_FIGURE_CAPTION_RE = re.compile(r"^fig(?:ure)?s?\.?\s*(?:\d+|[IVX]+)[a-z]?\s*[.:|]", re.I)
_NUM_RE = re.compile(r"^[-+−±~<>≈]?\(?[\d.,]+\)?(?:[%×x]|[eE][-+−]?\d+)?$|^[±–—\-−/]$")
_WORD_RE = re.compile(r"\b[a-z]{3,}\b")
_HEADING_RE = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2}){0,3}|[IVX]{1,4}\.|[A-H]\.)\s+[A-Z][a-z]{2,}")
_T, _S, _P = 2, 1, 0


def cells(row: Row) -> list[tuple[float, float, str]]:
    """The row's cells: its pymupdf lines, neighbours closer than 0.8 em joined."""
    out: list[tuple[float, float, str]] = []
    for x0, x1, t in sorted(row.segs or [(row.x0, row.x1, row.text)], key=lambda s: s[0]):
        if out and x0 - out[-1][1] < 0.8 * row.size:
            a0, _, at = out[-1]
            out[-1] = (a0, max(x1, out[-1][1]), at + " " + t)
        else:
            out.append((x0, x1, t))
    return out


def _numeric(text: str) -> float:
    toks = text.split()
    return sum(1 for t in toks if _NUM_RE.match(t)) / len(toks) if toks else 0.0


def _classify(row: Row, body: float) -> int:
    cs = cells(row)
    words = len(_WORD_RE.findall(row.text))
    if row.size > 1.3 * body or _FIGURE_CAPTION_RE.match(row.text) or TABLE_CAPTION_RE.match(row.text):
        return _P
    if len(cs) >= 2 and max(len(c[2]) for c in cs) <= 60:
        return _T
    if len(cs) == 1 and words <= 2 and _numeric(row.text) >= 0.6:
        return _T
    if len(row.text) <= 40 and words <= 4:
        return _S
    return _P


def find_tables(rows: list[Row], body: float) -> list[int]:
    """Return, per row, the id of the table region it belongs to (``-1`` for other rows).

    Args:
        rows: All rows of the document in reading order (``column`` set by ``order_rows``).
        body: The document's body font size.

    Returns:
        One region id per row; rows of one table share an id and are contiguous.
    """
    kinds = [_classify(r, body) for r in rows]
    out = [-1] * len(rows)
    n = 0
    i = 0
    while i < len(rows):
        if kinds[i] == _P:
            i += 1
            continue
        j = i
        while j + 1 < len(rows) and kinds[j + 1] != _P and _continues(rows[j], rows[j + 1]):
            j += 1
        a, b = i, j
        while b >= a and (kinds[b] != _T or _HEADING_RE.match(rows[b].text)):
            b -= 1
        while a <= b and kinds[a] != _T:
            a += 1
        cap_before = _caption_near(rows, a, -1, 8)
        if a <= b and _accept(rows[a : b + 1], kinds[a : b + 1], cap_before or _caption_near(rows, b, 1, 3)):
            for k in range(a, b + 1):
                out[k] = n
            n += 1
        i = j + 1
    return out


def _continues(a: Row, b: Row) -> bool:
    """Whether ``b`` can follow ``a`` in one table (same page and column, no jump)."""
    if a.page != b.page or a.column != b.column:
        return False
    size = max(a.size, b.size, 1.0)
    return b.y0 - a.y1 <= 2.0 * size and b.y1 >= a.y0 - 0.5 * min(a.height, b.height)


def _toc(rows: list[Row]) -> bool:
    """Whether the rows look like a table of contents (section titles ending in page numbers)."""
    ends = sum(1 for r in rows if re.search(r"(?:\s|\.)\d{1,3}$", r.text) and _WORD_RE.search(r.text))
    return ends >= 0.6 * len(rows)


def _caption_near(rows: list[Row], at: int, step: int, reach: int) -> bool:
    """Whether a ``Table N`` caption row lies within ``reach`` rows of ``at`` (same page)."""
    k = at + step
    while 0 <= k < len(rows) and abs(k - at) <= reach and rows[k].page == rows[at].page:
        if TABLE_CAPTION_RE.match(rows[k].text):
            return True
        k += step
    return False


def _accept(rows: list[Row], kinds: list[int], captioned: bool) -> bool:
    tab = [r for r, k in zip(rows, kinds, strict=True) if k == _T]
    multi = [r for r in tab if len(cells(r)) >= 2]
    if _toc(rows):
        return False
    if captioned:
        return len(tab) >= 2 and len(multi) >= 2
    wide = [r for r in multi if len(cells(r)) >= 3]
    numbers = sum(_numeric(r.text) for r in wide) / max(len(wide), 1)
    return len(wide) >= 4 and len(wide) >= 0.6 * len(rows) and numbers >= 0.3


def _visual_lines(rows: list[Row]) -> list[list[tuple[float, float, str]]]:
    """Cells per visual line: consecutive rows on one baseline joined (stream order kept).

    Returns an empty list when the rows of one visual line do not run left to right (their
    cells could not be put in columns without reordering the text).
    """
    out: list[list[tuple[float, float, str]]] = []
    prev: Row | None = None
    for r in rows:
        cs = cells(r)
        if prev is not None and min(prev.y1, r.y1) - max(prev.y0, r.y0) >= 0.5 * min(prev.height, r.height):
            if cs[0][0] < out[-1][-1][0]:
                return []
            out[-1].extend(cs)
        else:
            out.append(cs)
        prev = r
    return out


def _columns(lines: list[list[tuple[float, float, str]]]) -> list[tuple[float, float]]:
    """Column x-extents: the union clusters of the cells of the lines with the usual cell count."""
    counts = sorted(len(cs) for cs in lines)
    usual = counts[len(counts) // 2]
    spans = sorted((c[0], c[1]) for cs in lines if len(cs) >= max(usual, 2) for c in cs)
    cols: list[list[float]] = []
    for x0, x1 in spans:
        if cols and x0 <= cols[-1][1]:
            cols[-1][1] = max(cols[-1][1], x1)
        else:
            cols.append([x0, x1])
    return [(a, b) for a, b in cols]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").strip()


def render_table(rows: list[Row]) -> str:
    """Render the rows of one table region as a GFM table (first row as header).

    When the rows do not fit a column grid (cells of one visual line split over several rows, or a
    single column), each row becomes a one-cell line of a one-column table, so the block stays
    atomic and the text order is unchanged.
    """
    lines = _visual_lines(rows)
    cols = _columns(lines) if lines else []
    if len(cols) < 2 or len(cols) > 24:
        one = [f"| {_cell(r.text)} |" for r in rows]
        return "\n".join([one[0], "|---|", *one[1:]])
    grid: list[list[str]] = []
    for cs in lines:
        line = [""] * len(cols)
        for x0, x1, t in cs:
            mid = (x0 + x1) / 2
            k = min(
                range(len(cols)),
                key=lambda i: (
                    0
                    if cols[i][0] <= mid <= cols[i][1]
                    else min(abs(mid - cols[i][0]), abs(mid - cols[i][1]))
                ),
            )
            line[k] = (line[k] + " " + t).strip()
        grid.append(line)
    out = ["| " + " | ".join(_cell(c) for c in line) + " |" for line in grid]
    return "\n".join([out[0], "|" + "---|" * len(cols), *out[1:]])
