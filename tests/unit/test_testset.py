"""LLM-free test-set generation on real papers, and the CLI that writes it."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.evaluation import load_questions, locate_all
from hepwb.evaluation.testset import save_questions, structural_questions
from hepwb.experiment import ingest
from hepwb.paths import Layout
from hepwb.processing.markdown import markdown_document
from tests.helpers import PDF_DIR, SAMPLE_MD

pytestmark = pytest.mark.shared


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    return ingest(PDF_DIR, layout=Layout(tmp_path_factory.mktemp("ts")), only=["P01", "P06"], progress=False)


def test_questions_have_located_evidence_on_the_right_page(docs, tmp_path):
    qs = structural_questions(docs, max_per_doc=8)
    assert {q.kind for q in qs} == {"section", "caption", "figure"} and len(qs) >= 10
    figure_qs = [q for q in qs if q.kind == "figure"]
    assert any(q.question.startswith("What does Figure 1 of ") for q in figure_qs)
    captions = {q.evidence[0].quote for q in qs if q.kind == "caption"}
    assert all(q.evidence[0].quote in captions or q.evidence[0].quote.startswith(("FIG", "Fig", "TAB", "Tab"))
               for q in figure_qs)  # fmt: skip
    assert all(q.style == "lexical" and q.qid.startswith(("P01-gen", "P06-gen")) for q in qs)
    located, unlocated = locate_all(qs, docs)
    assert not unlocated and all(loc.method == "strict" and loc.page_ok for loc in located)
    back = load_questions(save_questions(qs, tmp_path / "gen.jsonl"))
    assert back == qs


def test_headings_without_body_and_boilerplate_are_skipped():
    doc = markdown_document(SAMPLE_MD, "S01")
    kinds = [q.kind for q in structural_questions([doc])]
    assert "section" in kinds
    assert not any("Introduction" in q.question for q in structural_questions([doc]))


def test_cli_writes_a_test_set(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    out = tmp_path / "qs.jsonl"
    res = CliRunner().invoke(app, ["testset", str(out), "--corpus", str(PDF_DIR), "--max-docs", "1"])
    assert res.exit_code == 0, res.output
    assert "not located: 0" in res.output and len(load_questions(out)) > 3
