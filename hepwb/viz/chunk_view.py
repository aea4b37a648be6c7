"""How a chunking strategy cuts one paper, as HTML and a histogram (what the chunk explorer shows).

``chunks_html`` renders a document's markdown with every chunk shaded (alternating colours, labelled
with its index and token count), the text shared by consecutive chunks hatched, and display math,
tables and code outlined so one sees that no chunk cuts them. ``token_histogram`` plots the chunks'
token counts against the chunk size and the embedder's input limit; ``summary_html`` is the one-line
summary (counts, truncation by the embedder, oversized chunks).

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

import itertools
from collections.abc import Sequence
from typing import Any

from hepwb import limits
from hepwb.chunking.chunksets import truncation_report
from hepwb.text.plaintext import escape_html
from hepwb.types import Block, Chunk, Document

__all__ = [
    "CHUNK_COLOURS",
    "OVERLAP_STYLE",
    "OVERSIZED_COLOUR",
    "body_start",
    "chunks_html",
    "summary_html",
    "token_histogram",
]

CHUNK_COLOURS = ("#dbeafe", "#dcfce7")  # alternate chunks: blue, green
OVERLAP_STYLE = "repeating-linear-gradient(45deg,#ffd966 0 4px,#fff3bf 4px 8px)"  # hatched yellow
_ATOMIC_OUTLINE = {"math": "#fd7e14", "table": "#198754", "code": "#dc3545"}
OVERSIZED_COLOUR = "#dc3545"
_EMBEDDER_LIMIT = 256


def _legend() -> str:
    sw = "border:1px solid #999;padding:0 6px;margin-right:4px"
    items = [
        f'<span style="background:{CHUNK_COLOURS[0]};{sw}">chunk (even)</span>',
        f'<span style="background:{CHUNK_COLOURS[1]};{sw}">chunk (odd)</span>',
        f'<span style="background:{OVERLAP_STYLE};{sw}">overlap (in two chunks)</span>',
        f'<span style="color:#999;{sw}">not in any chunk</span>',
        f'<span style="{sw};box-shadow:inset 0 -3px 0 {OVERSIZED_COLOUR}">oversized chunk</span>',
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
        bg = OVERSIZED_COLOUR
    return (
        f'<span class="hw-label" data-chunk="{c.index}" style="font-size:10px;background:{bg};color:#fff;'
        f'border-radius:3px;padding:0 3px;margin:0 2px;font-family:sans-serif">{text}</span>'
    )


def _segment(text: str, covering: list[Chunk]) -> str:
    body = escape_html(text)
    if not covering:
        return f'<span class="hw-gap" style="color:#999">{body}</span>'
    shadow = f";box-shadow:inset 0 -3px 0 {OVERSIZED_COLOUR}" if any(c.oversized for c in covering) else ""
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
    if max_chars is not None:
        limits.VIEW_MAX_CHARS.check(max_chars)
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
    ax.axvline(limit, color=OVERSIZED_COLOUR, linestyle="-", label=f"embedder limit {limit}")
    ax.set_xlabel("tokens per chunk")
    ax.set_ylabel("chunks")
    ax.set_title(f"{len(counts)} chunks")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


def summary_html(chunks: Sequence[Chunk], tokenizer: str) -> str:
    """One line: how many chunks, their mean and largest token counts, truncation, oversized chunks."""
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
