"""Rows into paragraphs for :mod:`hepwb.processing._blocks`: where one paragraph ends and the next begins.

Rows in reading order (:mod:`hepwb.processing._layout`) are grouped into paragraphs at a change of page or
column, a vertical gap wider than the body's line spacing, a change of font size or weight, a bullet, a
caption or an indented line after a sentence's end. Table regions (:mod:`hepwb.processing._tables`) and
display equations (:mod:`hepwb.processing._math`) become ``table``/``math`` paragraphs of their own; every
other paragraph's lines are joined into one text, hyphenation repaired.

Example:
    >>> from hepwb.processing._layout import Row
    >>> rows = [Row(50, 130, 500, 140, "The vir-", 10.0, False, 1, 1),
    ...         Row(50, 142, 500, 152, "tual photon.", 10.0, False, 1, 1),
    ...         Row(50, 170, 500, 180, "• an item", 10.0, False, 1, 2)]
    >>> [(p.kind, p.text) for p in segment(rows, body=10.0)]
    [('text', 'The virtual photon.'), ('text', '• an item')]
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass, field

from hepwb.processing._layout import Row
from hepwb.processing._math import find_equations, render_math
from hepwb.processing._tables import find_tables, render_table

__all__ = ["BULLETS", "CAPTION_RE", "END_RE", "Para", "join_rows", "segment", "starts_bullet"]

BULLETS = "•◦▪‣∙●○■□➢►▶✓"
CAPTION_RE = re.compile(r"^(?:fig(?:ure)?s?\.?|tab(?:le)?s?\.?)\s*(?:\d+|[IVX]+)[a-z]?\s*[.:|]", re.I)
"""The start of a figure or table caption (``Figure 3:``, ``Tab. II.``)."""
END_RE = re.compile(r"[.!?:;]['\")\]]*$")
"""The end of a sentence (a closing quote or bracket may follow the mark)."""


@dataclass(slots=True)
class Para:
    """A paragraph: its rows, its kind (``text`` until classified), heading level and joined text."""

    rows: list[Row]
    kind: str = "text"
    level: int = 0
    text: str = ""
    extra: list[Para] = field(default_factory=list)
    merged: bool = False

    @property
    def size(self) -> float:
        """The font size of most of the paragraph's characters (the larger one on a tie)."""
        sizes: Counter[float] = Counter()
        for r in self.rows:
            sizes[r.size] += len(r.text)
        return max(sizes.items(), key=lambda kv: (kv[1], kv[0]))[0]

    @property
    def bold(self) -> bool:
        """Whether at least 90 % of the paragraph's characters are bold."""
        total = sum(len(r.text) for r in self.rows)
        return sum(len(r.text) for r in self.rows if r.bold) >= 0.9 * total


def join_rows(texts: list[str]) -> str:
    """Join the lines of a paragraph with single spaces, repairing end-of-line hyphenation.

    Example:
        >>> join_rows(["a vir-", "tual photon", "and Deeply-", "Virtual"])
        'a virtual photon and Deeply-Virtual'
    """
    out = ""
    for t in texts:
        if not out:
            out = t
        elif out[-1] in "-\u2010" and len(out) >= 2 and out[-2].isalpha():
            out = out[:-1] + t if t[:1].islower() else out + t
        else:
            out = out + " " + t
    return out


def starts_bullet(text: str) -> bool:
    """Whether ``text`` starts with a bullet character."""
    return text[:1] in BULLETS


def _leading(rows: list[Row], body: float) -> float:
    """Median vertical gap between consecutive body-size lines of one pymupdf block (0 if none)."""
    gaps = sorted(
        b.y0 - a.y1
        for a, b in itertools.pairwise(rows)
        if a.block == b.block
        and a.page == b.page
        and abs(a.size - body) < 0.6
        and abs(b.size - body) < 0.6
        and -body < b.y0 - a.y1 < 1.5 * body
    )
    return max(gaps[len(gaps) // 2], 0.0) if gaps else 0.0


def _breaks(prev: Row, row: Row, para: list[Row], leading: float) -> bool:
    """Whether ``row`` starts a new paragraph after ``prev`` (the last row of ``para``)."""
    if row.page != prev.page or row.column != prev.column:
        return True
    size = max(min(prev.size, row.size), 1.0)
    if min(prev.y1, row.y1) - max(prev.y0, row.y0) >= 0.3 * min(prev.height, row.height) and (
        row.x0 >= prev.x1 - 1
    ):
        return False  # same visual line (inline formula pieces, super/subscripts)
    if row.y0 < prev.y0 - 0.5 * prev.height and row.x0 <= prev.x0 + 0.5 * size:
        return True
    if row.y0 - prev.y1 > leading + 0.45 * size or abs(row.size - prev.size) > 0.9 or row.bold != prev.bold:
        return True
    ended = bool(END_RE.search(prev.text))
    if starts_bullet(row.text) or (ended and CAPTION_RE.match(row.text)):
        return True
    if ended and 0.8 * size < row.x0 - prev.x0 < 6 * size:
        return True
    if ended and len(para) > 1 and row.text[:1].isupper():
        right = max(r.x1 for r in para)
        return prev.x1 < right - 4 * size
    return False


def segment(rows: list[Row], body: float) -> list[Para]:
    """The paragraphs of ``rows`` (the document's, in reading order), their text rendered or joined."""
    leading = _leading(rows, body)
    tabs = find_tables(rows, body)
    eqs = find_equations(rows, body, [t >= 0 for t in tabs])
    regions = [f"t{t}" if t >= 0 else f"m{e}" if e >= 0 else "" for t, e in zip(tabs, eqs, strict=True)]
    paras: list[Para] = []
    prev_eq = ""
    for r, eq in zip(rows, regions, strict=True):
        if eq:
            if eq == prev_eq:
                paras[-1].rows.append(r)
            else:
                paras.append(Para([r], kind="math" if eq[0] == "m" else "table"))
        elif paras and not prev_eq and not _breaks(paras[-1].rows[-1], r, paras[-1].rows, leading):
            paras[-1].rows.append(r)
        else:
            paras.append(Para([r]))
        prev_eq = eq
    for p in paras:
        if p.kind == "math":
            p.text = render_math(p.rows)
        elif p.kind == "table":
            p.text = render_table(p.rows)
        else:
            p.text = join_rows([r.text for r in p.rows])
    return paras
