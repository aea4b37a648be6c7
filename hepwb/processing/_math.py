"""Display-equation detection for :mod:`hepwb.processing.pdf`.

A display equation is a run of visual lines of one column that are set apart from the prose:
indented or centred, not full-width prose, dominated by math fonts (CMMI, CMSY, Symbol, LM Math,
...) or relation symbols, often closed by an equation number ``(N)`` at the right margin. Stacked
fractions, big operators and sub/superscripts arrive from pymupdf as several rows; rows whose
vertical extents overlap are first chained into one visual line, so a whole fraction is judged as
one line. The rows of a region keep their stream order, so the extracted text stays whole.

Example:
    >>> from hepwb.processing._layout import Row
    >>> prose = "The cross section of the process is written in the usual form as follows"
    >>> rows = [Row(50, 100, 500, 110, prose, 10.0, False, 1, 0),
    ...         Row(200, 120, 320, 130, "σ = A + B", 10.0, False, 1, 1, math=5),
    ...         Row(480, 120, 500, 130, "(1)", 10.0, False, 1, 2),
    ...         Row(50, 140, 500, 150, prose, 10.0, False, 1, 3)]
    >>> find_equations(rows, 10.0)
    [-1, 0, 0, -1]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hepwb.processing._layout import Row

__all__ = ["EQNUM_RE", "find_equations", "render_math"]

EQNUM_RE = re.compile(r"\(\s*(?:[A-Z]\.?)?\d{1,3}(?:\.\d{1,3})?[a-z]?\s*\)$")
_WORD_RE = re.compile(r"\b[a-z]{3,}\b")
_NAME_RE = re.compile(r"[A-Za-z]{3,}")
_RELATIONS = set("=≡≈∼≃≅∝<>≤≥≪≫±∓×·∑∏∫∮∂∇√→←↔⇒⇔⊗⊕∈∉⊂⊆∀∃∞")
_EQ, _WEAK, _FRAG, _OTHER = 3, 2, 1, 0


@dataclass(slots=True)
class _Line:
    start: int
    end: int
    y0: float
    y1: float
    kind: int = _OTHER
    numbered: bool = False


def _extents(rows: list[Row]) -> dict[tuple[int, int], tuple[float, float]]:
    """Left and right prose margins of every (page, column) unit."""
    spans: dict[tuple[int, int], list[Row]] = {}
    for r in rows:
        spans.setdefault((r.page, r.column), []).append(r)
    out: dict[tuple[int, int], tuple[float, float]] = {}
    for k, rs in spans.items():
        prose = [r for r in rs if len(r.text) >= 40 and r.math <= 0.2 * len(r.text)] or rs
        lefts = sorted(r.x0 for r in prose)
        out[k] = (lefts[len(lefts) // 4] if len(lefts) >= 4 else lefts[0], max(r.x1 for r in prose))
    return out


def _visual_lines(rows: list[Row]) -> list[_Line]:
    """Chain consecutive rows of one column whose vertical extents overlap into visual lines."""
    lines: list[_Line] = []
    for i, r in enumerate(rows):
        cur = lines[-1] if lines else None
        if cur is not None:
            prev = rows[cur.end - 1]
            overlap = min(cur.y1, r.y1) - max(cur.y0, r.y0)
            if prev.page == r.page and prev.column == r.column and overlap >= 0.25 * min(r.height, 10.0):
                cur.end, cur.y0, cur.y1 = i + 1, min(cur.y0, r.y0), max(cur.y1, r.y1)
                continue
        lines.append(_Line(i, i + 1, r.y0, r.y1))
    return lines


def _judge(line: _Line, rows: list[Row], ext: tuple[float, float], body: float) -> None:
    """Set ``line.kind`` (equation, fragment or other) and ``line.numbered``."""
    rs = rows[line.start : line.end]
    cx0, cx1 = ext
    size = max(max(r.size for r in rs), 1.0)
    last = max(rs, key=lambda r: r.x1)
    numbered = bool(EQNUM_RE.search(last.text)) and last.x1 >= cx1 - 3 * size
    text = " ".join(r.text for r in rs)
    if numbered:
        text = EQNUM_RE.sub("", text).strip()
    chars = sum(1 for ch in text if not ch.isspace())
    if not chars and not numbered:
        return
    math = sum(r.math for r in rs) / max(chars, 1)
    left = min(r.x0 for r in rs)
    right = max(r.x1 for r in rs)
    words = len(_WORD_RE.findall(text))
    names = len(_NAME_RE.findall(text))
    prose = (words >= 4 and math < 0.3) or words >= 8 or (names >= 5 and math < 0.4)
    indented = left >= cx0 + 1.0 * size
    if prose:
        return
    if not (indented or (numbered and math >= 0.3)):
        if math >= 0.35 and words <= 2 and chars >= 8:
            line.kind = _WEAK
        return
    full = right >= cx1 - 1.0 * size and not numbered
    symbols = sum(1 for ch in text if ch in _RELATIONS)
    signs = numbered or math >= 0.25 or (symbols and words <= 1 and math >= 0.1)
    if max(r.size for r in rs) >= 0.75 * body and not full and signs:
        line.kind, line.numbered = _EQ, numbered
        return
    if not full and chars <= 4 and words == 0:
        line.kind = _FRAG


def find_equations(rows: list[Row], body: float, skip: list[bool] | None = None) -> list[int]:
    """Return, per row, the id of the display equation it belongs to (``-1`` for other rows).

    Args:
        rows: All rows of the document in reading order (``column`` set by ``order_rows``).
        body: The document's body font size.
        skip: Rows already claimed (table rows); they are never part of an equation.

    Returns:
        One region id per row; rows of one equation share an id and are contiguous.
    """
    ext = _extents(rows)
    lines = _visual_lines(rows)
    for ln in lines:
        r = rows[ln.start]
        if skip is None or not any(skip[ln.start : ln.end]):
            _judge(ln, rows, ext[(r.page, r.column)], body)
    out = [-1] * len(rows)
    region: list[_Line] = []
    n_regions = 0

    def close() -> None:
        nonlocal n_regions, region
        while region and region[-1].kind == _FRAG:
            region.pop()
        while region and region[0].kind == _FRAG:
            region.pop(0)
        if any(ln.kind == _EQ for ln in region) and _accept(region, rows):
            for ln in region:
                for i in range(ln.start, ln.end):
                    out[i] = n_regions
            n_regions += 1
        region = []

    for ln in lines:
        if ln.kind == _OTHER:
            close()
            continue
        if region:
            a, b = rows[region[-1].end - 1], rows[ln.start]
            top, bottom = min(x.y0 for x in region), max(x.y1 for x in region)
            size = max(b.size, 1.0)
            if a.page != b.page or a.column != b.column or ln.y0 > bottom + 2.5 * size or ln.y1 < top - size:
                close()
        region.append(ln)
        if ln.numbered:
            close()
    close()
    return out


def _accept(region: list[_Line], rows: list[Row]) -> bool:
    """Whether a run of equation-like lines is a real display equation (not a figure label)."""
    rs = [r for ln in region for r in rows[ln.start : ln.end]]
    text = "".join(r.text for r in rs)
    chars = sum(1 for ch in text if not ch.isspace())
    if chars < 3:
        return False
    if any(ln.numbered for ln in region):
        return True
    math = sum(r.math for r in rs) / chars
    return math >= 0.3 or (math >= 0.15 and any(ch in _RELATIONS for ch in text))


def render_math(rows: list[Row]) -> str:
    r"""Render the rows of one equation (stream order kept) as a display-math block.

    Rows that overlap vertically share a text line; each new visual line starts a new text line.

    Example:
        >>> render_math([Row(200, 120, 320, 130, "σ = A + B", 10.0, False, 1, 1),
        ...              Row(480, 120, 500, 130, "(1)", 10.0, False, 1, 2)])
        '$$\nσ = A + B (1)\n$$'
    """
    lines = [_Line(i, i + 1, r.y0, r.y1) for i, r in enumerate(rows[:1])]
    texts = [rows[0].text] if rows else []
    for r in rows[1:]:
        cur = lines[-1]
        if min(cur.y1, r.y1) - max(cur.y0, r.y0) >= 0.25 * min(r.height, 10.0):
            cur.y0, cur.y1 = min(cur.y0, r.y0), max(cur.y1, r.y1)
            texts[-1] += " " + r.text
        else:
            lines.append(_Line(0, 0, r.y0, r.y1))
            texts.append(r.text)
    body = "\n".join(t.replace("$$", "$ $") for t in texts if t.strip())
    return "$$\n" + body + "\n$$"
