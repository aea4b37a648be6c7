"""How a chunking strategy cuts one paper: chunk boundaries, overlaps and atomic blocks, interactively.

``chunks_html`` renders a document's markdown with every chunk shaded (alternating colours, labelled
with its index and token count), the text shared by consecutive chunks hatched, and display math,
tables and code outlined so one sees that no chunk cuts them. ``token_histogram`` plots the chunks'
token counts against the chunk size and the embedder's input limit. ``ChunkExplorer`` wraps both in
ipywidgets (paper, strategy, chunk size, overlap) for JupyterLab.

Example:
    >>> from hepwb.chunking import get_chunker
    >>> from hepwb.processing.markdown import markdown_document
    >>> doc = markdown_document("# T\\n\\nSome text.\\n\\n$$\\nx=1\\n$$", "S1")
    >>> chunks = get_chunker("token", chunk_size=64, chunk_overlap=0.0, tokenizer="words").chunk(doc)
    >>> html = chunks_html(doc, chunks)
    >>> 'data-chunk="0"' in html and "hw-atomic hw-math" in html
    True
"""

from __future__ import annotations

import base64
import io
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from hepwb import defaults, limits
from hepwb.chunking import CHUNKERS, get_chunker
from hepwb.deps import extra
from hepwb.exceptions import ConfigError, HepwbError
from hepwb.paths import Layout
from hepwb.pipeline.chunksets import truncation_report
from hepwb.plaintext import escape_html
from hepwb.types import Block, Chunk, Document, JSONObject
from hepwb.viz.document_view import by_label, corpus_papers

__all__ = ["CHUNK_COLOURS", "OVERLAP_STYLE", "ChunkExplorer", "chunks_html", "token_histogram"]

CHUNK_COLOURS = ("#dbeafe", "#dcfce7")  # alternate chunks: blue, green
OVERLAP_STYLE = "repeating-linear-gradient(45deg,#ffd966 0 4px,#fff3bf 4px 8px)"  # hatched yellow
_ATOMIC_OUTLINE = {"math": "#fd7e14", "table": "#198754", "code": "#dc3545"}
_OVERSIZED = "#dc3545"
_EMBEDDER_LIMIT = 256


def _legend() -> str:
    sw = "border:1px solid #999;padding:0 6px;margin-right:4px"
    items = [
        f'<span style="background:{CHUNK_COLOURS[0]};{sw}">chunk (even)</span>',
        f'<span style="background:{CHUNK_COLOURS[1]};{sw}">chunk (odd)</span>',
        f'<span style="background:{OVERLAP_STYLE};{sw}">overlap (in two chunks)</span>',
        f'<span style="color:#999;{sw}">not in any chunk</span>',
        f'<span style="{sw};box-shadow:inset 0 -3px 0 {_OVERSIZED}">oversized chunk</span>',
    ]
    items += [
        f'<span style="outline:2px solid {c};{sw};margin-left:4px">{k} (never cut)</span>'
        for k, c in _ATOMIC_OUTLINE.items()
    ]
    style = "margin:4px 0 8px 0;font-size:12px;line-height:2"
    return f'<div class="hw-legend" style="{style}">{"".join(items)}</div>'


def _label(c: Chunk) -> str:
    text = f"#{c.index} · {c.token_count} tok"
    if c.overlap_tokens:
        text += f" ({c.overlap_tokens} overlap)"
    bg = "#343a40"
    if c.oversized:
        text += " · OVERSIZED"
        bg = _OVERSIZED
    return (
        f'<span class="hw-label" data-chunk="{c.index}" style="font-size:10px;background:{bg};color:#fff;'
        f'border-radius:3px;padding:0 3px;margin:0 2px;font-family:sans-serif">{text}</span>'
    )


def _segment(text: str, covering: list[Chunk]) -> str:
    body = escape_html(text)
    if not covering:
        return f'<span class="hw-gap" style="color:#999">{body}</span>'
    shadow = f";box-shadow:inset 0 -3px 0 {_OVERSIZED}" if any(c.oversized for c in covering) else ""
    idx = " ".join(str(c.index) for c in covering)
    if len(covering) > 1:
        title = "overlap of chunks " + " and ".join(str(c.index) for c in covering)
        return (
            f'<span class="hw-overlap" data-chunks="{idx}" title="{title}" '
            f'style="background:{OVERLAP_STYLE}{shadow}">{body}</span>'
        )
    c = covering[0]
    cls = "hw-chunk hw-oversized" if c.oversized else "hw-chunk"
    return (
        f'<span class="{cls}" data-chunks="{idx}" title="chunk {c.index}" '
        f'style="background:{CHUNK_COLOURS[c.index % 2]}{shadow}">{body}</span>'
    )


def _atomic_blocks(doc: Document, limit: int) -> list[Block]:
    out: list[Block] = []
    for b in sorted((b for b in doc.blocks if b.atomic and b.start < limit), key=lambda b: b.start):
        if not out or b.start >= out[-1].end:  # blocks never nest; skip any malformed overlap
            out.append(b)
    return out


def body_start(doc: Document, chunks: Sequence[Chunk]) -> int:
    """Offset of the first chunk of the body: after the title and the front matter (never chunked).

    Example:
        >>> from hepwb.chunking import get_chunker
        >>> from hepwb.processing.markdown import markdown_document
        >>> doc = markdown_document("# Title\\n\\nFirst paragraph.", "S1")
        >>> chunks = get_chunker("token", chunk_size=64, chunk_overlap=0.0, tokenizer="words").chunk(doc)
        >>> body_start(doc, chunks)  # the title shares the first chunk here
        0
    """
    first_body = next((b.start for b in doc.blocks if b.kind not in ("heading", "front")), 0)
    return min((c.start for c in chunks if c.end > first_body), default=0)


def _front_html(text: str) -> str:
    if not text.strip():
        return ""
    return (
        '<details class="hw-front" style="margin:2px 0 6px 0;font-size:12px;color:#555"><summary>'
        f"title and front matter ({len(text)} characters before the first body chunk; authors and "
        "affiliations are kept out of the chunks) — show</summary>"
        f'<pre style="white-space:pre-wrap;font-size:12px">{escape_html(text)}</pre></details>'
    )


def chunks_html(
    doc: Document, chunks: Sequence[Chunk], *, max_chars: int | None = None, from_body: bool = True
) -> str:
    """HTML of ``doc``'s markdown with chunk boundaries, overlaps and atomic blocks marked.

    Each chunk's text is shaded (alternating colours) and preceded by a label with its index and token
    count; text in two consecutive chunks (the overlap) is hatched; display math, tables and code are
    outlined; oversized chunks (an atomic block larger than the budget) are underlined in red.

    Args:
        doc: A processed document.
        chunks: Chunks of ``doc`` with exact offsets (``doc.markdown[c.start:c.end] == c.text``).
        max_chars: Render only ``max_chars`` characters from where the view starts (default: all).
        from_body: Start at the first body chunk (:func:`body_start`), the title and front matter before
            it collapsed into a *show* line; ``False`` starts at the first character.

    Returns:
        A self-contained HTML fragment (inline styles, a legend).

    Raises:
        ConfigError: ``max_chars`` is not positive.
    """
    if max_chars is not None and max_chars <= 0:
        msg = f"max_chars must be a positive number of characters or None, not {max_chars!r}"
        raise ConfigError(msg)
    text = doc.markdown
    first = body_start(doc, chunks) if from_body else 0
    limit = len(text) if max_chars is None else min(first + max_chars, len(text))
    shown = sorted((c for c in chunks if first <= c.start < limit), key=lambda c: (c.start, c.index))
    blocks = [b for b in _atomic_blocks(doc, limit) if b.start >= first]
    cuts = {first, limit}
    for c in shown:
        cuts.update(p for p in (c.start, c.end) if first <= p <= limit)
    for b in blocks:
        cuts.update(p for p in (b.start, b.end) if first <= p <= limit)
    points = sorted(cuts)
    starts: dict[int, list[Chunk]] = {}
    for c in shown:
        starts.setdefault(c.start, []).append(c)
    block_at = {b.start: b for b in blocks}
    parts: list[str] = []
    open_block: Block | None = None
    for lo, hi in itertools.pairwise(points):
        if open_block is None and lo in block_at:
            open_block = block_at[lo]
            colour = _ATOMIC_OUTLINE.get(open_block.kind, "#666")
            parts.append(
                f'<span class="hw-atomic hw-{open_block.kind}" title="{open_block.kind} block '
                f'[{open_block.start}:{open_block.end}], kept whole" '
                f'style="outline:2px solid {colour};outline-offset:1px">'
            )
        parts.extend(_label(c) for c in starts.get(lo, []))
        covering = [c for c in shown if c.start <= lo and hi <= c.end]
        parts.append(_segment(text[lo:hi], covering))
        if open_block is not None and (hi >= open_block.end or hi == limit):
            parts.append("</span>")
            open_block = None
    more = ""
    if limit < len(text):
        more = f'<div style="color:#666;font-size:12px">… {len(text) - limit} more characters not shown</div>'
    n_over = sum(c.oversized for c in chunks)
    head = (
        f"<h4>{escape_html(doc.label)} · {escape_html(doc.title)} · {len(chunks)} chunks"
        f"{f' ({len(shown)} shown)' if len(shown) < len(chunks) else ''}"
        f"{f' · {n_over} oversized' if n_over else ''}</h4>"
    )
    body = "".join(parts)
    return (
        f'<div class="hw-chunks">{head}{_legend()}{_front_html(text[:first])}'
        '<pre style="white-space:pre-wrap;line-height:1.7;'
        f'font-size:12px;max-height:1100px;overflow:auto">{body}</pre>{more}</div>'
    )


def token_histogram(chunks: Sequence[Chunk], chunk_size: int, limit: int = _EMBEDDER_LIMIT) -> Any:
    """Histogram of the chunks' token counts, with the chunk size and the embedder limit marked.

    Args:
        chunks: Chunks to count.
        chunk_size: The chunker's token budget (dashed vertical line).
        limit: The embedding model's input length; tokens past it are dropped (red vertical line).

    Returns:
        The matplotlib figure (close it with ``plt.close(fig)`` when done).
    """
    import matplotlib.pyplot as plt

    counts = [c.token_count for c in chunks]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    if counts:
        ax.hist(counts, bins=min(40, max(5, len(counts) // 3)), color="#6ea8fe", edgecolor="#0d6efd")
    ax.axvline(chunk_size, color="#198754", linestyle="--", label=f"chunk size {chunk_size}")
    ax.axvline(limit, color=_OVERSIZED, linestyle="-", label=f"embedder limit {limit}")
    ax.set_xlabel("tokens per chunk")
    ax.set_ylabel("chunks")
    ax.set_title(f"{len(counts)} chunks")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


def _summary(chunks: Sequence[Chunk], tokenizer: str) -> str:
    if not chunks:
        return "<p><b>0 chunks</b></p>"
    counts = [c.token_count for c in chunks]
    line = (
        f"<b>{len(chunks)} chunks</b> · mean {sum(counts) / len(counts):.0f} / max {max(counts)} tokens "
        f"({escape_html(tokenizer)})"
    )
    report = truncation_report(list(chunks), tokenizer)
    if report is None:
        line += (
            f" · truncation: n/a (counts are in {escape_html(tokenizer)!s} tokens, "
            "not the embedder's WordPiece)"
        )
    else:
        line += (
            f" · {report['model_max_tokens']}-token embedder truncates "
            f"{report['share_chunks_truncated']:.0%} of chunks, "
            f"drops {report['share_tokens_dropped']:.0%} of tokens"
        )
    line += f" · {sum(c.oversized for c in chunks)} oversized"
    return f'<p class="hw-summary" style="font-size:13px">{line}</p>'


class ChunkExplorer:
    """ipywidgets explorer: choose a paper, a strategy, a chunk size and an overlap; the view re-chunks.

    Controls are attributes (``paper``, ``strategy``, ``chunk_size``, ``chunk_overlap``); setting their
    ``value`` re-chunks and refreshes ``summary``/``view`` (HTML widgets) and ``histogram`` (Output).

    Args:
        documents: Processed documents (e.g. ``hepwb.pipeline.ingest(...)``).
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
            self.summary.value = f'<p class="hw-error" style="color:{_OVERSIZED}">{escape_html(str(exc))}</p>'

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
        self.summary.value = _summary(self.chunks, self.tokenizer) + (
            f'<p style="font-size:12px;color:#555">{escape_html(self.strategy.value)} · chunk size '
            f"{self.chunk_size.value} · overlap {self.chunk_overlap.value:.2f}</p>"
        )

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
