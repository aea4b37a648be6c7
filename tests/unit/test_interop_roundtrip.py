"""hepwb's runs and judgements in the IR community's files, and back (issue 42), on three markdown papers.

One real hepwb run (bm25, 48-token chunks) is exported as TREC and BEIR files: ir_measures and ranx give,
on the exported run and qrels, the values hepwb computed, question by question and to the last printed
digit. A system outside hepwb (a run file over the exported BEIR corpus) is scored by ``hepwb evaluate
--run-file`` as ir_measures scores it, compared with the baseline question by question, and takes part in
the verdict. The BEIR folder imported back gives the same chunk set and the same metrics.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import ir_measures
import pandas as pd
import pytest
from typer.testing import CliRunner

from hepwb.catalog import Catalog
from hepwb.chunking.chunksets import build_chunkset
from hepwb.cli import app
from hepwb.corpus import ingest
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.run import run_experiment
from hepwb.interop import experiment_table, export_runs, import_beir, resolve_runs, score_run_file
from hepwb.interop.trec import read_run
from hepwb.paths import Layout
from hepwb.report.verdict import verdict
from hepwb.text.labels import config_label
from tests.helpers import tiny_corpus

FAMILIES = {"recall": "R", "precision": "P", "hit_rate": "Success", "mrr": "RR", "ndcg": "nDCG"}
KS = (1, 3, 5)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project with one bm25 run over three markdown papers, exported as TREC and as BEIR files."""
    root = tmp_path_factory.mktemp("interop")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HEPWB_HOME", str(root))
        mp.chdir(root)
        corpus, questions = tiny_corpus(root)
        layout = Layout(root)
        cfg = ExperimentConfig.from_params(
            corpus=str(corpus),
            questions=str(questions),
            chunk_size=48,
            retriever="bm25",
            k=5,
        )
        run = run_experiment(cfg, layout=layout, progress=False)
        trec = export_runs([run.run_dir], root / "trec", "trec", layout=layout, progress=False)
        beir = export_runs([run.run_dir], root / "beir", "beir", layout=layout, progress=False)
        yield SimpleNamespace(root=root, layout=layout, cfg=cfg, run=run, trec=trec, beir=beir, corpus=corpus,
                              questions=questions)  # fmt: skip


def _measures(prefix: str) -> list:
    return [ir_measures.parse_measure(f"{m}@{k}") for m in FAMILIES.values() for k in KS]


def _ir_measures(qrels: Path, run: Path, prefix: str) -> dict[tuple[str, str], float]:
    """``{(qid, hepwb column): value}`` of ir_measures on a qrels and a run file."""
    names = {v: k for k, v in FAMILIES.items()}
    qrels_ = list(ir_measures.read_trec_qrels(str(qrels)))
    run_ = list(ir_measures.read_trec_run(str(run)))
    out = {}
    for v in ir_measures.iter_calc(_measures(prefix), qrels_, run_):
        family, k = str(v.measure).split("@")
        out[(v.query_id, f"{prefix}_{names[family]}@{k}")] = v.value
    return out


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())["runs"][0]


def test_ir_measures_gives_hepwb_values_on_the_exported_run_and_qrels(project):
    files = _manifest(project.root / "trec")["files"]
    per_q = project.run.per_question.set_index("qid")
    summary = project.run.summary
    for level, run, qrels in (("chunk", "run", "qrels_chunk"), ("doc", "paper_run", "qrels_paper")):
        got = _ir_measures(project.root / "trec" / files[qrels], project.root / "trec" / files[run], level)
        assert len(got) == len(per_q) * len(FAMILIES) * len(KS)  # every question scored by both
        for (qid, column), value in got.items():
            assert value == pytest.approx(per_q.loc[qid, column], abs=1e-12), (qid, column)
        for column in {c for _, c in got}:
            mean = sum(v for (_, c), v in got.items() if c == column) / len(per_q)
            assert f"{mean:.3f}" == f"{summary[column]:.3f}" and mean == pytest.approx(
                summary[column], abs=1e-12
            )
    # the decision metric, found@k, is trec_eval's Success@k on the chunk-level qrels
    chunk = _ir_measures(
        project.root / "trec" / files["qrels_chunk"], project.root / "trec" / files["run"], "c"
    )
    for qid in per_q.index:
        for k in KS:
            assert chunk[(qid, f"c_hit_rate@{k}")] == per_q.loc[qid, f"hit_rate@{k}"]
    assert _manifest(project.root / "trec")["hepwb_metrics"]["chunk_ndcg@5"] == summary["chunk_ndcg@5"]
    assert 0 < summary["chunk_precision@5"] < 1 and summary["chunk_ndcg@5"] < 1  # not a trivial ranking


@pytest.mark.slow  # ranx compiles its metrics with numba on first use: 30 s to over 2 min on two cores
@pytest.mark.filterwarnings("ignore:unsafe cast:Warning")  # numba, while compiling them
def test_ranx_gives_hepwb_values_on_the_exported_run_and_qrels(project):
    from ranx import Qrels, Run, evaluate

    files = _manifest(project.root / "trec")["files"]
    per_q = project.run.per_question.set_index("qid")
    for level, run, qrels in (("chunk", "run", "qrels_chunk"), ("doc", "paper_run", "qrels_paper")):
        q = Qrels.from_file(str(project.root / "trec" / files[qrels]), kind="trec")
        r = Run.from_file(str(project.root / "trec" / files[run]), kind="trec")
        names = {
            f"{m}@{k}": f"{level}_{m}@{k}"
            for m in ("recall", "precision", "hit_rate", "mrr", "ndcg")
            for k in KS
        }
        got = evaluate(q, r, list(names), return_mean=False, make_comparable=True)
        for metric, column in names.items():
            values = dict(zip(q.get_query_ids(), got[metric], strict=True))
            for qid, value in values.items():
                assert value == pytest.approx(per_q.loc[qid, column], abs=1e-12), (qid, column)


def _outside_run(project) -> Path:
    """A system outside hepwb: bm25's chunks in reverse order, ids from the exported BEIR corpus.

    No two scores of a query tie: ir_measures computes RR@k with the msmarco provider, which breaks ties the
    other way round than trec_eval (hepwb and pytrec_eval: docno descending; test_interop_trec.py).
    """
    ids = {
        json.loads(line)["_id"] for line in (project.root / "beir" / "corpus.jsonl").read_text().splitlines()
    }
    bm25 = read_run(project.root / "beir" / _manifest(project.root / "beir")["files"]["run"]).rankings
    lines = []
    for qid, ranking in bm25.items():
        for rank, (docno, _) in enumerate(reversed(ranking), start=1):
            assert docno in ids
            lines.append(f"{qid} Q0 {docno} {rank} {10.0 - rank} outside\n")
    path = project.root / "outside.trec"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_an_outside_run_file_is_scored_as_ir_measures_scores_it_and_takes_part_in_the_verdict(project):
    outside = _outside_run(project)
    args = ["evaluate", "--corpus", str(project.corpus), "--questions", str(project.questions),
            "--chunk-size", "48", "--k", "5", "--run-file", str(outside), "--baseline",
            project.run.run_name]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert f"against {project.run.run_name}" in res.output and "retriever run:outside" in res.output
    folder = Path(res.output.split("results: ")[1].split()[0])
    per_q = pd.read_parquet(folder / "per_question.parquet").set_index("qid")
    qrels = project.root / "trec" / _manifest(project.root / "trec")["files"]["qrels_chunk"]
    for (qid, column), value in _ir_measures(qrels, outside, "chunk").items():
        assert value == pytest.approx(per_q.loc[qid, column], abs=1e-12), (qid, column)
    # the comparison line says the questions improved, degraded and unchanged, as pt.Experiment's +/- columns
    frames = {"bm25": project.run.per_question, "outside": per_q.reset_index()}
    table = experiment_table(frames, ["mrr@5"], "bm25").set_index("name")
    plus, minus, same = (int(table.loc["outside", f"mrr@5 {s}"]) for s in "+-=")
    assert minus > 0 and plus + minus + same == len(per_q)
    assert f"+{plus} -{minus} ={same}" in next(
        line for line in res.output.splitlines() if line.startswith("  mrr@5 ")
    )
    # the catalog holds it beside the hepwb run; the verdict ranks and tests both on the same questions
    cat = Catalog(project.layout.catalog)
    cat.sync_runs(project.layout.runs)
    wide = cat.metrics_wide("all")
    v = verdict(wide, cat.per_question, "mrr@5")
    rows = {str(r["configuration"]): r for r in v.table.to_dict("records")}
    mine = next(r for label, r in rows.items() if "run:outside" in label)
    assert mine["verdict"] in {"worse", "indistinguishable"} and mine["worse"] == minus
    assert (
        mine["better"] + mine["worse"] + mine["same"] == len(per_q) and mine["diff_low"] <= mine["difference"]
    )


def test_a_beir_export_imported_back_gives_the_same_chunk_set_and_metrics(project, tmp_path):
    done = import_beir(project.root / "beir", tmp_path / "imported")
    original = {json.loads(line)["_id"]: json.loads(line)["text"]
                for line in (project.root / "beir" / "corpus.jsonl").read_text().splitlines()}  # fmt: skip
    assert done.n_documents == len(original) and done.skipped == {}
    docs = ingest(done.corpus, layout=project.layout, progress=False)
    cs = build_chunkset(
        docs, "hepilot", layout=project.layout, progress=False, chunk_size=512, chunk_overlap=0.0
    )
    label = {d.document_id: d.label for d in docs}
    assert {label[c.document_id]: c.text for c in cs.chunks} == original  # one chunk per document, same text
    # the exported run, its chunks renamed to the imported ones, scored on the imported collection
    own = {label[c.document_id]: c.chunk_id for c in cs.chunks}
    exported = read_run(project.root / "beir" / _manifest(project.root / "beir")["files"]["run"])
    renamed = tmp_path / "renamed.trec"
    renamed.write_text("".join(f"{q} Q0 {own[d]} {r} {s} bm25\n" for q, ranking in exported.rankings.items()
                               for r, (d, s) in enumerate(ranking, start=1)))  # fmt: skip
    cfg = ExperimentConfig.from_params(corpus=str(done.corpus), questions=str(done.questions), chunk_size=512,
                                       chunk_overlap=0.0, k=5)  # fmt: skip
    back = score_run_file(cfg, renamed, layout=project.layout, progress=False).summary
    papers = score_run_file(cfg, exported.path, level="paper", layout=project.layout, progress=False).summary
    before = project.run.summary
    for k in KS:
        assert back[f"hit_rate@{k}"] == pytest.approx(before[f"hit_rate@{k}"], abs=1e-12)
        assert back[f"recall@{k}"] == pytest.approx(before[f"chunk_recall@{k}"], abs=1e-12)
        for family in FAMILIES:
            assert back[f"chunk_{family}@{k}"] == pytest.approx(before[f"chunk_{family}@{k}"], abs=1e-12)
            assert papers[f"doc_{family}@{k}"] == pytest.approx(before[f"chunk_{family}@{k}"], abs=1e-12)


def test_runs_are_found_by_folder_name_run_id_and_sweep(project):
    cat = Catalog(project.layout.catalog)
    cat.sync_runs(project.layout.runs)
    assert resolve_runs(project.run.run_name, project.layout) == [project.run.run_dir]
    assert resolve_runs(project.run.run_id, project.layout) == [project.run.run_dir]
    cat.record_sweep("grid-1", {})
    cat.record_sweep_cells("grid-1", [(project.run.run_name, project.run.run_id, "ok", False)])
    assert resolve_runs("latest", project.layout) == [project.run.run_dir]
    with pytest.raises(Exception, match="is no run folder, run id or sweep id here"):
        resolve_runs("nothing-like-it", project.layout)
    # an outside run joins the sweep the report shows
    outside = _outside_run(project)
    res = score_run_file(
        project.cfg, outside, name="joined", sweep="latest", layout=project.layout, progress=False
    )
    assert set(cat.metrics_wide("grid-1")["run_id"]) == {project.run.run_id, res.run_id}
    with pytest.raises(Exception, match="no sweep 'nope' in the catalog"):
        score_run_file(project.cfg, outside, sweep="nope", layout=project.layout, progress=False)
    # a run file at paper level joins too: it has no chunk size and no found@5, and breaks neither table
    papers = project.root / "papers.trec"
    papers.write_text("q1 Q0 A01#3 1 2.0 papers\nq1 Q0 B02 2 1.0 papers\n", encoding="utf-8")
    score_run_file(project.cfg, papers, level="paper", sweep="latest", layout=project.layout, progress=False)
    wide = cat.metrics_wide("grid-1")
    v = verdict(wide, cat.per_question, "hit_rate@5")
    assert len(wide) == 3 and len(v.table) == 2 and "run:papers" not in " ".join(v.table["configuration"])
    row = wide[wide["retriever"] == "run:papers"].iloc[0].to_dict()
    assert config_label(row) == "paper level · run:papers" and wide["chunk_size"].dtype == "Int64"
    assert verdict(wide, cat.per_question, "doc_mrr@5").table.shape[0] == 3


def test_an_export_stopped_midway_into_an_existing_folder_never_leaves_a_manifest_of_a_mix(
    project, tmp_path, monkeypatch
):
    out = tmp_path / "exports"
    export_runs([project.run.run_dir], out, "trec", layout=project.layout, progress=False)
    old = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    (out / ".exports.partial-999999-deadbeef").mkdir()  # a staging folder of a killed export (pid gone)
    moved = []
    real_replace = Path.replace

    def killed_after_two_files(self, target):
        if ".exports.partial-" not in str(self) or ".partial-" in str(target):  # not a move into place
            return real_replace(self, target)
        if len(moved) == 2:
            raise KeyboardInterrupt  # the process stops here (as a kill would, between two renames)
        moved.append(target)
        return real_replace(self, target)

    monkeypatch.setattr(Path, "replace", killed_after_two_files)
    with pytest.raises(KeyboardInterrupt):
        export_runs([project.run.run_dir], out, "trec", layout=project.layout, progress=False)
    monkeypatch.undo()
    assert not (out / ".exports.partial-999999-deadbeef").exists()  # stale staging folders cleaned
    assert all(p.name != "manifest.json" for p in moved)  # the manifest goes last...
    assert not (out / "manifest.json").exists()  # ...and the old one first: none names a mix
    export_runs([project.run.run_dir], out, "trec", layout=project.layout, progress=False)  # run again
    manifest = json.loads((out / "manifest.json").read_text())
    assert all((out / f).is_file() for r in manifest["runs"] for f in r["files"].values())
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == old


@pytest.mark.heavy  # a sweep or a run end to end: make test, not make check
def test_an_export_into_a_folder_of_an_earlier_export_replaces_it_whole(project, tmp_path):
    out = tmp_path / "again"
    export_runs([project.run.run_dir], out, "trec", layout=project.layout, progress=False)
    other = run_experiment(project.cfg.replace(retriever="bm25_plain"), layout=project.layout, progress=False)
    export_runs([other.run_dir], out, "trec", layout=project.layout, progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    listed = {f for r in manifest["runs"] for f in r["files"].values()}
    assert [r["run"] for r in manifest["runs"]] == [other.run_dir.name]
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert on_disk == listed | {"manifest.json"}  # the earlier run's files are gone with its manifest
