"""Second look at display-math paragraphs: figure labels, sub-captions, table rows and stray numbers.

:mod:`hepwb.processing._math` judges lines by their fonts and symbols, so text drawn inside a
figure (``e →+p → e+γ X`` beside the axis labels of a plot), a sub-figure caption set in math
fonts (``(c) sV model, gχ/gq = 2, mono-W/Z channel.``) or a row of measured values
(``Part A 0.648 ± 0.018 0.625 ± 0.016``) can come out as display math. Here, in reading order:

- an unnumbered math paragraph between figure labels (short non-sentences) and a caption is a
  figure label: plain text;
- a math paragraph opening with ``(a)``… followed by words is a sub-caption: plain text;
- a math paragraph of values with three or more ``±`` and few words is a table row: plain text;
- a math paragraph that is only an equation number (``(31)``) joins the equation just before it
  on the same page (display math, or a short formula read as text, which becomes display math);
  otherwise it stays, as the anchor that ``Eq. (31)`` links to.

Example:
    >>> class P:  # stands in for the paragraphs of hepwb.processing._paragraphs
    ...     def __init__(self, kind, text):
    ...         self.kind, self.text, self.rows = kind, text, []
    >>> paras = [P("text", "Mx (GeV)"), P("math", "e →+p → e+γ X"), P("caption", "FIG. 4. The moment."),
    ...          P("math", "(c) sV model, gχ/gq = 2, mono-W/Z channel."), P("math", "A = B + C"),
    ...          P("math", "(3)")]
    >>> [p.kind for p in review_math(paras, lambda p: 1)]
    ['text', 'text', 'caption', 'text', 'math']
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hepwb.processing._math import EQNUM_RE

__all__ = ["review_math"]

_SUBCAPTION = re.compile(r"^\(\s*[a-z]\s*\)\s+\S+(?:\s+\S+){2,}")
_WORD = re.compile(r"[A-Za-z]{3,}")
_LABEL_MAX = 40
_LOOK = 4
_FORMULA_MAX = 200


def _label_like(p: Any) -> bool:
    """A figure label: a short non-sentence (axis title, tick values, legend entry)."""
    t = p.text.strip()
    return p.kind in ("text", "math") and len(t) <= _LABEL_MAX and not t.endswith((".", ":", ";"))


def _only_number(text: str) -> bool:
    rest = EQNUM_RE.sub("", text.strip().strip("$").strip()).strip(" .,;")
    return bool(EQNUM_RE.search(text.strip())) and sum(ch.isalnum() for ch in rest) < 3


def _joinable(p: Any) -> bool:
    """The equation a stray number belongs to: display math, or a short formula read as text."""
    if p.kind == "math":
        return True
    t = p.text.strip()
    return p.kind == "text" and len(t) <= _FORMULA_MAX and len(_WORD.findall(t)) <= 3


def review_math(paras: list[Any], page_of: Callable[[Any], int]) -> list[Any]:
    """Re-kind the false display-math paragraphs of ``paras`` (see the module docstring).

    Args:
        paras: Paragraphs with ``kind``, ``text`` and ``rows`` (``rows`` of a joined number are
            appended to the equation before it).
        page_of: The page of a paragraph.

    Returns:
        The paragraphs, a stray equation number merged into its equation.
    """
    out: list[Any] = []
    for i, p in enumerate(paras):
        if p.kind != "math":
            out.append(p)
            continue
        text = p.text.strip().removeprefix("$$").removesuffix("$$").strip()
        if _only_number(text):
            prev = out[-1] if out else None
            if prev is not None and page_of(prev) == page_of(p) and _joinable(prev):
                prev.kind = "math"
                prev.rows.extend(p.rows)
                prev.merged = True
                continue  # otherwise the number stays a math block: the anchor "Eq. (n)" links to
        elif _SUBCAPTION.match(text) or (text.count("±") >= 3 and len(_WORD.findall(text)) <= 4):
            p.kind = "text"
        elif not EQNUM_RE.search(text) and i > 0 and _label_like(paras[i - 1]):
            for q in paras[i + 1 : i + 1 + _LOOK]:
                if page_of(q) != page_of(p):
                    break
                if q.kind == "caption":
                    p.kind = "text"
                    break
                if not _label_like(q):
                    break
        out.append(p)
    return out
