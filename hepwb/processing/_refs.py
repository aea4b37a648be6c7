"""Bibliography section detection for :mod:`hepwb.processing.pdf`.

The section starts after a ``References``/``Bibliography``/``Literature`` heading (the last one
followed by entries) or, without such a heading, at a trailing paragraph that opens with ``[1]``
and is followed by more ``[N]`` entries. It ends at the next heading of the same or a higher
level. Its rows are re-split into one entry per ``[N]``/``N.`` marker (several entries are often
read as one paragraph); unnumbered bibliographies keep one entry per paragraph.

Example:
    >>> find_section([("heading", "## References", 2, 10.0), ("text", "[1] A. B, J. 1 (2000) 1.", 0, 9.0)])
    (1, 2)
"""

from __future__ import annotations

import re

from hepwb.processing._layout import Row
from hepwb.processing.references import ENTRY_RE

__all__ = ["find_section", "select", "split_entries"]

_HEADING_RE = re.compile(
    r"^#*\s*(?:\d{1,2}\.?\s+|[IVX]{1,4}\.\s+)?(?:references?(?:\s+and\s+notes)?|bibliography|literature(?:\s+cited)?"
    r"|cited\s+literature)\s*:?$",
    re.I,
)
_FIRST_RE = re.compile(r"^\s*\[1\]\s*\S")
_BRACKET_RE = re.compile(r"^\s*\[\d{1,4}\]")
_MARKS_RE = re.compile(r"(?:^|\s)\[\d{1,4}\]\s|^\d{1,3}\.\s")


def find_section(paras: list[tuple[str, str, int, float]]) -> tuple[int, int] | None:
    """Return the ``[start, end)`` paragraph range of the bibliography, or None.

    Args:
        paras: Per paragraph ``(kind, text, heading level, font size)`` in reading order.
    """
    n = len(paras)
    start = level = -1
    for i, (kind, text, lvl, _) in enumerate(paras):
        if kind == "heading" and _HEADING_RE.match(text) and i + 1 < n and paras[i + 1][0] != "heading":
            start, level = i + 1, lvl
    if start >= 0:
        end = start
        while end < n and not (paras[end][0] == "heading" and paras[end][2] <= max(level, 2)):
            end += 1
        return (start, end) if end > start else None
    for i in range(int(0.3 * n), n):
        kind, text, _, size = paras[i]
        if kind not in ("text", "list") or not _FIRST_RE.match(text):
            continue
        later = sum(
            1 for k in range(i, min(n, i + 50)) if _BRACKET_RE.match(paras[k][1]) or "[2]" in paras[k][1]
        )
        if later < 2 and "[2]" not in text:
            continue
        end = i + 1
        while end < n:
            kind2, text2, _, size2 = paras[end]
            if kind2 == "heading" or (not _BRACKET_RE.match(text2) and abs(size2 - size) > 0.3):
                break
            end += 1
        return i, end
    return None


def split_entries(groups: list[list[Row]]) -> list[list[Row]]:
    """Split the rows of the bibliography paragraphs into one row list per entry.

    Args:
        groups: The rows of each bibliography paragraph, in order.

    Returns:
        Row lists, one per entry; text before the first marker stays an entry of its own.
    """
    rows = [r for g in groups for r in g]
    if not rows:
        return []
    numbered = sum(1 for r in rows if ENTRY_RE.match(r.text)) >= 2
    bracket = sum(1 for r in rows if _BRACKET_RE.match(r.text)) >= 2
    if not numbered:
        return [g for g in groups if g]
    marker = _BRACKET_RE if bracket else ENTRY_RE
    out: list[list[Row]] = []
    for r in rows:
        if not out or marker.match(r.text):
            out.append([r])
        else:
            out[-1].append(r)
    return out


def select(paras: list[tuple[str, str, int]]) -> list[bool]:
    """Say which paragraphs of a bibliography section are entries (or their continuations).

    In a numbered bibliography a paragraph without a marker that follows a complete entry (ending
    in ``.`` or ``)``), or that sits on another page than the entry before it without starting in
    lower case, is a float or figure text caught between entries and stays out, as do captions,
    tables and equations.

    Args:
        paras: ``(kind, text, page)`` of the section's paragraphs.
    """
    numbered = sum(len(_MARKS_RE.findall(t)) for _, t, _ in paras) >= 2
    out: list[bool] = []
    prev_done = False
    prev_page = -1
    for kind, text, page in paras:
        marked = bool(ENTRY_RE.match(text))
        if not numbered:
            keep = kind in ("text", "list", "reference")
        elif kind in ("caption", "table", "math", "heading"):
            keep = False
        else:
            cont = not prev_done and page == prev_page and (len(text) >= 15 or text.endswith("."))
            keep = marked or cont or (not prev_done and text[:1].islower())
        out.append(keep)
        if keep:
            prev_done, prev_page = text.rstrip()[-1:] in ".)", page
        else:
            prev_done = True
    return out
