"""Nothing a user gave is left out without a line saying so (issue 47, item 2).

A ``max_docs`` that cuts a corpus names the papers and the questions it leaves out; a project notebook given
a corpus reads all of it unless ``max_docs`` is given too; an answer metric counts the questions with an
answer, and says how many it could not use.
"""

from __future__ import annotations

import logging
from pathlib import Path

import nbformat
import pytest

from hepwb.cli.show import run_lines
from hepwb.experiment import ExperimentConfig, run_experiment
from hepwb.experiment.notebook import notebook_parameters, quick_look
from hepwb.paths import Layout
from hepwb.report.run_tables import headline
from tests.helpers import notes_project

REPO = Path(__file__).resolve().parents[2]

NOTES = {
    "calo.md": "# Calorimetry\n\nThe ATLAS electromagnetic calorimeter measures photon energies with a "
    "resolution of ten percent over the square root of the energy.\n\nIts liquid-argon gaps are two "
    "millimetres wide.\n",
    "higgs.md": "# Higgs\n\nThe Higgs boson mass was measured at 125 GeV in the diphoton and four-lepton "
    "channels.\n\nThe signal strength agrees with the Standard Model within eight percent.\n",
    "muon.md": "# Muon g-2\n\nThe anomalous magnetic moment of the muon was measured with a storage ring."
    "\n\nThe precession frequency was read from the decay positrons.\n",
}
QUESTIONS = [  # qid, question, doc, quote, answer
    ("Q1", "How wide are the liquid-argon gaps?", "calo", "Its liquid-argon gaps are two millimetres wide.",
     "two millimetres"),
    ("Q2", "What is the Higgs mass?", "higgs", "The Higgs boson mass was measured at 125 GeV", ""),
    ("Q3", "How well does the signal strength agree?", "higgs", "within eight percent", ""),
    ("Q4", "How was the precession frequency read?", "muon",
     "The precession frequency was read from the decay positrons.", "from the decay positrons"),
]  # fmt: skip


@pytest.fixture
def project(tmp_path, monkeypatch):
    papers, qa = notes_project(tmp_path, NOTES, QUESTIONS)
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    return papers, qa, Layout(tmp_path)


def test_max_docs_names_the_papers_and_questions_it_leaves_out(project, caplog):
    papers, qa, layout = project
    caplog.set_level(logging.INFO, logger="hepwb")
    cfg = ExperimentConfig.from_params(corpus=str(papers), questions=str(qa), max_docs=2, chunk_size=64)
    res = run_experiment(cfg, layout=layout, progress=False)
    said = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert said == [
        "max_docs=2: 2 of 3 papers used, 1 left out (muon); 1 of 4 questions not asked, it cites them (Q4); "
        "a larger max_docs reads more"
    ]
    assert res.record.summary["n_questions"] == 3


def test_an_answer_metric_counts_the_questions_with_an_answer_and_says_how_many_it_could_not_use(project):
    papers, qa, layout = project
    cfg = ExperimentConfig.from_params(corpus=str(papers), questions=str(qa), chunk_size=64)
    rec = run_experiment(cfg, layout=layout, progress=False).record
    assert rec.metric_n("hit_rate@5") == 4
    assert rec.metric_n("ragas_answer_in_context") == 2
    assert rec.without("ragas_answer_in_context") == "2 of 4 scored questions have no answer"
    row = headline(rec, ["hit_rate@5", "ragas_answer_in_context"]).set_index("metric").iloc[1]
    assert row["questions"] == 2 and "2 of 4 scored questions have no answer" in row["note"]
    (line,) = [x for x in run_lines(rec, all_metrics=True) if x.startswith("ragas_answer_in_context")]
    assert line.endswith("small sample: 2 questions (2 of 4 scored questions have no answer)")


def test_a_notebook_reads_a_named_corpus_whole_and_the_shipped_one_for_a_quick_look(monkeypatch):
    monkeypatch.delenv("HEPWB_CORPUS", raising=False)
    assert quick_look("my-papers", None) is None  # papermill -p corpus DIR: all of it
    assert quick_look("my-papers", 2) == 2
    assert quick_look(None, None) == 3  # the shipped corpus: a quick look
    assert quick_look(None, None, quick=False) is None  # a sweep's notebook cell: every shipped paper
    monkeypatch.setenv("HEPWB_CORPUS", "/somewhere/mine")
    assert quick_look(None, None) is None
    assert notebook_parameters({"max_docs": None}, REPO, Layout(REPO))["quick"] is False


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb")))
def test_no_project_notebook_cuts_a_corpus_by_default(name):
    nb = nbformat.read(REPO / "notebooks" / name, as_version=4)
    (params,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    names = [line.split(" = ")[0] for line in params.source.splitlines()]
    if "max_docs" not in names:
        return
    assert "\nmax_docs = None" in "\n" + params.source
    body = "\n".join(c.source for c in nb.cells if c.cell_type == "code" and c is not params)
    assert "max_docs = quick_look(corpus, max_docs" in body


def test_a_paper_converted_from_its_pdf_instead_of_its_latex_is_named_by_each_run():
    from hepwb.corpus.sources import substitution_line
    from hepwb.runs.record import RunInputs, RunRecord
    from hepwb.types import Document

    why = "LaTeX source /t/P29 not used: it agrees with the PDF on 69% of the prose (< 90%), so it is …"
    doc = Document("d", "P29", "", [], {"conversion_warnings": [why, "2 figures without caption"]})
    line = substitution_line([doc, Document("e", "P01", "", [], {})])
    assert line is not None and line.endswith("so the PDF's text is what is measured: P29 (69%)")
    rec = RunRecord(
        run_id="r",
        chunkset_id="c",
        config={},
        summary={"hit_rate@5": 1.0, "n_questions": 12.0, "n_questions_evaluated": 12.0},
        inputs=RunInputs(substitutions=[f"P29: converted from its PDF: {why}"]),
    )
    assert "converted from their PDF, not their LaTeX source: P29 (why: metrics.json inputs)" in run_lines(
        rec
    )


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb")))
def test_papermill_reads_every_parameter_of_a_project_notebook(name):
    """A parameter papermill cannot parse is passed as "unknown" with a warning in every sweep cell."""
    import papermill

    nb = nbformat.read(REPO / "notebooks" / name, as_version=4)
    (params,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    names = [line.split("=")[0].strip() for line in params.source.splitlines() if " = " in line]
    assert list(papermill.inspect_notebook(str(REPO / "notebooks" / name))) == names


def test_a_quote_not_found_gets_the_nearest_passage_as_a_hint():
    from hepwb.evaluation.evidence import check_evidence
    from hepwb.evaluation.questions import Evidence, Question
    from hepwb.processing.markdown import markdown_document

    doc = markdown_document(
        "# Tracker\n\nThe silicon tracker measures charged particles with a resolution of ten microns.\n\n"
        "Carbon-fibre supports keep the material budget below two percent of a radiation length.\n",
        "B02",
    )
    quote = "Carbon-fiber supports keep the material budget below one percent"
    q = Question("q3", "What keeps the material budget low?", "", [Evidence("q3#e0", "B02", None, quote)])
    (miss,) = check_evidence([q], [doc]).unlocated
    assert miss.status == "not_found"
    assert (
        "; the nearest passage is " in miss.reason and "% alike: 'Carbon-fibre supports keep" in miss.reason
    )
