"""A finished run folder is never overwritten (issue 47, item 1).

The sequence a user reported: a sweep over their own papers and questions, then ``compare()`` of
configurations the sweep already ran, then the report. The same configuration run again reads the finished
run back when its inputs are identical; when they are not (the question file grew), it writes a folder of its
own beside the sweep's, and the catalog forgets nothing.
"""

from __future__ import annotations

import json
import logging

import pytest

from hepwb.catalog import Catalog
from hepwb.experiment import compare
from hepwb.paths import Layout
from hepwb.runs.record import RunRecord
from hepwb.sweep import SweepSpec, run_sweep
from tests.helpers import notes_project

NOTES = {
    "calo.md": "# Calorimetry\n\nThe ATLAS electromagnetic calorimeter measures photon energies with a "
    "resolution of ten percent over the square root of the energy.\n\nIts liquid-argon gaps are two "
    "millimetres wide.\n",
    "higgs.md": "# Higgs\n\nThe Higgs boson mass was measured at 125 GeV in the diphoton and four-lepton "
    "channels.\n\nThe signal strength agrees with the Standard Model within eight percent.\n",
}
QUESTIONS = [
    ("Q1", "How wide are the liquid-argon gaps?", "calo", "Its liquid-argon gaps are two millimetres wide."),
    ("Q2", "What is the Higgs mass?", "higgs", "The Higgs boson mass was measured at 125 GeV"),
    ("Q3", "How well does the signal strength agree?", "higgs", "within eight percent"),
]
RETRIEVERS = ["bm25", "bm25(fields=context)"]


def _line(qid: str, question: str, doc: str, quote: str) -> str:
    return json.dumps({"qid": qid, "question": question, "evidence": [{"doc": doc, "quote": quote}]}) + "\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    papers, qa = notes_project(tmp_path, NOTES, QUESTIONS)
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    return papers, qa, Layout(tmp_path)


def _finished(layout: Layout) -> dict[str, RunRecord]:
    """Every finished run folder under the project's runs, by folder name."""
    out = {}
    for folder in sorted(layout.runs.iterdir()):
        rec = RunRecord.finished(folder)
        if rec is not None:
            out[folder.name] = rec
    return out


def test_compare_after_a_sweep_reads_its_runs_and_a_changed_question_file_writes_beside_them(project, caplog):
    papers, qa, layout = project
    shared = {"corpus": str(papers), "questions": str(qa), "chunk_size": 64}
    spec = SweepSpec.from_dict({"name": "own", **shared, "grid": {"retriever": RETRIEVERS}})
    sweep = run_sweep(spec, layout=layout, executor="serial", progress=False)
    assert not sweep.failed and len(sweep.computed) == 2
    before = _finished(layout)
    assert len(before) == 2

    same = compare(RETRIEVERS, layout=layout, **shared)
    assert all(run.reused for run in same.runs.values())
    assert _finished(layout) == before  # nothing written

    with qa.open("a", encoding="utf-8") as f:  # a question added: same configurations, other inputs
        f.write(_line("Q4", "How are photon energies measured?", "calo", "measures photon energies"))
    caplog.set_level(logging.INFO, logger="hepwb")
    grown = compare(RETRIEVERS, layout=layout, **shared)
    assert not any(run.reused for run in grown.runs.values())
    after = _finished(layout)
    for name, rec in before.items():  # the sweep's runs are untouched, byte for byte in their records
        assert after[name] == rec
    new = {run.run_dir.name for run in grown.runs.values()}
    assert len(after) == 4 and new == set(after) - set(before)
    assert all(name[: -len("-01234567")] in before for name in new)
    assert "holds a finished run of other inputs" in caplog.text

    catalog = Catalog(layout.catalog)
    catalog.sync_runs(layout.runs)
    assert catalog.forget_replaced_runs() == []
    recorded = set(catalog.sql("SELECT run_id FROM runs WHERE status = 'ok'")["run_id"])
    assert recorded == {rec.run_id for rec in after.values()}

    again = run_sweep(
        spec, layout=layout, executor="serial", progress=False
    )  # the grown file: compare's runs
    assert not again.failed and not again.computed
    assert _finished(layout) == after
