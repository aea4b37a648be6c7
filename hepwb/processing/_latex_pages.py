"""Give the blocks of a LaTeX-derived document page numbers by finding their text in the matching PDF.

Text is compared on a key (NFKC, lowercase, only ``[a-z0-9]``, as the evaluation's quote rule);
markdown markup, inline math and citation markers are removed from a block before keying. A block
takes the page of its first ~60 key characters (other windows are tried when that fails; the
occurrence nearest the running position wins; short keys such as headings are only searched just
ahead of it); blocks not found inherit the previous block's page.

Example:
    >>> page_keys = ["introductionthemodel", "resultswefind"]
    >>> locate_pages(["# Introduction", "Results: we find $x$."], page_keys)
    [(1, 1), (2, 2)]
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

from hepwb.text.textkey import key

__all__ = ["locate_pages", "pdf_page_keys"]

_INLINE_MATH = re.compile(r"\$[^$]*\$")
_CITE = re.compile(r"\[@[^\]]*\]|\[\^\d+\]")
_TEX_CMD = re.compile(r"\\[A-Za-z]+")
PROBE = 60
MIN_PROBE = 12
MIN_SHORT = 4
SHORT_WINDOW = 3000


def pdf_page_keys(pdf: str | Path) -> list[str]:
    """Keys of each page's text (``pymupdf`` ``page.get_text()``)."""
    import pymupdf

    with pymupdf.open(pdf) as doc:
        return [key(page.get_text()) for page in doc]


def _block_key(text: str) -> str:
    if text.lstrip().startswith(("$$", "\\begin")):
        return ""
    text = _CITE.sub(" ", _INLINE_MATH.sub(" ", text))
    return key(_TEX_CMD.sub(" ", text))


def locate_pages(texts: list[str], page_keys: list[str]) -> list[tuple[int, int]]:
    """Return ``(page, page_end)`` (1-based) for each block text.

    Args:
        texts: Block texts in document order.
        page_keys: :func:`hepwb.text.textkey.key` of each PDF page.
    """
    starts, acc = [], 0
    for k in page_keys:
        starts.append(acc)
        acc += len(k)
    full = "".join(page_keys)

    def page_of(pos: int) -> int:
        return bisect.bisect_right(starts, pos)

    def nearest(probe: str, cursor: int) -> int:
        after = full.find(probe, cursor)
        if after >= 0:
            return after
        return full.rfind(probe, 0, cursor + len(probe))

    out: list[tuple[int, int]] = []
    cursor, prev = 0, 1
    for text in texts:
        key = _block_key(text)
        page = end_page = 0
        if MIN_SHORT <= len(key) < MIN_PROBE:  # short (headings): only just ahead of the running position
            pos = full.find(key, cursor, cursor + SHORT_WINDOW)
            if pos >= 0:
                page = end_page = page_of(pos)
                cursor = pos
        elif len(key) >= MIN_PROBE:
            probes = [key[:PROBE]]
            if len(key) > PROBE:
                probes += [key[len(key) // 2 : len(key) // 2 + PROBE // 2], key[-PROBE // 2 :]]
            for i, probe in enumerate(probes):
                pos = nearest(probe, cursor)
                if pos >= 0:
                    page = page_of(pos)
                    if i == 0 and not text.startswith(("Figure", "Table", "|")):
                        cursor = pos
                    break
            tail = nearest(key[-PROBE // 2 :], max(cursor, starts[page - 1] if page else 0)) if page else -1
            end_page = page_of(tail) if tail >= 0 else page
        page = page or prev
        end_page = end_page if page <= end_page <= page + 3 else page
        out.append((page, end_page))
        prev = page
    return out
