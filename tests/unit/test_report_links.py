"""The report's links land on definitions in the docs, its sources are explained, its papers have titles."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import duckdb

from hepwb.catalog import Catalog
from hepwb.report.links import (
    DOCS_ENV,
    HEADER_TERMS,
    SOURCES,
    TERMS,
    about_html,
    docs_base,
    glossary_anchor,
    paper_titles,
    short_title,
)
from hepwb.report.tables import verdict_html
from hepwb.report.verdict import verdict

ROOT = Path(__file__).resolve().parents[2]


def glossary_terms() -> set[str]:
    """The terms of docs/glossary.md's glossary block (unindented lines; definitions are indented)."""
    text = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    block = re.search(r"```\{glossary\}\n(.*?)\n```", text, re.S)
    assert block, "docs/glossary.md has no glossary block"
    return {line.strip() for line in block.group(1).splitlines() if line.strip() and not line[0].isspace()}


def test_every_term_the_report_links_is_defined_in_the_glossary():
    linked = {*TERMS, *HEADER_TERMS.values(), *(term for term, _ in SOURCES.values())}
    assert sorted(linked - glossary_terms()) == []


def test_anchors_are_the_ones_sphinx_gives_glossary_terms():
    # the ids of the built site (docs/_build/html/glossary.html), for terms with punctuation
    assert glossary_anchor("found@k") == "term-found-k"
    assert glossary_anchor("min_coverage") == "term-min_coverage"
    assert glossary_anchor(".ragmd") == "term-.ragmd"
    assert glossary_anchor("bm25(fields=context)") == "term-bm25-fields-context"


def test_the_key_links_every_term_and_explains_chroma_and_hepilot(monkeypatch):
    monkeypatch.setenv(DOCS_ENV, "https://docs.example.org/hepwb")
    html = about_html()
    text = unescape(html)
    for term in TERMS:
        assert f'href="https://docs.example.org/hepwb/glossary.html#{glossary_anchor(term)}"' in html
    assert "HEPilot</a>: the HEPilot Data Acquisition and Preparation Specification" in text
    assert "Chroma</a>: Chroma's study Evaluating Chunking Strategies for Retrieval" in text
    assert "explanations/choosing.html" in html


def test_without_a_hosted_copy_the_report_defines_its_terms_itself_and_links_nothing_local(monkeypatch):
    """A report sent to a colleague: each term link lands on a definition inside it, none on a local build."""
    monkeypatch.delenv(DOCS_ENV, raising=False)
    assert docs_base() == ""
    html = about_html()
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert hrefs and all(h.startswith("#term-") for h in hrefs)
    ids = set(re.findall(r'id="([^"]*)"', html))
    assert {h[1:] for h in hrefs} <= ids  # each link lands on a definition in the report
    assert "file:" not in html and "_build" not in html
    text = unescape(html)
    assert "Mean reciprocal rank: 1 / (rank of the first relevant chunk)" in text
    assert "docs/explanations/choosing.md in the hepwb repository" in text


def test_the_verdict_headers_link_to_their_terms(monkeypatch):
    import pandas as pd

    monkeypatch.setenv(DOCS_ENV, "https://d.example")
    config = {"chunker": ["hepilot"] * 2, "chunk_size": [512] * 2, "chunk_overlap": [0.1] * 2}
    wide = pd.DataFrame(
        {"run_id": ["a", "b"], **config, "retriever": ["bm25", "dense"], "hit_rate@5": [0.75, 0.5]}
    )
    per_question = pd.DataFrame(
        {"run_id": ["a"] * 4 + ["b"] * 4, "qid": list("wxyz") * 2, "hit_rate@5": [1, 1, 1, 0, 1, 0, 1, 0]}
    )
    by_run = {run: frame.drop(columns="run_id") for run, frame in per_question.groupby("run_id")}
    html = verdict_html(verdict(wide, by_run.__getitem__, "hit_rate@5"))
    assert '<a href="https://d.example/glossary.html#term-Holm" class="hw-term">p (Holm)</a>' in html
    assert 'glossary.html#term-detectable" class="hw-term">detectable</a>' in html


def test_short_titles_cut_at_a_word():
    assert short_title("Machine/Job Features (HSF-TN-2016-02)") == "Machine/Job Features (HSF-TN-2016-02)"
    cut = short_title("A Roadmap for HEP Software and Computing R&D for the 2020s (draft v0.1)")
    assert cut == "A Roadmap for HEP Software and Computing R&D for…" and len(cut) <= 51


def test_paper_titles_come_from_the_catalog(tmp_path):
    cat = Catalog(tmp_path / "catalog.duckdb")
    with duckdb.connect(str(cat.path)) as con:
        con.execute(
            "INSERT INTO documents (document_id, label, title) VALUES "
            "('d1', 'P01', 'Measurement of the Beam-Spin Azimuthal Asymmetry Associated with Compton'), "
            "('d2', 'N1', NULL)"
        )
    assert paper_titles(cat) == {"P01": "Measurement of the Beam-Spin Azimuthal Asymmetry…", "N1": ""}
