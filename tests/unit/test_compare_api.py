"""Compose and compare in Python (issue 39 item 4): retrievers and chunkers as objects, accepted wherever
their names are, and one call that runs several systems on a question set and returns the verdict table."""

from __future__ import annotations

import json

import pytest

from hepwb.chunking import HierarchicalChunker
from hepwb.exceptions import ConfigError
from hepwb.experiment import ExperimentConfig, compare
from hepwb.paths import Layout
from hepwb.retrieval import BM25, RETRIEVERS, Dense, Hybrid, Rerank, RetrieverSpec
from hepwb.retrieval import specs as specs_module

NOTES = {
    "calo.md": "# Calorimetry\n\nThe ATLAS electromagnetic calorimeter measures photon energies with a "
    "resolution of ten percent over the square root of the energy.\n\nIts liquid-argon gaps are two "
    "millimetres wide.\n",
    "dvcs.md": "# DVCS\n\nCLAS12 measured the beam-spin asymmetry of deeply virtual Compton scattering with "
    "a polarized electron beam.\n\nThe asymmetry amplitude reached 0.3 at small momentum transfer.\n",
    "higgs.md": "# Higgs\n\nThe Higgs boson mass was measured at 125 GeV in the diphoton and four-lepton "
    "channels.\n\nThe signal strength agrees with the Standard Model within eight percent.\n",
    "muon.md": "# Muon g-2\n\nThe anomalous magnetic moment of the muon was measured with a storage ring."
    "\n\nThe precession frequency was read from the decay positrons.\n",
}
QUESTIONS = [
    ("Q1", "How wide are the liquid-argon gaps?", "calo", "Its liquid-argon gaps are two millimetres wide."),
    ("Q2", "What energy resolution does the calorimeter reach?", "calo",
     "a resolution of ten percent over the square root of the energy"),
    ("Q3", "Which beam did CLAS12 use for DVCS?", "dvcs", "with a polarized electron beam"),
    ("Q4", "How large was the asymmetry amplitude?", "dvcs", "The asymmetry amplitude reached 0.3"),
    ("Q5", "What is the Higgs mass?", "higgs", "The Higgs boson mass was measured at 125 GeV"),
    ("Q6", "How well does the signal strength agree?", "higgs",
     "The signal strength agrees with the Standard Model within eight percent."),
    ("Q7", "How was the precession frequency read?", "muon",
     "The precession frequency was read from the decay positrons."),
]  # fmt: skip


@pytest.fixture
def project(tmp_path, monkeypatch):
    papers = tmp_path / "papers"
    papers.mkdir()
    for name, text in NOTES.items():
        (papers / name).write_text(text, encoding="utf-8")
    qa = tmp_path / "qa.jsonl"
    qa.write_text(
        "".join(
            json.dumps({"qid": q, "question": text, "evidence": [{"doc": doc, "quote": quote}]}) + "\n"
            for q, text, doc, quote in QUESTIONS
        ),
        encoding="utf-8",
    )
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    return papers, qa, Layout(tmp_path)


def test_every_registered_retriever_has_an_object_and_it_round_trips_through_its_string():
    classes = [c for c in vars(specs_module).values() if isinstance(c, type) and issubclass(c, RetrieverSpec)]
    assert {c.name for c in classes if c.name} <= set(RETRIEVERS.names())  # the shipped ones, by hand
    assert [specs_module.spec_for(n).name for n in RETRIEVERS.names()] == RETRIEVERS.names()  # any other
    spec = Rerank(base=Hybrid(weight=0.3, fields="text"), top_n=20)
    assert str(spec) == "rerank(base=hybrid(fields=text, weight=0.3), top_n=20)"
    a = ExperimentConfig.from_params(retriever=spec)
    b = ExperimentConfig.from_params(retriever=str(spec))
    assert a == b and a.retriever_spec == str(spec)
    with pytest.raises(ConfigError, match=r"top_n is a whole number of candidates re-scored from 1 to 1000"):
        Rerank(top_n=0)


def test_a_chunker_object_is_taken_where_its_name_is_and_gives_the_same_configuration():
    by_object = ExperimentConfig.from_params(chunker=HierarchicalChunker(chunk_size=128, parent_size=2048))
    by_name = ExperimentConfig.from_params(
        chunker="hierarchical", chunk_size=128, chunker_options={"parent_size": 2048}
    )
    assert by_object == by_name
    with pytest.raises(ConfigError, match="given both in the chunker object and beside it"):
        ExperimentConfig.from_params(chunker=HierarchicalChunker(chunk_size=128), chunk_size=256)


@pytest.mark.heavy
def test_compare_runs_three_systems_in_one_call_and_tests_them_against_the_baseline(project):
    papers, qa, layout = project
    result = compare(
        ["bm25", BM25(fields="context"), Dense()],
        corpus=str(papers),
        questions=str(qa),
        chunk_size=32,
        layout=layout,
    )
    table = result.table
    assert result.baseline == "bm25"
    assert list(table["system"].unique()) == ["bm25", "bm25(fields=context)", "dense"]
    assert list(table["metric"].unique()) == ["hit_rate@5", "mrr@10"]
    for row in table.to_dict("records"):
        run = result.runs[row["system"]]
        assert row["mean"] == pytest.approx(run.per_question[row["metric"]].mean())
        assert row["n"] == len(QUESTIONS) and row["small sample"]  # 7 questions: flagged as small
        assert row["ci_low"] <= row["mean"] <= row["ci_high"]
        if row["system"] == "bm25":
            assert pd_isna(row["difference"])
            continue
        base = result.runs["bm25"].per_question.set_index("qid")[row["metric"]]
        mine = run.per_question.set_index("qid")[row["metric"]].reindex(base.index)
        assert row["difference"] == pytest.approx((mine - base).mean())
        assert row["improved"] == int((mine > base).sum()) and row["degraded"] == int((mine < base).sum())
        assert row["improved"] + row["degraded"] + row["unchanged"] == len(QUESTIONS)
        assert row["p"] <= row["p (Holm)"] <= 1
    assert "improved" in result._repr_html_() and "run_id" not in str(result)


def test_compare_refuses_what_it_cannot_compare(project):
    papers, qa, layout = project
    with pytest.raises(ConfigError, match="at least two systems"):
        compare(["bm25"], corpus=str(papers), questions=str(qa), layout=layout)
    with pytest.raises(ConfigError, match="same name"):
        compare(["bm25", "bm25"], corpus=str(papers), questions=str(qa), layout=layout)
    with pytest.raises(ConfigError, match="baseline 'x' is not one of"):
        compare(["bm25", "dense"], baseline="x", corpus=str(papers), questions=str(qa), layout=layout)


def pd_isna(value: object) -> bool:
    import pandas as pd

    return bool(pd.isna(value))
