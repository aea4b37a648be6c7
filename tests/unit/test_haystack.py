"""Your papers inside a realistic haystack (issue 47, item 4): ``--background`` in the CLI, Python, notebooks.

A haystack is an ordinary corpus folder of your papers and a background corpus's: nothing of either is
dropped or renamed in silence, the same inputs give the same folder, and your questions are scored on it.
"""

from __future__ import annotations

import json
import logging

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.corpus.haystack import haystack, haystack_of
from hepwb.experiment import ExperimentConfig, compare, run_experiment
from hepwb.paths import Layout

MINE = {
    "N1_calo.md": "# Calorimetry\n\nThe ATLAS electromagnetic calorimeter measures photon energies with a "
    "resolution of ten percent over the square root of the energy.\n\nIts liquid-argon gaps are two "
    "millimetres wide.\n",
    "N2_higgs.md": "# Higgs\n\nThe Higgs boson mass was measured at 125 GeV in the diphoton and four-lepton "
    "channels.\n",
}
BACKGROUND = {
    "N1_other.md": "# Tracking\n\nThe silicon tracker measures charged particles with a resolution of ten "
    "microns.\n",  # the label N1 is also one of yours
    "B2_muon.md": "# Muon g-2\n\nThe anomalous magnetic moment of the muon was measured in a storage ring.\n",
    "B3_higgs-copy.md": MINE["N2_higgs.md"],  # one of yours, under another name
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    for folder, files in (("mine", MINE), ("background", BACKGROUND)):
        (tmp_path / folder).mkdir()
        for name, text in files.items():
            (tmp_path / folder / name).write_text(text, encoding="utf-8")
    qa = tmp_path / "qa.jsonl"
    qa.write_text(
        json.dumps({"qid": "Q1", "question": "How wide are the liquid-argon gaps?",
                    "evidence": [{"doc": "N1", "quote": "Its liquid-argon gaps are two millimetres wide."}]})
        + "\n",
        encoding="utf-8",
    )  # fmt: skip
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    return tmp_path, qa, Layout(tmp_path)


def test_a_haystack_keeps_every_paper_once_and_renames_only_a_clashing_label(project):
    root, _, layout = project
    folder = haystack(root / "mine", root / "background", layout=layout)
    assert isinstance(folder, str)
    names = sorted(p.name for p in (root / folder).iterdir() if p.suffix == ".md")
    assert names == ["B2_muon.md", "N1_calo.md", "N2_higgs.md", "bg-N1_other.md"]
    manifest = haystack_of(folder)
    assert manifest is not None
    assert manifest["duplicates"] == ["B3_higgs-copy.md"] and manifest["relabelled"] == ["N1 → bg-N1"]
    assert haystack(root / "mine", root / "background", layout=layout) == folder  # the same inputs: reused
    assert haystack(root / "mine", None) == root / "mine"  # no background: the corpus as given


def test_evaluate_with_a_background_scores_your_questions_among_its_papers(project, caplog):
    root, qa, layout = project
    caplog.set_level(logging.INFO, logger="hepwb")
    r = CliRunner().invoke(
        app,
        ["evaluate", "--corpus", str(root / "mine"), "--questions", str(qa), "--background",
         str(root / "background"), "--chunk-size", "64"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    said = [x.getMessage() for x in caplog.records if x.getMessage().startswith("haystack:")]
    assert said == [
        f"haystack: your 2 papers ({root / 'mine'}) among 2 background papers ({root / 'background'}); "
        "1 background paper is one of yours (kept once, as yours); background labels that are also yours "
        "renamed: N1 → bg-N1"
    ]
    rec = run_experiment(
        ExperimentConfig.from_params(corpus=haystack(root / "mine", root / "background", layout=layout),
                                     questions=str(qa), chunk_size=64),
        layout=layout, progress=False,
    ).record  # fmt: skip
    assert sorted(rec.inputs.corpus_documents) == ["B2", "N1", "N2", "bg-N1"]
    cmp = compare(["bm25", "bm25(fields=context)"], layout=layout, corpus=str(root / "mine"),
                  background=str(root / "background"), questions=str(qa), chunk_size=64)  # fmt: skip
    assert all(haystack_of(r.record.config["corpus"]) is not None for r in cmp.runs.values())


def test_a_missing_background_is_one_line_and_exit_2(project):
    root, qa, _ = project
    r = CliRunner().invoke(
        app,
        [
            "evaluate",
            "--corpus",
            str(root / "mine"),
            "--questions",
            str(qa),
            "--background",
            str(root / "no"),
        ],
    )
    assert r.exit_code == 2 and "does not exist" in r.output and len(r.output.strip().splitlines()) == 1


def test_a_run_over_few_papers_says_so_and_a_sweeps_max_docs_names_what_it_leaves_out(project, caplog):
    from hepwb.sweep import SweepSpec, plan_sweep

    root, qa, layout = project
    r = CliRunner().invoke(
        app, ["evaluate", "--corpus", str(root / "mine"), "--questions", str(qa), "--chunk-size", "64"]
    )
    assert r.exit_code == 0 and "only 2 paper(s) to search among" in r.output
    assert "--background shipped" in r.output
    caplog.set_level(logging.INFO, logger="hepwb")
    spec = SweepSpec.from_dict(
        {"name": "cut", "corpus": str(root / "mine"), "questions": str(qa), "max_docs": 1,
         "grid": {"retriever": ["bm25", "bm25(fields=context)"]}}
    )  # fmt: skip
    plan_sweep(spec, layout)
    said = [x.getMessage() for x in caplog.records if "left out" in x.getMessage()]
    assert said == ["max_docs=1: 1 of 2 papers used, 1 left out (N2); a larger max_docs reads more"]


def test_a_background_latex_tree_behind_a_link_out_of_its_corpus_is_not_copied(project, caplog):
    root, _, layout = project
    outside = root / "outside" / "B2_src"
    outside.mkdir(parents=True)
    (outside / "main.tex").write_text("\\documentclass{article} AKIACANARY0000SECRET", encoding="utf-8")
    (root / "background" / "tex").symlink_to(root / "outside")  # tex/ of the background leaves its folder
    papers = [{"pid": "B2", "pdf": "B2_muon.md", "tex": "B2_src"}]
    (root / "background" / "papers.json").write_text(json.dumps({"papers": papers}), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="hepwb.corpus"):
        folder = haystack(root / "mine", root / "background", layout=layout)
    assert isinstance(folder, str)
    assert not (root / folder / "tex").exists()
    (entry,) = json.loads((root / folder / "papers.json").read_text(encoding="utf-8"))["papers"]
    assert entry["pid"] == "B2" and "tex" not in entry
    assert "ignoring 'tex' 'B2_src' of B2: it leads outside the folder" in caplog.text


@pytest.mark.heavy  # a sweep or a run end to end: make test, not make check
def test_a_store_backed_sweep_over_a_haystack_publishes_both_sources_papers(project):
    from hepwb.runs.record import RunRecord
    from hepwb.store import ArtefactStore

    root, qa, layout = project
    url = f"file://{root}/store"
    args = ["sweep", "--corpus", str(root / "mine"), "--questions", str(qa), "--background",
            str(root / "background"), "--chunk-sizes", "64", "--retrievers", "bm25", "--executor", "serial",
            "--store", url]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    store = ArtefactStore(url)
    assert len(store.published("document")) == 4 and len(store.published("run")) == 1  # 2 yours, 2 theirs
    (run_dir,) = [p.parent for p in layout.runs.rglob(RunRecord.FILE)]
    rec = RunRecord.load(run_dir)
    assert haystack_of(rec.config["corpus"]) is not None and rec.summary["n_papers"] == 4.0
    again = CliRunner().invoke(app, args)  # the same haystack folder, the same keys: nothing computed again
    assert again.exit_code == 0 and RunRecord.load(run_dir).created == rec.created
