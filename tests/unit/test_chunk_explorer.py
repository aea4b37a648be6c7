"""The chunk explorer: HTML marks of chunks, overlaps and atomic blocks; widget updates; histogram."""

from __future__ import annotations

import html
import itertools
import re

import matplotlib.pyplot as plt
import pytest

from hepwb import limits
from hepwb.chunking import CHUNKERS, get_chunker
from hepwb.exceptions import ConfigError
from hepwb.processing.markdown import markdown_document
from hepwb.types import Chunk
from hepwb.viz.chunk_explorer import ChunkExplorer
from hepwb.viz.chunk_view import CHUNK_COLOURS, chunks_html, token_histogram
from tests.helpers import SAMPLE_MD

PROSE = " ".join(f"Sentence {i} about the asymmetry <A> & GPDs." for i in range(40))
MD = f"{SAMPLE_MD}\n## 3 Discussion\n\n{PROSE}\n\n$$\nE = mc^2\n$$\n\n{PROSE}\n"


def _doc(label="S1", text=MD):
    return markdown_document(text, label)


def _chunks(doc, strategy="hepilot", size=64, overlap=0.2):
    return get_chunker(strategy, chunk_size=size, chunk_overlap=overlap, tokenizer="words").chunk(doc)


def _plain(fragment: str) -> str:
    """The document text inside the view: labels removed, tags stripped, entities unescaped."""
    body = re.search(r"<pre[^>]*>(.*)</pre>", fragment, re.S).group(1)
    body = re.sub(r'<span class="hw-label"[^>]*>[^<]*</span>', "", body)
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def test_html_labels_every_chunk_with_index_and_tokens():
    doc = _doc()
    chunks = _chunks(doc)
    out = chunks_html(doc, chunks)
    assert len(chunks) > 3
    for c in chunks:
        assert f'<span class="hw-label" data-chunk="{c.index}"' in out
        assert f"#{c.index} · {c.token_count} tok" in out
    assert CHUNK_COLOURS[0] in out and CHUNK_COLOURS[1] in out
    assert "hw-legend" in out and "overlap (in two chunks)" in out
    assert _plain(out) == doc.markdown  # the whole text, once, in order


def test_html_escapes_text():
    doc = _doc()
    out = chunks_html(doc, _chunks(doc))
    assert "&lt;A&gt; &amp; GPDs" in out and "<A>" not in out
    assert "-t &lt; 0.7" in out


def test_html_marks_overlap_regions():
    doc = _doc()
    chunks = _chunks(doc, overlap=0.2)
    pairs = [(a, b) for a, b in itertools.pairwise(chunks) if b.start < a.end]
    assert pairs, "consecutive chunks share text with overlap 0.2"
    out = chunks_html(doc, chunks)
    for a, b in pairs:
        assert f'data-chunks="{a.index} {b.index}"' in out
        assert f"overlap of chunks {a.index} and {b.index}" in out
    spans = re.findall(r'<span class="hw-overlap"[^>]*>([^<]*)</span>', out)
    assert html.unescape("".join(spans)) == "".join(doc.markdown[b.start : a.end] for a, b in pairs)
    assert "hw-overlap" not in chunks_html(doc, _chunks(doc, strategy="section", overlap=0.0))


def test_html_outlines_atomic_blocks_whole():
    doc = _doc()
    out = chunks_html(doc, _chunks(doc, size=64))
    atomic = [b for b in doc.blocks if b.atomic]
    assert {b.kind for b in atomic} == {"math", "table", "code"}
    for b in atomic:
        m = re.search(
            rf'<span class="hw-atomic hw-{b.kind}" title="{b.kind} block \[{b.start}:{b.end}\]', out
        )
        assert m, b
    math = re.search(r'<span class="hw-atomic hw-math"[^>]*>(.*?)</span></span>', out, re.S).group(1)
    assert "A_{LU}(\\phi)" in html.unescape(re.sub(r"<[^>]+>", "", math))


def test_html_marks_oversized_chunks():
    doc = _doc()
    chunks = [
        Chunk("a", doc.document_id, 0, 0, 40, doc.markdown[:40], 9),
        Chunk("b", doc.document_id, 1, 40, 90, doc.markdown[40:90], 300, oversized=True),
    ]
    out = chunks_html(doc, chunks)
    assert "#1 · 300 tok · OVERSIZED" in out and "hw-oversized" in out
    assert "1 oversized" in out
    assert 'class="hw-gap"' in out  # text after offset 90 is in no chunk


def test_html_max_chars_truncates():
    doc = _doc()
    chunks = _chunks(doc)
    out = chunks_html(doc, chunks, max_chars=300)
    assert _plain(out) == doc.markdown[:300]
    assert f"{len(doc.markdown) - 300} more characters not shown" in out
    assert f"({sum(c.start < 300 for c in chunks)} shown)" in out
    with pytest.raises(ConfigError, match="max_chars"):
        chunks_html(doc, chunks, max_chars=0)


def test_histogram_has_chunk_size_and_limit_lines():
    chunks = _chunks(_doc())
    fig = token_histogram(chunks, 64)
    try:
        (ax,) = fig.axes
        xs = sorted(line.get_xdata()[0] for line in ax.get_lines())
        assert xs == [64, 256]
        assert sum(p.get_height() for p in ax.patches) == len(chunks)
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == ["chunk size 64", "embedder limit 256"]
    finally:
        plt.close(fig)
    fig = token_histogram([], 128, limit=512)
    try:
        assert sorted(line.get_xdata()[0] for line in fig.axes[0].get_lines()) == [128, 512]
    finally:
        plt.close(fig)


def test_explorer_controls_rechunk_and_refresh():
    a, b = _doc("A1"), _doc("B2", "# Beta\n\nSecond paper.\n\n| x | y |\n|---|---|\n| 1 | 2 |\n")
    ex = ChunkExplorer([a, b], strategy="hepilot", chunk_size=64, chunk_overlap=0.1, tokenizer="words")
    assert ex.strategy.options == tuple(CHUNKERS.names())
    assert f"<b>{len(ex.chunks)} chunks</b>" in ex.summary.value and "hepilot" in ex.summary.value
    assert ex.histogram.outputs[0]["data"]["image/png"]
    first_view, first_png = ex.view.value, ex.histogram.outputs[0]["data"]["image/png"]

    ex.chunk_size.value = 512
    assert len(ex.chunks) < 5 and "chunk size 512" in ex.summary.value
    assert f"<b>{len(ex.chunks)} chunks</b>" in ex.summary.value
    assert ex.view.value != first_view and ex.histogram.outputs[0]["data"]["image/png"] != first_png

    ex.chunk_size.value = 64
    ex.chunk_overlap.value = 0.0
    assert "overlap 0.00" in ex.summary.value and "hw-overlap" not in ex.view.value
    ex.chunk_overlap.value = 0.3
    assert "hw-overlap" in ex.view.value

    ex.strategy.value = "token"
    assert "token · chunk size 64" in ex.summary.value
    assert ex.chunks == _chunks(a, "token", 64, 0.3)

    ex.paper.value = "B2"
    assert "Beta" in ex.view.value and "hw-atomic hw-table" in ex.view.value
    assert "<b>1 chunks</b>" in ex.summary.value


def test_explorer_summary_reports_truncation_and_oversized():
    ex = ChunkExplorer([_doc()], chunk_size=64, tokenizer="words")
    assert "truncation: n/a" in ex.summary.value and " oversized" in ex.summary.value
    ex = ChunkExplorer([_doc()], strategy="section", chunk_size=2048, chunk_overlap=0.0, tokenizer="words")
    doc = _doc()
    assert ex.chunks == _chunks(doc, "section", 2048, 0.0)
    assert f"max {max(c.token_count for c in ex.chunks)} tokens" in ex.summary.value


def test_explorer_with_embedder_tokenizer_reports_truncated_share():
    ex = ChunkExplorer([_doc()], strategy="section", chunk_size=2048, chunk_overlap=0.0)
    assert ex.chunks and max(c.token_count for c in ex.chunks) > 256
    assert "256-token embedder truncates" in ex.summary.value
    assert re.search(r"truncates \d+% of chunks, drops \d+% of tokens", ex.summary.value)


def test_explorer_displays_its_widget(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    ex = ChunkExplorer([_doc()], tokenizer="words")
    ex._ipython_display_()
    assert shown == [ex.widget]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"label": "ZZ"}, "choose one of"),
        ({"strategy": "nope"}, "choose one of"),
        ({"chunk_size": 4}, "chunk_size is a whole number of tokens from 8 to 32768"),
        ({"chunk_size": 40_000}, "chunk_size is a whole number of tokens from 8 to 32768"),
        ({"chunk_overlap": 1.0}, "fraction"),
        ({"chunk_overlap": -0.1}, "fraction"),
    ],
)
def test_explorer_rejects_bad_values(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        ChunkExplorer([_doc()], tokenizer="words", **kwargs)


def test_explorer_sliders_span_the_bounds_usual_part_widened_to_a_value_given_outside_it():
    ex = ChunkExplorer([_doc()], tokenizer="words")
    low, high, step = limits.CHUNK_SIZE.slider
    assert (ex.chunk_size.min, ex.chunk_size.max, ex.chunk_size.step) == (low, high, step)
    assert (ex.chunk_overlap.min, ex.chunk_overlap.max) == limits.CHUNK_OVERLAP.slider[:2]
    wide = ChunkExplorer([_doc()], strategy="section", chunk_size=4096, chunk_overlap=0.75, tokenizer="words")
    assert (wide.chunk_size.value, wide.chunk_size.max) == (4096, 4096)
    assert (wide.chunk_overlap.value, wide.chunk_overlap.max) == (0.75, 0.75)


def test_explorer_needs_documents():
    with pytest.raises(ConfigError, match="run hepwb ingest"):
        ChunkExplorer([], tokenizer="words")


def test_explorer_shows_a_failing_control_change_instead_of_raising(monkeypatch):
    import hepwb.viz.chunk_explorer

    ex = ChunkExplorer([_doc()], tokenizer="words")

    def broken(*_args, **_kwargs):
        raise ConfigError("bad parameters for chunker 'x'")

    monkeypatch.setattr(hepwb.viz.chunk_explorer, "get_chunker", broken)
    ex.chunk_size.value = 96
    assert 'class="hw-error"' in ex.summary.value and "bad parameters" in ex.summary.value
