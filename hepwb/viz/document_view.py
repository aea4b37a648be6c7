"""One paper's markdown beside the rendered PDF page, blocks coloured by kind.

``page_view_html`` builds a self-contained HTML fragment (PDF page as an inline PNG on the left, with
the regions of its figures and tables outlined; the page's markdown blocks on the right, each with
the figures, tables, equations, sections and references it links to); ``figures_html`` shows the
page's figures: crop, label, caption and where the text mentions them. ``DocumentBrowser`` wraps
both in ipywidgets (paper dropdown, page slider) for JupyterLab.

Example:
    >>> from hepwb.processing.markdown import markdown_document
    >>> doc = markdown_document("# Title\\n\\n$$\\nx=1\\n$$", "S1")
    >>> html = page_view_html(doc, page=1)
    >>> "heading" in html and "math" in html
    True
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import TYPE_CHECKING

from hepwb import defaults
from hepwb.corpus import ingest, labelled_files
from hepwb.exceptions import ConfigError
from hepwb.paths import Layout
from hepwb.processing.figures import crop_box
from hepwb.processing.links import describe_target, targets_of
from hepwb.runtime.deps import extra
from hepwb.text.plaintext import escape_html
from hepwb.types import Block, Document, JSONObject
from hepwb.viz.evidence_marker import EvidenceMarker, page_text_widget

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "KIND_COLOURS",
    "DocumentBrowser",
    "by_label",
    "corpus_papers",
    "figures_html",
    "page_image_png",
    "page_view_html",
]

KIND_COLOURS = {
    "heading": "#cfe2ff",
    "text": "#ffffff",
    "list": "#fff3cd",
    "table": "#d1e7dd",
    "math": "#ffe5d0",
    "code": "#f8d7da",
    "caption": "#e2d9f3",
    "reference": "#e9ecef",
    "front": "#f1f3f5",
    "figure_text": "#f8f9fa",
}


def by_label(
    documents: Sequence[Document], label: str | None, widget: str
) -> tuple[dict[str, Document], str]:
    """Documents keyed by label and the label to show first, with errors that say the fix."""
    if not documents:
        msg = f"{widget} needs at least one document; run hepwb ingest first"
        raise ConfigError(msg)
    docs = {d.label: d for d in documents}
    first = label or next(iter(docs))
    if first not in docs:
        msg = f"no document labelled {first!r}; choose one of {sorted(docs)}"
        raise ConfigError(msg)
    return docs, first


def corpus_papers(
    corpus: str | Path | None,
    paper: str | None = None,
    *,
    layout: Layout | None = None,
    max_docs: int | None = None,
    prefer_latex: bool = True,
) -> tuple[Document, list[str], Callable[[str], Document]]:
    """For a widget listing every paper of ``corpus``: the paper shown first, all labels, a loader.

    The loader converts a paper, or reads it from the cache, when a user first picks it, so a corpus of
    thousands of papers costs nothing until one is opened.
    """
    labels = [label for _, _, label in labelled_files(corpus, max_docs=max_docs)]
    if not labels:
        msg = f"no PDF or markdown file in the corpus {corpus!r}: point corpus at a folder of papers"
        raise ConfigError(msg)
    first = paper or labels[0]
    if first not in labels:
        msg = f"no paper labelled {first!r} in the corpus; choose one of {labels}"
        raise ConfigError(msg)

    def load(label: str) -> Document:
        (doc,) = ingest(corpus, only=[label], layout=layout, prefer_latex=prefer_latex, progress=False)
        return doc

    return load(first), labels, load


def page_image_png(
    pdf: str | Path,
    page: int,
    zoom: float = defaults.DISPLAY_PAGE_ZOOM,
    boxes: Sequence[Sequence[float]] = (),
    clip: Sequence[float] | None = None,
) -> bytes:
    """Render 1-based ``page`` of ``pdf`` as PNG bytes, ``boxes`` outlined in red, cut to ``clip``."""
    import pymupdf

    with pymupdf.open(str(pdf)) as d:
        if not 1 <= page <= d.page_count:
            msg = f"page {page} is outside 1..{d.page_count} of {pdf}"
            raise ConfigError(msg)
        p = d[page - 1]
        for box in boxes:  # drawn on the in-memory copy only; the file is not written
            p.draw_rect(pymupdf.Rect(*box), color=(0.85, 0.1, 0.1), width=1.2)
        area = pymupdf.Rect(*clip) & p.rect if clip is not None else None
        pix = p.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=area)
        return bytes(pix.tobytes("png"))


def _pdf(doc: Document, pdf: str | Path | None) -> str | None:
    src = pdf or doc.meta.get("pdf_file") or doc.meta.get("source_file")
    return str(src) if src and str(src).lower().endswith(".pdf") and Path(str(src)).is_file() else None


def _links_html(doc: Document, start: int, end: int) -> str:
    found = targets_of(doc, start, end)
    if not found:
        return ""
    items = "; ".join(f"{escape_html(t)} → {escape_html(describe_target(doc, g, 90))}" for t, g in found)
    return f'<div style="color:#0a58ca;font-size:10px;margin-top:2px">links: {items}</div>'


def figures_html(
    doc: Document, page: int, *, pdf: str | Path | None = None, zoom: float = defaults.DISPLAY_FIGURE_ZOOM
) -> str:
    """The figures and tables on ``page``: crop, label, caption and the places that mention them.

    Example:
        >>> from hepwb.processing.markdown import markdown_document
        >>> doc = markdown_document("As Fig. 1 shows.\\n\\nFigure 1: A plot of the asymmetry.", "S1")
        >>> "Figure 1" in figures_html(doc, 1) and "mentioned: p. 1 (Fig. 1)" in figures_html(doc, 1)
        True
    """
    src = _pdf(doc, pdf)
    parts = []
    for f in doc.meta.get("figures", []):
        if int(f.get("bbox_page") or f["page"]) != page and int(f["page"]) != page:
            continue
        image = ""
        if src and f.get("bbox"):
            png = page_image_png(src, int(f.get("bbox_page") or f["page"]), zoom, clip=crop_box(f))
            data = base64.b64encode(png).decode("ascii")
            alt = escape_html(f["label"])
            image = f'<img alt="{alt}" src="data:image/png;base64,{data}" style="max-width:100%">'
        caption = escape_html(doc.markdown[f["caption_start"] : f["caption_end"]])
        where = [
            f"p. {m.get('page')} ({escape_html(doc.markdown[m['start'] : m['end']])})"
            for m in doc.meta.get("xrefs", [])
            if m["target"] == f["id"]
        ]
        parts.append(
            f'<div style="border:1px solid #bbb;margin:6px 0;padding:6px"><b>{escape_html(f["label"])}</b> '
            f"page {f['page']}{image}<div style='font-size:12px'>{caption}</div>"
            f"<div style='color:#555;font-size:11px'>mentioned: {', '.join(where) or 'nowhere'}</div></div>"
        )
    return "".join(parts) or "<em>no numbered figure or table on this page</em>"


def _legend() -> str:
    items = "".join(
        f'<span style="background:{c};border:1px solid #999;padding:0 6px;margin-right:4px">{k}</span>'
        for k, c in KIND_COLOURS.items()
    )
    return f'<div style="margin:4px 0 8px 0;font-size:12px">{items}</div>'


def _block_html(doc: Document, b: Block) -> str:
    text = escape_html(doc.block_text(b))
    tag = f"{b.kind}{' h' + str(b.level) if b.level else ''} · [{b.start}:{b.end}]"
    return (
        f'<div style="background:{KIND_COLOURS.get(b.kind, "#fff")};border:1px solid #bbb;margin:3px 0;'
        f'padding:4px;font-size:12px"><div style="color:#555;font-size:10px">{tag}</div>'
        f'<pre style="white-space:pre-wrap;word-break:normal;margin:0;font-family:inherit">{text}</pre>'
        f"{_links_html(doc, b.start, b.end)}</div>"
    )


def page_view_html(
    doc: Document, page: int = 1, *, pdf: str | Path | None = None, zoom: float = defaults.DISPLAY_PAGE_ZOOM
) -> str:
    """HTML with the blocks of ``page`` (coloured by kind, with offsets and links) beside the rendered page.

    Args:
        doc: A processed document.
        page: 1-based page number.
        pdf: The source PDF (default: ``doc.meta["source_file"]`` when it is a PDF); no image without one.
        zoom: Rendering scale of the page image.
    """
    blocks = [b for b in doc.blocks if b.page <= page <= max(b.page, b.page_end)]
    rows: list[str] = []
    front: list[str] = []
    for b in [*blocks, None]:
        if b is not None and b.kind == "front":
            front.append(_block_html(doc, b))
            continue
        if front:  # author lists and affiliations: collapsed, one click away
            rows.append(
                '<details class="hw-front" style="margin:3px 0;font-size:12px"><summary>front matter: '
                f"{len(front)} block(s) of authors, affiliations and dates (kept out of the chunks) — show"
                f"</summary>{''.join(front)}</details>"
            )
            front = []
        if b is not None:
            rows.append(_block_html(doc, b))
    src = _pdf(doc, pdf)
    image = ""
    if src:
        boxes = [
            f["bbox"] for f in doc.meta.get("figures", []) if f.get("bbox") and f.get("bbox_page") == page
        ]
        png = base64.b64encode(page_image_png(src, page, zoom, boxes)).decode("ascii")
        alt = f"page {page} of {escape_html(doc.label)}"
        image = f'<img alt="{alt}" src="data:image/png;base64,{png}" style="max-width:100%">'
    body = "".join(rows) or "<em>no block starts on this page</em>"
    return (
        f"<h4>{escape_html(doc.label)} · {escape_html(doc.title)} · page {page}</h4>{_legend()}"
        '<div style="display:flex;gap:12px;align-items:flex-start">'
        f'<div style="flex:1;min-width:0">{image}</div>'
        f'<div style="flex:1;min-width:0;max-height:1100px;overflow:auto">{body}</div></div>'
    )


class DocumentBrowser:
    """ipywidgets browser: choose a paper and a page; the view updates; mark evidence below it.

    Text selected in the page's blocks can be added, with a question, to a question file
    (:class:`~hepwb.viz.evidence_marker.EvidenceMarker`, the row below the page).

    Args:
        documents: Processed documents (e.g. ``hepwb.experiment.ingest(...)``).
        label: Paper shown first (default: the first).
        page: Page shown first.
        labels: Every paper the list offers (default: those of ``documents``); with ``loader`` the others
            are loaded when chosen (``ChunkExplorer.from_corpus`` builds both for a corpus).
        loader: Returns the document of a label not in ``documents``.
        question_file: Where marked evidence goes (default: ``data/questions/my-questions.jsonl``
            under ``layout``'s root).
        layout: Project layout (default: the current project's).
    """

    def __init__(
        self,
        documents: list[Document],
        label: str | None = None,
        page: int = 1,
        *,
        labels: Sequence[str] | None = None,
        loader: Callable[[str], Document] | None = None,
        question_file: str | Path | None = None,
        layout: Layout | None = None,
    ) -> None:
        with extra("lab", "the explorers"):
            import ipywidgets as w

        self.documents, first = by_label(documents, label, "DocumentBrowser")
        self.loader = loader
        options = list(labels) if labels is not None and loader is not None else sorted(self.documents)
        self.paper = w.Dropdown(options=options, value=first, description="paper")
        self.page = w.IntSlider(
            value=page, min=1, max=self._pages(first), description="page", layout=w.Layout(width="50%")
        )
        self.view = page_text_widget()
        self.figures = w.HTML()
        self.marker = EvidenceMarker(self._shown, question_file, layout=layout)
        self.marker.watch(self.view)
        self.paper.observe(self._on_paper, names="value")
        self.page.observe(lambda _change: self.refresh(), names="value")
        self.widget = w.VBox([w.HBox([self.paper, self.page]), self.view, self.marker.widget, self.figures])
        self.refresh()

    @classmethod
    def from_corpus(
        cls,
        corpus: str | Path | None = None,
        *,
        paper: str | None = None,
        page: int = 1,
        layout: Layout | None = None,
        max_docs: int | None = None,
        question_file: str | Path | None = None,
    ) -> DocumentBrowser:
        """A browser listing every paper of ``corpus`` (each converted or read from the cache when chosen)."""
        doc, labels, load = corpus_papers(corpus, paper, layout=layout, max_docs=max_docs)
        return cls(
            [doc], doc.label, page, labels=labels, loader=load, question_file=question_file, layout=layout
        )

    def _doc(self, label: str) -> Document:
        if label not in self.documents and self.loader is not None:
            self.documents[label] = self.loader(label)
        return self.documents[label]

    def _pages(self, label: str) -> int:
        doc = self._doc(label)
        return int(doc.meta.get("pages") or max((b.page_end or b.page for b in doc.blocks), default=1))

    def _shown(self) -> tuple[Document, int | None]:
        """The document and page shown (no page for a document without pages: markdown)."""
        doc = self._doc(self.paper.value)
        return doc, (min(self.page.value, self._pages(doc.label)) if doc.meta.get("pages") else None)

    def _on_paper(self, change: JSONObject) -> None:
        self.page.max = self._pages(change["new"])
        self.page.value = min(self.page.value, self.page.max)
        self.refresh()

    def refresh(self) -> None:
        """Re-render the current paper and page."""
        doc = self._doc(self.paper.value)
        page = min(self.page.value, self._pages(self.paper.value))
        self.view.value = page_view_html(doc, page)
        self.marker.clear()  # a passage selected on another page is not on this one
        self.figures.value = "<h4>Figures and tables on this page</h4>" + figures_html(doc, page)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
