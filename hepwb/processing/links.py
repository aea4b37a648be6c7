"""Figures, equations, sections, citations and cross-references of a converted document, linked.

:func:`annotate` is the last step of every converter. It marks the front matter
(:mod:`hepwb.processing.frontmatter`) where the converter has not, and adds to ``Document.meta``:

- ``figures``: one record per numbered figure and table (:mod:`hepwb.processing.figures`), with
  its region on the PDF page when the PDF is known;
- ``equations``: numbered display equations (``format`` ``latex`` or ``unicode``);
- ``math`` and ``math_summary``: every display-math block with its number and form, the LaTeX
  when known (:mod:`hepwb.processing.equations`);
- ``sections``: numbered headings;
- ``xrefs``: every mention of a figure, table, equation, section or bibliography entry in the
  running text, with offsets and the id of its ``target`` (None when nothing has that number);
- ``xref_summary``: counts of mentions and resolved mentions per kind.

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> doc = annotate(markdown_document("Fig. 1 shows it [1].\\n\\nFigure 1: A plot.", "S01",
    ...                meta={"references": [{"id": "ref-1", "citation-label": "1"}]}))
    >>> [(x["kind"], x["target"]) for x in doc.meta["xrefs"]]
    [('figure', 'figure-1'), ('citation', 'ref-1')]
    >>> targets_of(doc, 0, 20)
    [('Fig. 1', 'figure-1'), ('[1]', 'ref-1')]
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hepwb import defaults
from hepwb.files.io import read_json, write_json
from hepwb.processing.equations import math_records, math_summary
from hepwb.processing.figures import PageLayout, figure_records, locate_figures, pdf_of, render_figures
from hepwb.processing.frontmatter import mark_front_matter
from hepwb.processing.xrefs import equation_records, find_mentions, link_mentions, section_records
from hepwb.text.ids import code_fingerprint, file_sha256, short_hash
from hepwb.types import Document, JSONObject

__all__ = [
    "annotate",
    "cached_crops",
    "caption_of",
    "describe_target",
    "link_crops",
    "reader_context",
    "references_of",
    "targets_of",
    "write_link_files",
]


def references_of(doc: Document) -> list[JSONObject]:
    """The document's bibliography as CSL-JSON items (the ``references.json`` content)."""
    refs = doc.meta.get("references") or doc.meta.get("inspire_references") or []
    return [r for r in refs if isinstance(r, dict)]


def annotate(
    doc: Document, *, pdf: str | Path | None = None, layouts: dict[int, PageLayout] | None = None
) -> Document:
    """Return ``doc`` with figure, equation, section and cross-reference records in its metadata.

    Args:
        doc: A converted document.
        pdf: The PDF it was made from (default: :func:`~hepwb.processing.figures.pdf_of`); used to
            find each figure's region on its page.
        layouts: The PDF's pages as the converter read them (text blocks and sizes), so the PDF
            is not read again.
    """
    if "front_matter" not in doc.meta:  # the PDF converter marks it itself, before its references
        blocks, front = mark_front_matter(doc.markdown, list(doc.blocks))
        doc = Document(
            doc.document_id, doc.label, doc.markdown, tuple(blocks), {**doc.meta, "front_matter": front}
        )
    figures = figure_records(doc)
    warnings: list[str] = []
    source = Path(pdf) if pdf is not None else pdf_of(doc)
    if source is not None and figures:
        try:
            latex = doc.meta.get("source_format") == "latex"
            warnings = locate_figures(figures, source, move_pages=latex, layouts=layouts)
        except Exception as exc:  # regions are an extra; a PDF quirk must not lose the document
            warnings = [f"figure regions not found ({type(exc).__name__}: {exc})"]
    equations = equation_records(doc)
    math = math_records(doc)
    sections = section_records(doc)
    mentions = link_mentions(find_mentions(doc), figures, equations, sections, references_of(doc))
    summary: JSONObject = {}
    for m in mentions:
        s = summary.setdefault(str(m["kind"]), {"mentions": 0, "resolved": 0})
        s["mentions"] += 1
        s["resolved"] += m["target"] is not None
    meta: JSONObject = {
        **doc.meta,
        "figures": figures,
        "equations": equations,
        "math": math,
        "math_summary": math_summary(math),
        "sections": sections,
        "xrefs": mentions,
        "xref_summary": summary,
    }
    if warnings:
        meta["conversion_warnings"] = [*doc.meta.get("conversion_warnings", []), *warnings]
    return Document(doc.document_id, doc.label, doc.markdown, doc.blocks, meta)


def targets_of(doc: Document, start: int, end: int) -> list[tuple[str, str]]:
    """``(mention text, target id)`` of the resolved mentions inside ``[start, end)``, one per target.

    A target mentioned several times ("Fig. 2", "Figure 2", "Fig. 2(a)") comes once, with its first
    mention's text, in the order of first mention.
    """
    out: dict[str, str] = {}
    for m in doc.meta.get("xrefs", []):
        if m["target"] is None or m["start"] < start or m["end"] > end:
            continue
        out.setdefault(str(m["target"]), doc.markdown[m["start"] : m["end"]])
    return [(text, target) for target, text in out.items()]


def caption_of(doc: Document, target: str) -> str:
    """The caption text of figure/table ``target`` (``"figure-3"``), or ``""``."""
    for f in doc.meta.get("figures", []):
        if f["id"] == target:
            return doc.markdown[f["caption_start"] : f["caption_end"]]
    return ""


def describe_target(doc: Document, target: str, width: int = defaults.DISPLAY_LINK_CHARS) -> str:
    r"""A one-line description of a link target: a figure's caption, an equation, a reference entry.

    Example:
        >>> from hepwb.processing.markdown import markdown_document
        >>> doc = annotate(markdown_document("See Fig. 1.\n\nFigure 1: A plot of x.", "S01"))
        >>> describe_target(doc, "figure-1")
        'Figure 1 (p. 1): Figure 1: A plot of x.'
    """
    for f in doc.meta.get("figures", []):
        if f["id"] == target:
            return _clip(f"{f['label']} (p. {f['page']}): {caption_of(doc, target)}", width)
    for e in doc.meta.get("equations", []):
        if e["id"] == target:
            text = " ".join(doc.markdown[e["start"] : e["end"]].replace("$$", " ").split())
            return _clip(f"Eq. ({e['number']}) (p. {e['page']}): {text}", width)
    for sec in doc.meta.get("sections", []):
        if sec["id"] == target:
            heading = doc.markdown[sec["start"] :].split("\n", 1)[0].lstrip("# ")
            return _clip(f"Section {sec['number']} (p. {sec['page']}): {heading}", width)
    for ref in references_of(doc):
        if str(ref.get("id")) == target:
            ident = f" [arXiv:{ref['number'].removeprefix('arXiv:')}]" if ref.get("number") else ""
            ident += f" [doi:{ref['DOI']}]" if ref.get("DOI") else ""
            return _clip(f"{target}: {ref.get('note', '')}{ident}", width)
    return target


def cached_crops(pdf: Path, figures: list[JSONObject], crops: Path) -> tuple[Path, list[str | None]]:
    """The folder of ``figures``' crops from ``pdf`` under ``crops``, rendered on first use.

    The folder is named by the SHA-256 of the PDF, the figure regions and the resolution, so it is shared by
    every chunk set of the document and never stale. It is rendered beside and renamed into place with its
    list of names (``names.json``) last, so a killed render is rendered again.
    """
    key = short_hash(
        {
            "pdf": file_sha256(pdf),
            "figures": [_region(f) for f in figures],
            "dpi": defaults.FIGURE_DPI,
            "code": code_fingerprint("processing"),
        }
    )
    folder = crops / key
    listed = folder / "names.json"
    if listed.is_file():
        try:
            names = read_json(listed, "figure crop list")
            if isinstance(names, list) and len(names) == len(figures):
                return folder, [str(n) if n else None for n in names]
        except ValueError:  # a damaged list: render again below
            pass
    part = crops / f".{key}.part-{os.getpid()}"
    shutil.rmtree(part, ignore_errors=True)
    names = render_figures(pdf, figures, part)
    write_json(part / "names.json", names)
    if folder.exists():
        shutil.rmtree(folder, ignore_errors=True)
    try:
        part.replace(folder)
    except OSError:  # another process published the same crops first: theirs are identical
        shutil.rmtree(part, ignore_errors=True)
    return folder, names


def link_crops(cached: tuple[Path, list[str | None]], fig_dir: Path) -> list[str | None]:
    """Hard-link (or copy, across file systems) the cached crops into ``fig_dir``; returns their names."""
    folder, names = cached
    for name in names:
        if not name:
            continue
        fig_dir.mkdir(parents=True, exist_ok=True)
        try:
            os.link(folder / name, fig_dir / name)
        except OSError:
            shutil.copyfile(folder / name, fig_dir / name)
    return names


def _region(figure: JSONObject) -> JSONObject:
    """What a figure's crop depends on: its id, page and box."""
    return {k: figure.get(k) for k in ("id", "page", "bbox_page", "bbox", "caption_bbox")}


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def reader_context(doc: Document, start: int, end: int, *, captions: bool = True) -> str:
    r"""The text a reader gets for span ``[start, end)``: the span, then the captions it mentions.

    With ``captions``, the caption of every figure and table the span mentions (and that the
    span does not already hold) follows it, one per paragraph, so a chunk saying "Fig. 3 shows
    the asymmetry" arrives with what Figure 3 shows.

    Example:
        >>> from hepwb.processing.markdown import markdown_document
        >>> doc = annotate(markdown_document("As Fig. 1 shows.\n\nFigure 1: Asymmetry versus t.", "S01"))
        >>> reader_context(doc, 0, 16)
        'As Fig. 1 shows.\n\nFigure 1: Asymmetry versus t.'
    """
    text = doc.markdown[start:end]
    if not captions:
        return text
    extra: list[str] = []
    for _, target in targets_of(doc, start, end):
        for f in doc.meta.get("figures", []):
            if f["id"] == target and not (start <= f["caption_start"] and f["caption_end"] <= end):
                caption = caption_of(doc, target)
                if caption not in extra:
                    extra.append(caption)
    return "\n\n".join([text, *extra])


def write_link_files(out: Path, doc: Document, *, crops: Path | None = None) -> None:
    """Write figures.json (with PNG crops under ``figures/``), xrefs.json and front_matter.json.

    Records hold offsets into ``full_document.md``, pages and boxes, never text (content stays in
    ``.md`` files). A crop is rendered from the document's PDF when that file is at hand; each
    figure record's ``image`` is its PNG's path relative to ``out`` (None without a crop).

    ``crops``: a folder where a document's crops are kept by content (PDF and figure regions); they are
    rendered there once and linked into every chunk set's tree, which a new chunk size then does not
    render again (:func:`cached_crops`).
    """
    figures = [dict(f) for f in doc.meta.get("figures", [])]
    pdf = pdf_of(doc)
    fig_dir = out / "figures"
    if fig_dir.exists():
        shutil.rmtree(fig_dir)
    if pdf is None or not figures:
        names: list[str | None] = [None] * len(figures)
    elif crops is None:
        names = render_figures(pdf, figures, fig_dir)
    else:
        names = link_crops(cached_crops(pdf, figures, crops), fig_dir)
    for f, name in zip(figures, names, strict=True):
        f["image"] = f"figures/{name}" if name else None
    write_json(out / "figures.json", figures)
    write_json(
        out / "xrefs.json",
        {
            "equations": doc.meta.get("equations", []),
            "math": [{k: v for k, v in m.items() if k != "latex"} for m in doc.meta.get("math", [])],
            "math_summary": doc.meta.get("math_summary", {}),
            "sections": doc.meta.get("sections", []),
            "mentions": doc.meta.get("xrefs", []),
            "summary": doc.meta.get("xref_summary", {}),
        },
    )
    write_json(out / "front_matter.json", doc.meta.get("front_matter") or {})
