"""Convert a PDF paper into a :class:`~hepwb.types.Document` (CommonMark text plus typed blocks).

The converter reads each page once with pymupdf's ``get_text("dict")``, keeps the text in the
page's dominant direction (margin stamps such as the vertical arXiv identifier are dropped),
removes draft line numbers, running headers/footers and page numbers, orders two-column pages
column by column, rebuilds paragraphs (hyphenation repaired, ligatures expanded) and detects
headings, captions and bullet lists. Blocks are joined by one blank line; every block's offsets
satisfy ``markdown[block.start:block.end] == block text``.

Example:
    >>> from pathlib import Path
    >>> import tempfile, pymupdf
    >>> tmp = Path(tempfile.mkdtemp()) / "P99_demo.pdf"
    >>> pdf = pymupdf.open(); page = pdf.new_page()
    >>> _ = page.insert_text((72, 72), "Hello world.", fontsize=10); pdf.save(tmp); pdf.close()
    >>> doc = pdf_to_document(tmp)
    >>> doc.label, doc.markdown, doc.meta["pages"]
    ('P99', 'Hello world.', 1)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hepwb import __version__
from hepwb.exceptions import ProcessingError
from hepwb.processing._bibtail import recover_bibliography
from hepwb.processing._blocks import build_blocks
from hepwb.processing._diacritics import repair_diacritics
from hepwb.processing._figtext import rows_box
from hepwb.processing._layout import Row, body_font_size, drop_furniture, extract_page, order_rows
from hepwb.processing.figures import PageLayout, figure_regions
from hepwb.processing.frontmatter import mark_front_matter
from hepwb.processing.links import annotate
from hepwb.processing.references import parse_references
from hepwb.text.ids import content_uuid, file_sha256
from hepwb.types import Block, Document, JSONObject

__all__ = ["pdf_to_document"]


def _fail(path: str | Path, code: str, message: str) -> ProcessingError:
    return ProcessingError(message, code=code, path=str(path))


def _open(path: str | Path) -> Any:
    """Open ``path`` with pymupdf after the checks that give clear error codes."""
    import pymupdf

    p = Path(path)
    if not p.exists():
        raise _fail(path, "PROC_NOT_FOUND", f"PDF file not found: {p}. Check the path or the corpus folder.")
    if not p.is_file():
        raise _fail(path, "PROC_NOT_PDF", f"{p} is not a file; pass the path of a PDF file.")
    with p.open("rb") as fh:
        head = fh.read(1024)
    if b"%PDF-" not in head:
        raise _fail(
            path, "PROC_NOT_PDF", f"{p} is not a PDF (no %PDF- header); convert it to PDF or remove it."
        )
    try:
        doc = pymupdf.open(p, filetype="pdf")
    except Exception as exc:
        msg = f"{p} cannot be opened as a PDF ({exc}); the file may be damaged: re-download or repair it."
        raise _fail(path, "PROC_NOT_PDF", msg) from exc
    if doc.needs_pass:
        doc.close()
        msg = f"{p} is encrypted and needs a password; decrypt it (e.g. qpdf --decrypt) and retry."
        raise _fail(path, "PROC_ENCRYPTED", msg)
    if doc.page_count == 0:
        doc.close()
        raise _fail(path, "PROC_EMPTY", f"{p} has no pages; replace it with a complete copy of the document.")
    return doc


def _extract(doc: Any, path: str | Path) -> tuple[list[list[Row]], list[tuple[float, float]], list[str]]:
    """Read every page once; return rows per page, frame sizes and conversion warnings."""
    import pymupdf

    pages: list[list[Row]] = []
    sizes: list[tuple[float, float]] = []
    warnings: list[str] = []
    empty: list[int] = []
    rotated: list[int] = []
    numbers = 0
    for i, page in enumerate(doc, start=1):
        try:
            pt = extract_page(page.get_text("dict", flags=pymupdf.TEXTFLAGS_TEXT), i)
        except Exception as exc:  # one bad page must not lose the document
            warnings.append(f"page {i}: text extraction failed ({type(exc).__name__}: {exc})")
            pages.append([])
            sizes.append((float(page.rect.width), float(page.rect.height)))
            continue
        pages.append(pt.rows)
        sizes.append((pt.width, pt.height))
        numbers += pt.line_numbers
        if not pt.rows:
            empty.append(i)
        if pt.rotated:
            rotated.append(i)
    if not any(pages):
        msg = (
            f"{Path(path)} has no extractable text (scanned or image-only PDF); run OCR on it "
            "(e.g. ocrmypdf) and convert the OCR'd file."
        )
        raise _fail(path, "PROC_NO_TEXT", msg)
    if empty:
        warnings.append(f"pages without extractable text (images only?): {_ranges(empty)}")
    if rotated:
        warnings.append(f"pages read as rotated (landscape) text: {_ranges(rotated)}")
    if numbers:
        warnings.append(f"removed {numbers} draft line numbers")
    return pages, sizes, warnings


def _ranges(pages: list[int]) -> str:
    """Format page numbers compactly, e.g. ``[1, 2, 3, 7]`` -> ``"1-3, 7"``."""
    out: list[str] = []
    start = prev = pages[0]
    for p in [*pages[1:], None]:
        if p is not None and p == prev + 1:
            prev = p
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if p is not None:
            start = prev = p
    return ", ".join(out)


def _layouts(pages: list[list[Row]], sizes: list[tuple[float, float]]) -> dict[int, PageLayout]:
    """Each page's kept lines grouped by pymupdf block, as ``get_text("blocks")`` tuples (no second read)."""
    out: dict[int, PageLayout] = {}
    for n, (rows, (width, height)) in enumerate(zip(pages, sizes, strict=True), start=1):
        groups: dict[int, list[Row]] = {}
        for r in rows:
            groups.setdefault(r.block, []).append(r)
        blocks = [(*rows_box(rs), "\n".join(r.text for r in rs), k, 0) for k, rs in groups.items()]
        out[n] = (blocks, width, height)
    return out


def _reassemble(markdown: str, blocks: list[Block]) -> tuple[str, list[Block]]:
    """Join the blocks' texts with one blank line again (after blocks were cut) and re-offset them."""
    parts: list[str] = []
    out: list[Block] = []
    offset = 0
    for b in blocks:
        text = markdown[b.start : b.end]
        if parts:
            offset += 2
        out.append(Block(b.kind, offset, offset + len(text), b.page, b.level, b.page_end))
        parts.append(text)
        offset += len(text)
    return "\n\n".join(parts), out


def pdf_to_document(
    path: str | Path, *, label: str | None = None, meta: JSONObject | None = None
) -> Document:
    """Convert one PDF file into a :class:`~hepwb.types.Document`.

    Args:
        path: The PDF file.
        label: Short name; defaults to the file stem's part before the first ``_``
            (``P01_hep-ex_0106068.pdf`` -> ``P01``).
        meta: Extra metadata merged under the provenance fields (``source_file``, ``file_hash``,
            ``file_size``, ``pages``, ``processor`` and, when there are any,
            ``conversion_warnings``).

    Returns:
        The document: ``document_id`` derived from the file's SHA-256, CommonMark ``markdown``
        with blocks separated by one blank line, and ``blocks`` whose offsets index it.

    Raises:
        ProcessingError: With ``code`` ``PROC_NOT_FOUND`` (missing file), ``PROC_NOT_PDF`` (not a PDF
            or unreadable), ``PROC_ENCRYPTED`` (password needed), ``PROC_EMPTY`` (zero pages) or
            ``PROC_NO_TEXT`` (no extractable text; OCR needed).
    """
    import pymupdf

    doc = _open(path)
    p = Path(path)
    sha = file_sha256(p)
    with doc:
        n_pages = doc.page_count
        pages, sizes, warnings = _extract(doc, path)
    body = body_font_size(pages)
    pages, _ = drop_furniture(pages, [h for _, h in sizes], body)
    rows = [r for page_rows, (w, _) in zip(pages, sizes, strict=True) for r in order_rows(page_rows, w)]
    layouts = _layouts(pages, sizes)
    regions = {n: figure_regions(layout) for n, layout in layouts.items()}
    rendered = build_blocks(rows, body, regions)
    for rb in rendered:
        rb.text = repair_diacritics(rb.text)
    parts: list[str] = []
    blocks: list[Block] = []
    offset = 0
    for rb in rendered:
        text = rb.text.strip()
        if not text:
            continue
        if parts:
            offset += 2
        blocks.append(Block(rb.kind, offset, offset + len(text), rb.page, rb.level, rb.page_end))  # type: ignore[arg-type]
        parts.append(text)
        offset += len(text)
    info: JSONObject = dict(meta or {})
    info.update(
        source_file=str(path),
        file_hash=sha,
        file_size=p.stat().st_size,
        pages=n_pages,
        processor=f"hepwb-pdf/{__version__} (pymupdf {pymupdf.VersionBind})",
    )
    if warnings:
        info["conversion_warnings"] = warnings
    markdown = "\n\n".join(parts)
    entries = [rb.text for rb in rendered if rb.kind == "reference"]
    recovered, found = recover_bibliography(markdown, blocks)
    if found:
        markdown, blocks = _reassemble(markdown, recovered)
        entries = found
    if entries:
        info["references"] = parse_references(entries)
    blocks, info["front_matter"] = mark_front_matter(markdown, blocks)
    doc = Document(
        document_id=content_uuid("document", sha),
        label=label if label is not None else p.stem.split("_", 1)[0],
        markdown=markdown,
        blocks=tuple(blocks),
        meta=info,
    )
    return annotate(doc, pdf=p, layouts=layouts)
