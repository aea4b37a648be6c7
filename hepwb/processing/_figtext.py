"""Text a PDF draws inside a figure (tick labels, axis titles, legends), kept out of the running text.

A plot embedded as vector graphics keeps its labels as text, and the converter reads them as short
paragraphs ("-0.6", "-3 -2 -1 0 1 2 3", "φ (rad)") between the real ones. Each page's figure regions
are found as :func:`~hepwb.processing.figures.locate_figures` finds them (the side of a figure
caption holding non-prose text, bounded by prose paragraphs); a text paragraph whose centre lies in
one and that reads neither as prose nor as a sentence (many of its words lower-case words, as in
"where A is the measured asymmetry", which a region drawn too wide may reach) becomes a
``figure_text`` block. Such blocks float with the
captions to the end of their section (:mod:`hepwb.processing._floats`) and are never chunked.

Example:
    >>> from hepwb.processing._blocks import RenderedBlock as B
    >>> blocks = [B("text", "-3 -2 -1 0 1 2 3", 1, 1, box=(80, 200, 300, 210), lines=1),
    ...           B("text", "The asymmetry rises.", 1, 1, box=(80, 500, 300, 510), lines=1)]
    >>> mark_figure_text(blocks, {1: [(60, 100, 320, 300)]})
    1
    >>> [b.kind for b in blocks]
    ['figure_text', 'text']
"""

from __future__ import annotations

import re
from typing import Any

from hepwb.processing.figures import is_prose

__all__ = ["Box", "mark_figure_text", "reads_as_sentence", "rows_box"]

_WORD = re.compile(r"[^\W\d_]{2,}")

Box = tuple[float, float, float, float]
"""A rectangle on a page: x0, y0, x1, y1 in PDF points."""


def mark_figure_text(blocks: list[Any], regions: dict[int, list[Box]]) -> int:
    """Turn the text paragraphs lying in a figure region of their page into ``figure_text``; count them.

    Args:
        blocks: Rendered blocks with ``kind``, ``text``, ``page``, ``page_end``, ``box`` and ``lines``.
        regions: Figure regions by 1-based page.
    """
    n = 0
    for b in blocks:
        if b.kind != "text" or b.box is None or b.page != b.page_end or not regions.get(b.page):
            continue
        cx, cy = (b.box[0] + b.box[2]) / 2, (b.box[1] + b.box[3]) / 2
        inside = any(r[0] <= cx <= r[2] and r[1] <= cy <= r[3] for r in regions[b.page])
        if inside and not is_prose(b.text, b.lines) and not reads_as_sentence(b.text):
            b.kind = "figure_text"
            n += 1
    return n


def reads_as_sentence(text: str) -> bool:
    """Whether ``text`` has at least four lower-case words, and they are 35 % of its words or more.

    Example:
        >>> reads_as_sentence("where N is the luminosity-normalized yield"), reads_as_sentence("Mx (GeV)")
        (True, False)
        >>> reads_as_sentence("Region 1, 2, and 3 Drift Chambers Beam Pipe")
        False
    """
    tokens = text.split()
    lower = [w for w in _WORD.findall(text) if w.islower()]
    return len(lower) >= 4 and len(lower) >= 0.35 * len(tokens)


def rows_box(rows: list[Any]) -> Box:
    """The rectangle holding ``rows`` (anything with ``x0``, ``y0``, ``x1``, ``y1``)."""
    return (
        min(r.x0 for r in rows),
        min(r.y0 for r in rows),
        max(r.x1 for r in rows),
        max(r.y1 for r in rows),
    )
