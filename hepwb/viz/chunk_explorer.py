"""How a chunking strategy cuts one paper: chunk boundaries, overlaps and atomic blocks, interactively.

``ChunkExplorer`` puts the views of :mod:`hepwb.viz.chunk_view` (the paper with every chunk shaded,
overlaps hatched and atomic blocks outlined; a histogram of token counts) behind ipywidgets (paper,
strategy, chunk size, overlap) for JupyterLab.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Sequence
from typing import Any

from hepwb import defaults, limits
from hepwb.chunking import CHUNKERS, get_chunker
from hepwb.exceptions import HepwbError
from hepwb.paths import Layout
from hepwb.runtime.deps import extra
from hepwb.text.plaintext import escape_html
from hepwb.types import Chunk, Document, JSONObject
from hepwb.viz.chunk_view import OVERSIZED_COLOUR, chunks_html, summary_html, token_histogram
from hepwb.viz.document_view import by_label, corpus_papers

__all__ = ["ChunkExplorer"]


class ChunkExplorer:
    """ipywidgets explorer: choose a paper, a strategy, a chunk size and an overlap; the view re-chunks.

    Controls are attributes (``paper``, ``strategy``, ``chunk_size``, ``chunk_overlap``); setting their
    ``value`` re-chunks and refreshes ``summary``/``view`` (HTML widgets) and ``histogram`` (Output).

    Args:
        documents: Processed documents (e.g. ``hepwb.experiment.ingest(...)``).
        label: Paper shown first (default: the first).
        strategy: Chunker name (see ``hepwb.chunking.CHUNKERS.names()``).
        chunk_size: Token budget per chunk (:data:`hepwb.limits.CHUNK_SIZE`; the slider spans its usual part).
        chunk_overlap: Overlap between consecutive chunks as a fraction of ``chunk_size``
            (:data:`hepwb.limits.CHUNK_OVERLAP`).
        tokenizer: Token counter (``all-MiniLM-L6-v2``, ``cl100k`` or ``words``).
        max_chars: Characters of the paper rendered in the view (None: all), from its first body chunk.
        labels: Every paper the list offers (default: those of ``documents``); with ``loader``, the
            others are loaded when chosen (:meth:`from_corpus` does this for a whole corpus).
        loader: Returns the document of a label not in ``documents``.

    Raises:
        ConfigError: No documents, an unknown paper or strategy, or a value out of range.
    """

    def __init__(
        self,
        documents: Sequence[Document],
        *,
        label: str | None = None,
        strategy: str = defaults.CHUNKER,
        chunk_size: int = defaults.CHUNK_SIZE,
        chunk_overlap: float = defaults.CHUNK_OVERLAP,
        tokenizer: str = defaults.EMBEDDING_MODEL,
        max_chars: int | None = defaults.EXPLORER_MAX_CHARS,
        labels: Sequence[str] | None = None,
        loader: Callable[[str], Document] | None = None,
    ) -> None:
        with extra("lab", "the explorers"):
            import ipywidgets as w

        self.documents, first = by_label(documents, label, "ChunkExplorer")
        self.loader = loader
        options = list(labels) if labels is not None and loader is not None else sorted(self.documents)
        # an unknown strategy or a value out of its bound: the chunker's one message, before any widget
        get_chunker(strategy, chunk_size=chunk_size, chunk_overlap=chunk_overlap, tokenizer=tokenizer)
        self.tokenizer = tokenizer
        self.max_chars = max_chars
        self.chunks: list[Chunk] = []
        self._cache: dict[tuple[str, str, int, float], list[Chunk]] = {}
        wide = {"description_width": "initial"}
        self.paper = w.Dropdown(options=options, value=first, description="paper", style=wide)
        self.strategy = w.Dropdown(
            options=CHUNKERS.names(), value=strategy, description="strategy", style=wide
        )
        # the sliders share the notebook's width and span the bounds' usual parts (64..2048 tokens in
        # steps of 32 need room to hit a value), widened to a value given outside them
        size_min, size_max, size_step = limits.CHUNK_SIZE.slider_range(chunk_size)
        self.chunk_size = w.IntSlider(
            value=chunk_size,
            min=size_min,
            max=size_max,
            step=size_step,
            description="chunk size",
            style=wide,
            layout=w.Layout(width="62%"),
        )
        overlap_min, overlap_max, overlap_step = limits.CHUNK_OVERLAP.slider_range(chunk_overlap)
        self.chunk_overlap = w.FloatSlider(
            value=chunk_overlap,
            min=overlap_min,
            max=overlap_max,
            step=overlap_step,
            description="overlap",
            style=wide,
            layout=w.Layout(width="36%"),
        )
        self.summary = w.HTML()
        self.view = w.HTML()
        self.histogram = w.Output()
        for control in (self.paper, self.strategy, self.chunk_size, self.chunk_overlap):
            control.observe(self._on_change, names="value")
        self.widget = w.VBox(
            [
                w.HBox([self.paper, self.strategy]),
                w.HBox([self.chunk_size, self.chunk_overlap], layout=w.Layout(width="100%")),
                self.summary,
                self.histogram,
                self.view,
            ]
        )
        self.refresh()

    @classmethod
    def from_corpus(
        cls,
        corpus: str | None = None,
        *,
        paper: str | None = None,
        layout: Layout | None = None,
        max_docs: int | None = None,
        prefer_latex: bool = True,
        **options: Any,
    ) -> ChunkExplorer:
        """An explorer listing every paper of ``corpus`` (the first ``max_docs``).

        Each paper is converted, or read from the cache, when first chosen.

        ``options`` are the constructor's (``strategy``, ``chunk_size``, ``chunk_overlap`` …).
        """
        doc, labels, load = corpus_papers(
            corpus, paper, layout=layout, max_docs=max_docs, prefer_latex=prefer_latex
        )
        return cls([doc], label=doc.label, labels=labels, loader=load, **options)

    def _on_change(self, _change: JSONObject) -> None:
        try:
            self.refresh()
        except HepwbError as exc:  # a control change must not kill the widget: show why instead
            self.summary.value = (
                f'<p class="hw-error" style="color:{OVERSIZED_COLOUR}">{escape_html(str(exc))}</p>'
            )

    def _chunk(self) -> list[Chunk]:
        key = (
            self.paper.value,
            self.strategy.value,
            int(self.chunk_size.value),
            float(self.chunk_overlap.value),
        )
        if key not in self._cache:
            chunker = get_chunker(key[1], chunk_size=key[2], chunk_overlap=key[3], tokenizer=self.tokenizer)
            self._cache[key] = chunker.chunk(self.documents[key[0]])
        return self._cache[key]

    def refresh(self) -> None:
        """Re-chunk the current paper with the current controls and redraw summary, view and histogram."""
        import matplotlib.pyplot as plt

        if self.paper.value not in self.documents and self.loader is not None:
            self.documents[self.paper.value] = self.loader(self.paper.value)
        doc = self.documents[self.paper.value]
        self.chunks = self._chunk()
        # histogram, view, then summary: the browser receives the updates in this order, so a summary
        # showing the new count means the whole explorer has been redrawn
        fig = token_histogram(self.chunks, int(self.chunk_size.value))
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90)
        plt.close(fig)
        png = base64.b64encode(buf.getvalue()).decode("ascii")
        self.histogram.outputs = (
            {
                "output_type": "display_data",
                "data": {"image/png": png, "text/plain": f"<token histogram of {len(self.chunks)} chunks>"},
                "metadata": {},
            },
        )
        self.view.value = chunks_html(doc, self.chunks, max_chars=self.max_chars)
        self.summary.value = summary_html(self.chunks, self.tokenizer) + (
            f'<p style="font-size:12px;color:#555">{escape_html(self.strategy.value)} · chunk size '
            f"{self.chunk_size.value} · overlap {self.chunk_overlap.value:.2f}</p>"
        )

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
