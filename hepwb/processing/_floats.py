"""Figure captions and figure text out of the running text: each moves to the end of its section.

A float interrupts the text where the page put it, often between two halves of one argument;
a caption left there splits every chunk around it (captions are chunks of their own). Like a
reader who reads past the figure, the converter moves each figure caption to just before the
next heading (or the bibliography, or the end), keeping its page. A caption next to a table
stays with its table. Text drawn inside a figure (``figure_text``: tick labels, axis titles) moves
the same way, in its order among the captions.

Example:
    >>> from hepwb.processing._blocks import RenderedBlock as B
    >>> blocks = [B("heading", "## 2 Data", 1, 1, 2), B("text", "The asymmetry", 1, 1),
    ...           B("caption", "FIG. 1. A plot.", 1, 1), B("text", "rises with t.", 2, 2),
    ...           B("caption", "TABLE I. Cuts.", 2, 2), B("table", "| a |\\n|---|", 2, 2),
    ...           B("heading", "## 3 Results", 2, 2)]
    >>> [b.text for b in float_captions(blocks)]  # doctest: +NORMALIZE_WHITESPACE
    ['## 2 Data', 'The asymmetry', 'rises with t.', 'TABLE I. Cuts.', '| a |\\n|---|', 'FIG. 1. A plot.',
     '## 3 Results']
"""

from __future__ import annotations

from typing import Any

__all__ = ["float_captions"]

_STOP = frozenset({"heading", "reference"})


def float_captions(blocks: list[Any]) -> list[Any]:
    """``blocks`` with each caption not beside a table, and all figure text, moved to its section end."""
    out: list[Any] = []
    pending: list[Any] = []
    for i, b in enumerate(blocks):
        beside_table = any(0 <= j < len(blocks) and blocks[j].kind == "table" for j in (i - 1, i + 1))
        if (b.kind == "caption" and not beside_table) or b.kind == "figure_text":
            pending.append(b)
            continue
        if b.kind in _STOP and pending:
            out.extend(pending)
            pending = []
        out.append(b)
    return [*out, *pending]
