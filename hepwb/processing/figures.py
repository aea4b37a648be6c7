"""Figure and table records: label, number, page, caption offsets and the figure's region on its page.

A record is made for every caption block whose text opens with a label (``Figure 3:``,
``FIG. 3.``, ``Fig. 3 |``, ``TABLE II.``, ``Table 2:``); roman numerals (REVTeX tables) become
integers. The first caption of a number wins (a later ``Figure 3 (continued)`` is not a new
figure). With the source PDF, :func:`locate_figures` finds the caption on its page and the
region of the figure (above the caption) or table (below it) between the nearest prose
paragraphs of the same column; :func:`render_figures` crops those regions to PNG files.

Example:
    >>> caption_label("FIG. 3. Beam-spin asymmetry as a function of t.")
    ('figure', 3, 'Figure 3')
    >>> caption_label("TABLE II: Systematic uncertainties.")
    ('table', 2, 'Table 2')
    >>> caption_label("Figure shows nothing") is None
    True
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hepwb import defaults
from hepwb.types import Document, JSONObject

__all__ = [
    "PageLayout",
    "caption_label",
    "crop_box",
    "figure_records",
    "figure_regions",
    "image_name",
    "is_prose",
    "locate_figures",
    "page_layouts",
    "pdf_of",
    "render_figures",
    "roman",
]

_LABEL_RE = re.compile(
    r"^(?:\*\*|_)*(?P<kind>fig(?:ure)?s?|tab(?:le)?s?)\.?\s*(?P<num>\d{1,3}|[IVXL]{1,6})(?P<sub>[a-z]?)\b\s*[.:|)]?",
    re.I,
)
_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50}
_PROSE_MIN = 120
_MIN_REGION = 25.0
_MARGIN = 0.07


def roman(text: str) -> int:
    """Value of a roman numeral (``"IV"`` -> 4); 0 when ``text`` is not one.

    Example:
        >>> roman("XIV"), roman("3")
        (14, 0)
    """
    if not text or any(ch not in _ROMAN for ch in text):
        return 0
    total = 0
    for i, ch in enumerate(text):
        v = _ROMAN[ch]
        total += -v if i + 1 < len(text) and _ROMAN[text[i + 1]] > v else v
    return total


def caption_label(text: str) -> tuple[str, int, str] | None:
    """``(kind, number, label)`` of a caption's opening label, or None when it has none."""
    m = _LABEL_RE.match(text.lstrip())
    if m is None:
        return None
    num = m.group("num")
    number = int(num) if num.isdigit() else roman(num.upper())
    if number <= 0:
        return None
    kind = "figure" if m.group("kind").lower().startswith("f") else "table"
    return kind, number, f"{kind.capitalize()} {number}"


def figure_records(doc: Document) -> list[JSONObject]:
    """One record per numbered figure and table of ``doc`` (from its caption blocks, in order).

    Example:
        >>> from hepwb.processing.markdown import markdown_document
        >>> doc = markdown_document("Text.\\n\\nFigure 1: A plot.\\n\\nTable 1: Cuts.", "S01")
        >>> [(r["id"], r["page"], r["caption_start"]) for r in figure_records(doc)]
        [('figure-1', 1, 7), ('table-1', 1, 26)]
    """
    out: list[JSONObject] = []
    seen: set[str] = set()
    for b in doc.blocks:
        if b.kind != "caption":
            continue
        found = caption_label(doc.block_text(b))
        if found is None:
            continue
        kind, number, label = found
        rid = f"{kind}-{number}"
        if rid in seen:
            continue
        seen.add(rid)
        out.append(
            {
                "id": rid,
                "kind": kind,
                "number": number,
                "label": label,
                "page": b.page,
                "caption_start": b.start,
                "caption_end": b.end,
                "bbox": None,
                "caption_bbox": None,
                "image": None,
            }
        )
    return out


def pdf_of(doc: Document) -> Path | None:
    """The PDF a document was made from (its source, or the PDF matched to a LaTeX source)."""
    for k in ("pdf_file", "source_file"):
        value = doc.meta.get(k)
        if value and str(value).lower().endswith(".pdf") and Path(str(value)).is_file():
            return Path(str(value))
    return None


def _caption_rect(blocks: list[tuple[Any, ...]], kind: str, number: int) -> tuple[float, ...] | None:
    """The text block of a page that opens with the caption label ``kind number``."""
    for b in blocks:
        if not _is_caption(b):
            continue  # "Figure 3 shows ..." in running text is not the caption
        found = caption_label(str(b[4]).strip())
        if found is not None and found[0] == kind and found[1] == number:
            return (float(b[0]), float(b[1]), float(b[2]), float(b[3]))
    return None


def _is_caption(block: tuple[Any, ...]) -> bool:
    """A text block opening with a caption label closed by ``.``, ``:``, ``|`` or ``)``."""
    m = _LABEL_RE.match(str(block[4]).strip())
    return m is not None and m.group(0).rstrip().endswith((".", ":", "|", ")"))


def _is_prose(block: tuple[Any, ...]) -> bool:
    return is_prose(str(block[4]), str(block[4]).count("\n") + 1)


def is_prose(text: str, lines: int) -> bool:
    """Whether ``text`` set in ``lines`` lines reads as a paragraph: long, full lines, mostly letters.

    Example:
        >>> is_prose("-0.6 -0.4 -0.2 0 0.2", 1), is_prose("The asymmetry rises with the momentum. " * 4, 2)
        (False, True)
    """
    text = " ".join(text.split())
    return (
        len(text) >= _PROSE_MIN
        and len(text) / lines >= 45
        and sum(c.isalpha() for c in text) >= 0.6 * len(text)
    )


def _region(
    blocks: list[tuple[Any, ...]], cap: tuple[float, ...], kind: str, width: float, height: float
) -> tuple[float, float, float, float]:
    """The figure's (above the caption) or table's (below it) region between prose paragraphs."""
    text = [b for b in blocks if b[6] == 0 and str(b[4]).strip()]
    left = min((float(b[0]) for b in text), default=0.0)
    right = max((float(b[2]) for b in text), default=width)
    # a figure at the top of the page has no text above it: the top margin bounds it
    top = min([float(b[1]) for b in blocks] + [_MARGIN * height])
    bottom = max([float(b[3]) for b in blocks] + [(1 - _MARGIN) * height])
    if cap[2] - cap[0] >= 0.55 * (right - left):
        x0, x1 = left, right
    elif (cap[0] + cap[2]) / 2 < width / 2:
        x0, x1 = left, max(cap[2], width / 2 - 6)
    else:
        x0, x1 = min(cap[0], width / 2 + 6), right
    inside = [b for b in text if float(b[2]) > x0 + 5 and float(b[0]) < x1 - 5]
    # prose paragraphs and the other captions bound the region
    column = [b for b in inside if _is_prose(b) or (_is_caption(b) and (b[1], b[3]) != (cap[1], cap[3]))]
    up_bound = max((b for b in column if float(b[3]) <= cap[1] + 1), key=lambda b: float(b[3]), default=None)
    down_bound = min(
        (b for b in column if float(b[1]) >= cap[3] - 1), key=lambda b: float(b[1]), default=None
    )
    above = float(up_bound[3]) if up_bound is not None else top
    below = float(down_bound[1]) if down_bound is not None else bottom
    up, down = (x0, above, x1, cap[1]), (x0, cap[3], x1, below)

    def content(box: tuple[float, float, float, float]) -> int:
        """Non-prose text (axis labels, table cells) inside ``box``."""
        return sum(1 for b in inside if b not in column and box[1] - 1 <= (b[1] + b[3]) / 2 <= box[3] + 1)

    tall_up, tall_down = cap[1] - above >= _MIN_REGION, below - cap[3] >= _MIN_REGION
    has_up, has_down = tall_up and content(up) > 0, tall_down and content(down) > 0
    if has_up != has_down:  # the side holding the figure's labels or the table's cells
        return up if has_up else down
    if has_up and has_down:  # stacked floats: the content between two captions is the other's
        up_cap = up_bound is not None and _is_caption(up_bound)
        down_cap = down_bound is not None and _is_caption(down_bound)
        if up_cap != down_cap:
            return down if up_cap else up
    prefer_up = kind == "figure"  # figures float above their caption, tables below theirs
    if prefer_up:
        return up if tall_up or not tall_down else down
    return down if tall_down or not tall_up else up


PageLayout = tuple[list[tuple[Any, ...]], float, float]
"""A page's text blocks as pymupdf's ``get_text("blocks")`` gives them, its width and its height."""


def figure_regions(layout: PageLayout) -> list[tuple[float, float, float, float]]:
    """The region of every figure whose caption is on this page (as :func:`locate_figures` finds it)."""
    blocks, width, height = layout
    out = []
    for b in blocks:
        found = caption_label(str(b[4]).strip()) if _is_caption(b) else None
        if found is not None and found[0] == "figure":
            cap = (float(b[0]), float(b[1]), float(b[2]), float(b[3]))
            out.append(_region(blocks, cap, "figure", width, height))
    return out


def page_layouts(pdf: str | Path, pages: set[int]) -> dict[int, PageLayout]:
    """Text blocks and sizes of the 1-based ``pages`` of a PDF (text only: images cost memory)."""
    import pymupdf

    out: dict[int, PageLayout] = {}
    with pymupdf.open(pdf) as pdoc:
        for n in sorted(pages):
            if 1 <= n <= pdoc.page_count:
                page = pdoc[n - 1]
                out[n] = (page.get_text("blocks"), page.rect.width, page.rect.height)
    return out


def locate_figures(
    records: list[JSONObject],
    pdf: str | Path | None = None,
    *,
    move_pages: bool = False,
    layouts: dict[int, PageLayout] | None = None,
) -> list[str]:
    """Fill ``caption_bbox`` and ``bbox`` (PDF points) of ``records``; return warnings.

    The caption is looked for on the record's page, then the next and the previous one; a record
    whose caption is not found keeps ``bbox`` None. With ``move_pages`` (documents whose pages
    were estimated, such as LaTeX conversions) the record takes the page where its caption is.

    Args:
        records: Figure records (:func:`figure_records`).
        pdf: The PDF, read for the pages ``layouts`` does not give.
        move_pages: Move a record to the page where its caption is found.
        layouts: Pages already read (the PDF converter passes its own lines grouped in blocks).
    """
    wanted = {int(r["page"]) + d for r in records for d in (-1, 0, 1)}
    layouts = dict(layouts or {})
    if pdf is not None and wanted - set(layouts):
        layouts.update(page_layouts(pdf, wanted - set(layouts)))
    missing: list[str] = []
    for rec in records:
        for page_no in (int(rec["page"]), int(rec["page"]) + 1, int(rec["page"]) - 1):
            if page_no not in layouts:
                continue
            blocks, width, height = layouts[page_no]
            cap = _caption_rect(blocks, str(rec["kind"]), int(rec["number"]))
            if cap is None:
                continue
            box = _region(blocks, cap, str(rec["kind"]), width, height)
            rec["caption_bbox"] = [round(v, 1) for v in cap]
            rec["bbox"] = [round(v, 1) for v in box]
            rec["bbox_page"] = page_no
            if move_pages:
                rec["page"] = page_no
            break
        else:
            missing.append(str(rec["label"]))
    return [f"caption not found in the PDF for {', '.join(missing)}"] if missing else []


def image_name(figure_id: str) -> str:
    """File name of a record's crop under ``figures/`` (``figure-3`` -> ``figure_3.png``)."""
    return f"{figure_id.replace('-', '_')}.png"


def crop_box(record: JSONObject) -> tuple[float, float, float, float]:
    """The part of the page a crop shows: the figure's region and its caption, with a 2-point margin."""
    x0, y0, x1, y1 = record["bbox"]
    cx0, cy0, cx1, cy1 = record.get("caption_bbox") or record["bbox"]
    return (min(x0, cx0) - 2, min(y0, cy0) - 2, max(x1, cx1) + 2, max(y1, cy1) + 2)


def render_figures(
    pdf: str | Path, records: list[JSONObject], folder: Path, *, dpi: int = defaults.FIGURE_DPI
) -> list[str | None]:
    """Crop each record's region (caption included) from the PDF to ``folder/<id>.png``.

    Returns:
        Per record, the PNG's file name, or None when the record has no region or cannot be drawn.
    """
    import pymupdf

    names: list[str | None] = []
    with pymupdf.open(pdf) as pdoc:
        for rec in records:
            if not rec.get("bbox"):
                names.append(None)
                continue
            clip = pymupdf.Rect(*crop_box(rec))
            page = pdoc[int(rec.get("bbox_page") or rec["page"]) - 1]
            name = image_name(str(rec["id"]))
            try:
                pix = page.get_pixmap(clip=clip & page.rect, dpi=dpi)
                folder.mkdir(parents=True, exist_ok=True)
                tmp = folder / f".{name}.part"
                pix.save(tmp, output="png")
                tmp.replace(folder / name)
            except Exception:  # a crop is an extra: the record stays, without an image
                names.append(None)
                continue
            names.append(name)
    return names
