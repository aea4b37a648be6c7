"""What notebooks show a physicist: missed questions with their evidence, explorers over a whole corpus."""

from __future__ import annotations

import json

import pytest

from hepwb.experiment import ExperimentConfig, run_experiment
from hepwb.paths import Layout
from hepwb.processing.markdown import markdown_document
from hepwb.report.misses import missed, misses_html
from hepwb.viz.chunk_explorer import ChunkExplorer
from hepwb.viz.chunk_view import chunks_html
from hepwb.viz.document_view import DocumentBrowser, page_view_html
from tests.helpers import tiny_corpus

pytest.importorskip("ipywidgets")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return tiny_corpus(tmp_path_factory.mktemp("views"))


def test_a_missed_question_shows_the_passage_it_needed_and_the_top_hit(corpus, tmp_path):
    docs, questions = corpus
    # worded with A01's words, answered in B02 with none of them: BM25's top 5 are all elsewhere
    trap = {"qid": "q9", "question": "What does the HERMES beam-spin asymmetry measurement eliminate?",
            "answer": "-", "kind": "method",
            "evidence": [{"doc": "B02", "quote": "an area-based subtraction removes it"}]}  # fmt: skip
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(questions.read_text() + json.dumps(trap) + "\n")
    layout = Layout(tmp_path)
    cfg = ExperimentConfig.from_params(corpus=str(docs), questions=str(qfile), chunk_size=16,
                                       chunk_overlap=0.0, retriever="bm25", k=5)  # fmt: skip
    result = run_experiment(cfg, layout=layout, progress=False)
    misses = missed(cfg, result, layout, n=5)
    by_qid = {m.qid: m for m in misses}
    assert "q9" in by_qid and len(misses) == int((result.per_question["hit_rate@5"] == 0).sum())
    m = by_qid["q9"]
    assert (m.paper, " ".join(m.quote.split()), m.section, m.kind) == (
        "B02",
        "an area-based subtraction removes it",
        "Pile-up",
        "method",
    )
    assert m.top is not None and m.top.label == "A01" and m.first_relevant_rank is None
    html = misses_html([m])
    assert "What does the HERMES beam-spin asymmetry measurement eliminate?" in html
    assert "<b>Expected</b> — B02, p. 1, § Pile-up" in html and "<mark>" in html and "A01" in html
    assert misses_html([]) == "<p>No question was missed.</p>"


def test_the_explorer_lists_every_paper_and_loads_one_when_picked(corpus, tmp_path):
    docs, _ = corpus
    explorer = ChunkExplorer.from_corpus(str(docs), paper="B02", layout=Layout(tmp_path), chunk_size=64,
                                         chunk_overlap=0.0, tokenizer="words")  # fmt: skip
    assert list(explorer.paper.options) == ["A01", "B02", "C03"] and set(explorer.documents) == {"B02"}
    assert "Jet energy scale" in explorer.view.value
    explorer.paper.value = "C03"
    assert set(explorer.documents) == {"B02", "C03"} and "Reactor neutrino" in explorer.view.value
    browser = DocumentBrowser.from_corpus(str(docs), paper="A01", layout=Layout(tmp_path))
    assert list(browser.paper.options) == ["A01", "B02", "C03"] and set(browser.documents) == {"A01"}
    browser.paper.value = "C03"
    assert "C03" in browser.view.value


FRONT = """# A measurement of something

A. Airapetian, N. Akopov, Z. Akopov, M. Amarian, A. Andrus

1 Department of Physics, University of Somewhere, 12345 Town, Country

## 1 Introduction

The first body paragraph says what was measured and why it matters for the field.
"""


def test_views_open_on_the_body_with_the_front_matter_collapsed():
    doc = markdown_document(FRONT, "F1")
    from hepwb.chunking import get_chunker

    chunks = get_chunker("hepilot", chunk_size=64, chunk_overlap=0.0, tokenizer="words").chunk(doc)
    assert [b.kind for b in doc.blocks] == ["heading", "front", "front", "heading", "text"]
    view = chunks_html(doc, chunks)
    pre = view.split('<pre style="white-space:pre-wrap;line-height:1.7;', 1)[1]
    assert "University of Somewhere" not in pre and '<details class="hw-front"' in view
    assert "University of Somewhere" in view.split("</details>")[0]  # one click away
    assert "The first body paragraph" in pre
    page = page_view_html(doc, 1)
    collapsed = page.split('<details class="hw-front"', 1)[1].split("</details>", 1)[0]
    assert "University of Somewhere" in collapsed and "Airapetian" in collapsed
