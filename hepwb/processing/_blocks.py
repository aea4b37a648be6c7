"""Paragraph building and block classification for :mod:`hepwb.processing.pdf`.

Rows in reading order (see :mod:`hepwb.processing._layout`) are grouped into paragraphs, joined
into single-line texts (hyphenation repaired), classified as heading, caption, list or text, and
rendered as CommonMark pieces. Table regions (:mod:`hepwb.processing._tables`) and display
equations (:mod:`hepwb.processing._math`) become atomic ``table``/``math`` blocks; the
bibliography (:mod:`hepwb.processing._refs`) becomes one ``reference`` block per entry.

Example:
    >>> from hepwb.processing._layout import Row
    >>> rows = [Row(50, 100, 300, 112, "1 Introduction", 14.0, True, 1, 0),
    ...         Row(50, 130, 500, 140, "The vir-", 10.0, False, 1, 1),
    ...         Row(50, 142, 500, 152, "tual photon.", 10.0, False, 1, 1)]
    >>> [(b.kind, b.text, b.level) for b in build_blocks(rows, body=10.0)]
    [('heading', '## 1 Introduction', 2), ('text', 'The virtual photon.', 0)]
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from hepwb.processing._figtext import Box, mark_figure_text, rows_box
from hepwb.processing._floats import float_captions
from hepwb.processing._layout import Row
from hepwb.processing._math import render_math
from hepwb.processing._mathcheck import review_math
from hepwb.processing._paragraphs import (
    BULLETS,
    CAPTION_RE,
    END_RE,
    Para,
    join_rows,
    segment,
    starts_bullet,
)
from hepwb.processing._refs import find_section, select, split_entries

__all__ = ["RenderedBlock", "build_blocks", "join_rows"]

_NUMBERED_RE = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,4})\.?(?:\s+[-–])?\s+\S")
_PLAIN_NUM_RE = re.compile(r"^\d{1,2}(?:\.\d{1,2}){0,4}(?:\s+[-–])?\s+[A-Z]")
_TOC_RE = re.compile(r"\s\d{1,3}$")
_TOC_OK_RE = re.compile(
    r"(?i)\b(?:run|phase|part|step|chapter|version|level|stage|area|type|solution|round|option"
    r"|method|model|case|section|appendix|tier|class)\s\d+$"
)
_ROMAN_RE = re.compile(r"^[IVX]{1,5}\.\s+\S")
_LETTER_RE = re.compile(r"^[A-H]\.\s+\S")
_APPENDIX_RE = re.compile(r"^appendix\b|^[A-H](?:\.\d{1,2})*\.?\s+[A-Z]", re.I)
_KNOWN_RE = re.compile(
    r"^(?:\d{1,2}\.?\s+|[IVX]{1,5}\.\s+)?(?:abstract|references|bibliography|acknowledge?ments?|contents"
    r"|table of contents|conclusions?|introduction|summary|outlook|summary and outlook|discussion"
    r"|appendix(?:\s+[A-Z0-9]+)?)\s*[.:]?$",
    re.I,
)


@dataclass(slots=True)
class RenderedBlock:
    """A block ready for the markdown: kind, rendered text and page span."""

    kind: str
    text: str
    page: int
    page_end: int
    level: int = 0
    box: tuple[float, float, float, float] | None = None  # a text paragraph's rows on its first page
    lines: int = 1


def _numbered_level(text: str) -> int:
    m = _NUMBERED_RE.match(text)
    if m:
        return min(m.group(1).count(".") + 2, 6)
    if _ROMAN_RE.match(text) or text.lower().startswith("appendix"):
        return 2
    if _LETTER_RE.match(text) or _APPENDIX_RE.match(text):
        return 3
    return 0


def _is_heading_shape(p: Para) -> bool:
    t = p.text
    letters = sum(ch.isalpha() for ch in t)
    return (
        len(p.rows) <= 3
        and len(t) <= 120
        and letters >= 3
        and letters >= 0.5 * len(t.replace(" ", ""))
        and len(t.split()) <= 16
        and t[-1] not in ",;"
        and not (t.endswith(".") and len(t) > 40)
    )


def _section_like(text: str) -> bool:
    """Numbered (digits or roman) or a standard section name such as Abstract or References."""
    return bool(_NUMBERED_RE.match(text) or _ROMAN_RE.match(text) or _KNOWN_RE.match(text))


def _plain_numbered(p: Para) -> bool:
    """A one-line numbered title in body font (``1.3 Data volumes``, ``2 - Archetype``)."""
    return len(p.rows) == 1 and bool(_PLAIN_NUM_RE.match(p.text)) and not END_RE.search(p.text)


def _substantive(text: str) -> bool:
    """Numbered heading whose title has two real words (not an axis label such as ``2.1 GeV``)."""
    m = _NUMBERED_RE.match(text) or _ROMAN_RE.match(text) or _LETTER_RE.match(text)
    title = text[m.end() - 1 :] if m else ""
    return sum(1 for w in title.split() if sum(ch.isalpha() for ch in w) >= 3) >= 2


def _pick_title(paras: list[Para], body: float) -> None:
    """Mark the first largest-font paragraph of page 1 as the level-1 title (continuations merged)."""
    first: list[int] = []
    for i, p in enumerate(paras[:25]):
        if p.rows[0].page != 1 or (first and _section_like(p.text)):
            break  # the title comes before the first section of page 1
        if p.kind in ("text", "heading") and not _section_like(p.text):
            first.append(i)
    if not first:
        return
    top = max(paras[i].size for i in first)
    i = next(i for i in first if paras[i].size >= 0.85 * top)
    title = paras[i]
    if title.size < 1.2 * body or len(title.rows) > 4 or len(title.text) > 250:
        return
    title.kind, title.level = "heading", 1
    while i + 1 < len(paras) and paras[i + 1].rows[0].page == 1 and abs(paras[i + 1].size - title.size) < 0.6:
        nxt = paras[i + 1]
        if len(title.text) + len(nxt.text) > 250 or nxt.kind not in ("text", "heading"):
            break
        title.rows.extend(nxt.rows)
        title.text = join_rows([title.text, nxt.text])
        del paras[i + 1]


def _classify(paras: list[Para], body: float) -> None:
    for p in paras:
        if p.kind in ("math", "table"):
            continue
        if CAPTION_RE.match(p.text):
            p.kind = "caption"
        elif starts_bullet(p.text):
            p.kind = "list"
            p.text = p.text.lstrip(BULLETS + " ")
            if not p.text:
                p.kind = "text"
                p.text = p.rows[0].text
        elif (
            _is_heading_shape(p)
            and p.text[0].isalnum()
            and not (_TOC_RE.search(p.text) and not _TOC_OK_RE.search(p.text))
            and (
                p.size >= 1.15 * body
                or p.bold
                or _plain_numbered(p)
                or (len(p.rows) == 1 and _KNOWN_RE.match(p.text))
            )
        ):
            p.kind = "heading"
    _pick_title(paras, body)
    # front matter (affiliations, dates) between the title and the first real section: plain text
    for p in paras:
        if p.rows[0].page > 1 or (p.kind == "heading" and (p.level or _section_like(p.text))):
            if p.level != 1:
                break
        elif p.kind == "heading":
            p.kind = "text"
    # a heading must lead to prose (figure labels such as "Mx (GeV)" do not)
    leads = False
    for p, nxt in zip(reversed(paras), [None, *reversed(paras[1:])], strict=True):
        if p.kind != "heading":
            leads = False
            continue
        ok = nxt is not None and (
            nxt.kind == "list"
            or (nxt.kind == "text" and _is_prose(nxt.text))
            or (nxt.kind == "heading" and leads)
        )
        if not ok and p.level != 1 and not _KNOWN_RE.match(p.text) and not _substantive(p.text):
            p.kind = "text"
            leads = False
        else:
            leads = True
    levels: dict[float, Counter[int]] = {}
    for p in paras:
        if p.kind == "heading" and p.level == 0:
            p.level = _numbered_level(p.text) or (2 if _KNOWN_RE.match(p.text) else 0)
            if p.level:
                levels.setdefault(round(p.size), Counter())[p.level] += 1
    for p in paras:
        if p.kind == "heading" and p.level == 0:
            known = levels.get(round(p.size))
            p.level = known.most_common(1)[0][0] if known else (2 if p.size >= 1.25 * body else 3)


def _is_prose(text: str) -> bool:
    return len(text) >= 40 and sum(ch.isalpha() for ch in text) >= 0.6 * len(text)


def _merge_continuations(paras: list[Para], body: float) -> list[Para]:
    """Join a paragraph broken by a column/page change, a float or a footnote.

    The interrupting captions and small-font paragraphs (footnotes) are moved after the joined one.
    """
    out: list[Para] = []
    i = 0
    while i < len(paras):
        p = paras[i]
        out.append(p)
        i += 1
        while p.kind == "text" and _is_prose(p.text) and not END_RE.search(p.text):
            j = i
            while j < len(paras) and j - i < 3 and (paras[j].kind == "caption" or paras[j].size < 0.9 * body):
                j += 1
            if j >= len(paras) or paras[j].kind != "text" or not paras[j].text[:1].islower():
                break
            nxt = paras[j]
            if abs(nxt.size - p.size) > 0.6:
                break
            p.extra.extend(paras[i:j])
            p.rows.extend(nxt.rows)
            p.text = join_rows([p.text, nxt.text])
            i = j + 1
        out.extend(p.extra)
        p.extra = []
    return out


def _references(paras: list[Para], keep: list[bool]) -> list[Para]:
    """Replace the kept paragraphs of the bibliography by one ``reference`` paragraph per entry."""
    out: list[Para] = []
    run: list[list[Row]] = []
    for p, k in [*zip(paras, keep, strict=True), (None, False)]:
        if k and p is not None:
            run.append(p.rows)
            continue
        out.extend(Para(rs, "reference", 0, join_rows([r.text for r in rs])) for rs in split_entries(run))
        run = []
        if p is not None:
            out.append(p)
    return out


def build_blocks(
    rows: list[Row], body: float, regions: dict[int, list[Box]] | None = None
) -> list[RenderedBlock]:
    """Group rows (document reading order) into classified, rendered blocks.

    Args:
        rows: All kept rows of the document in reading order.
        body: The document's body font size.
        regions: Figure regions by page: text paragraphs in them that are not prose become
            ``figure_text`` (:mod:`hepwb.processing._figtext`).

    Returns:
        The rendered blocks in order; consecutive list items are merged into one ``list`` block, and
        figure captions and figure text are moved to the end of their section
        (:mod:`hepwb.processing._floats`).
    """
    paras = segment(rows, body)
    _classify(paras, body)
    paras = review_math(paras, lambda p: p.rows[0].page)
    for p in paras:
        if p.merged:
            p.text = render_math(p.rows)
        elif p.kind == "text" and p.text.startswith("$$"):  # display math judged a label, row or caption
            p.text = join_rows([r.text for r in p.rows])
    paras = _merge_continuations(paras, body)
    span = find_section([(p.kind, p.text, p.level, p.size) for p in paras])
    if span is not None:
        a, b = span
        paras[a:b] = _references(paras[a:b], select([(p.kind, p.text, p.rows[0].page) for p in paras[a:b]]))
    out: list[RenderedBlock] = []
    for p in paras:
        page, page_end = p.rows[0].page, max(r.page for r in p.rows)
        if p.kind == "heading":
            out.append(RenderedBlock("heading", "#" * p.level + " " + p.text, page, page_end, p.level))
        elif p.kind == "list":
            item = "- " + p.text
            if out and out[-1].kind == "list":
                out[-1].text += "\n" + item
                out[-1].page_end = max(out[-1].page_end, page_end)
            else:
                out.append(RenderedBlock("list", item, page, page_end))
        else:
            text = "\\" + p.text if p.text[0] in "#>" or p.text.startswith(("$$", "```", "~~~")) else p.text
            if p.kind in ("math", "table"):
                text = p.text
            box = rows_box([r for r in p.rows if r.page == page])
            out.append(RenderedBlock(p.kind, text, page, page_end, box=box, lines=len(p.rows)))
    mark_figure_text(out, regions or {})
    return float_captions(out)
