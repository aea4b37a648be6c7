"""Trust (issue #17, first part): a read-only sandboxed SQL shell, a catalog that waits for its other users,
files written with the user's umask, local acquisition without collisions, ids that cannot leave folders."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from hepwb.catalog import Catalog
from hepwb.exceptions import CatalogBusyError

HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
con.execute("CREATE TABLE IF NOT EXISTS held (a INT)")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def _holder(tmp_path, path, seconds):
    script = tmp_path / "hold.py"
    script.write_text(HOLD)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "holding"
    return proc


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("DELETE FROM metrics WHERE true", "pass --write"),
        ("DROP TABLE runs", "pass --write"),
        ("COPY runs TO '{tmp}/out.csv'", "file system operations are disabled"),
        ("SELECT * FROM read_text('/etc/passwd')", "file system operations are disabled"),
        ("ATTACH '{tmp}/other.duckdb'", "file system operations are disabled"),
        ("INSTALL httpfs", "file system operations are disabled"),
    ],
)
def test_sql_is_read_only_and_sandboxed(tmp_path, monkeypatch, query, expected):
    from hepwb.cli import app

    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    r = CliRunner().invoke(app, ["sql", query.format(tmp=tmp_path)])
    assert r.exit_code == 2 and expected in r.output, r.output
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "other.duckdb").exists()
    ok = CliRunner().invoke(app, ["sql", "SELECT count(*) AS n FROM runs"])
    assert ok.exit_code == 0 and "n" in ok.output  # the tables are still there


def test_sql_write_is_deliberate(tmp_path, monkeypatch):
    from hepwb.cli import app

    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    runner = CliRunner()
    assert runner.invoke(app, ["sql", "--write", "INSERT INTO metrics VALUES ('r', 'm', 1.0)"]).exit_code == 0
    assert "1" in runner.invoke(app, ["sql", "SELECT count(*) AS n FROM metrics"]).output
    r = runner.invoke(app, ["sql", "--write", f"COPY metrics TO '{tmp_path}/never.csv'"])
    assert r.exit_code == 2 and not (tmp_path / "never.csv").exists()


def test_a_writer_waits_for_another_process_and_says_so(tmp_path, caplog):
    path = tmp_path / "catalog.duckdb"
    cat = Catalog(path)
    proc = _holder(tmp_path, path, 2.0)
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="hepwb.catalog"):
        cat.sql("INSERT INTO metrics VALUES ('run', 'recall@5', 0.5)", write=True)
    waited = time.monotonic() - start
    proc.communicate()
    assert waited > 0.5 and "waiting for the catalog" in caplog.text
    assert cat.sql("SELECT value FROM metrics")["value"].tolist() == [0.5]  # no row lost


@pytest.mark.heavy
def test_a_catalog_held_too_long_names_the_holder(tmp_path, monkeypatch):
    path = tmp_path / "catalog.duckdb"
    Catalog(path)
    monkeypatch.setenv("HEPWB_CATALOG_WAIT_S", "0.5")
    proc = _holder(tmp_path, path, 3.0)
    try:
        with pytest.raises(CatalogBusyError, match=r"stayed locked by another process .*PID"):
            Catalog(path).sql("SELECT 1", write=True)
    finally:
        proc.communicate()


def test_files_are_written_with_the_users_umask(tmp_path):
    from hepwb.files.io import write_json

    old = os.umask(0o002)
    try:
        write_json(tmp_path / "shared.json", {"a": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "shared.json").stat().st_mode & 0o777 == 0o664


def test_local_acquisition_never_maps_two_sources_to_one_file(tmp_path):
    from hepwb.acquisition.acquire_corpus import acquire_corpus
    from hepwb.text.ids import file_sha256
    from tests.helpers import PDF_DIR

    if not PDF_DIR.is_dir():
        pytest.skip("needs ../shared/corpus/papers/pdf (real PDFs to acquire)")
    src = tmp_path / "inbox"
    src.mkdir()
    pdfs = sorted(PDF_DIR.glob("*.pdf"))[:3]
    for name, pdf in zip(("A_same.pdf", "B_same.pdf", "G_.pdf"), pdfs, strict=True):
        (src / name).write_bytes(pdf.read_bytes())
    res = acquire_corpus(tmp_path / "out", source="local", folder=str(src), sources=False)
    files = sorted(p.name for p in res.corpus.iterdir())
    assert res.n_ok == 3 and len(files) == 3 and not any(f.startswith(".") for f in files), files
    acq = json.loads((tmp_path / "out" / "acquisition_output.json").read_text())
    for d in acq["acquired_documents"]:  # the manifest matches the bytes on disk
        assert file_sha256(tmp_path / "out" / d["local_path"]) == d["file_hash_sha256"]
    assert sorted(file_sha256(p) for p in res.corpus.iterdir()) == sorted(file_sha256(p) for p in pdfs)
    pids = [p["pid"] for p in json.loads((tmp_path / "out" / "papers.json").read_text())["papers"]]
    assert len(set(pids)) == len(pids) == 3


def test_ids_from_files_cannot_leave_their_folders(tmp_path, caplog):
    from hepwb.corpus import ingest
    from hepwb.paths import Layout
    from tests.helpers import tiny_corpus

    corpus, _ = tiny_corpus(tmp_path)
    outside = tmp_path / "outside-secret"
    outside.mkdir()
    (outside / "main.tex").write_text("\\\\documentclass{article}\\\\begin{document}secret\\\\end{document}")
    (corpus / "papers.json").write_text(
        json.dumps(
            {
                "papers": [
                    {"pdf": "A01_dvcs.md", "pid": "../../../../outside/ESCAPED"},
                    {"pdf": "B02_jets.md", "pid": "B02", "tex": "../../outside-secret"},
                ]
            }
        )
    )
    home = tmp_path / "home"
    with caplog.at_level(logging.WARNING):
        docs = ingest(corpus, layout=Layout(home), progress=False)
    assert sorted(d.label for d in docs) == ["A01", "B02", "C03"]
    assert "not a plain name" in caplog.text and "ignoring 'tex'" in caplog.text
    assert not list(tmp_path.glob("**/ESCAPED*")) and not (tmp_path / "outside").exists()
    written = list(tmp_path.rglob("document.json"))
    assert written and all(p.resolve().is_relative_to(home.resolve()) for p in written)
    assert all("secret" not in d.markdown for d in docs)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"chunk_size": 1_000_000_000}, "chunk_size is a whole number of tokens from 8 to 32768"),
        ({"chunk_size": 0}, "chunk_size is"),
        (
            {"k": 1_000_000_000},
            "k is the number of chunks retrieved per question, a whole number from 1 to 1000",
        ),
        ({"k": 0}, "k is"),
    ],
)
def test_every_parameter_is_bounded(params, expected):
    from hepwb.exceptions import ConfigError
    from hepwb.experiment.config import ExperimentConfig

    with pytest.raises(ConfigError, match=expected):
        ExperimentConfig.from_params(**params)


def test_questions_are_bounded_before_they_reach_the_search_engine(tmp_path):
    from hepwb.evaluation import load_questions
    from hepwb.exceptions import ConfigError
    from hepwb.retrieval.bm25 import fts_rows

    f = tmp_path / "q.jsonl"
    f.write_text(
        json.dumps(
            {
                "qid": "q1",
                "question": "x" * 5000,
                "answer": "-",
                "evidence": [{"doc": "P01", "page": 1, "quote": "abc"}],
            }
        )
        + "\n"
    )
    with pytest.raises(ConfigError, match=r"q.jsonl line 1: the question has 5000 characters; at most 4000"):
        load_questions(f)
    with pytest.raises(ConfigError, match="too long; at most 4000"):
        fts_rows(None, "y" * 10_000_000, 5)  # refused before LanceDB sees it (it aborted natively before)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            b'{"qid": "q1", "question": "caf\xe9?", "answer": "a", "evidence": []}\n',
            r"line 1: byte 0xe9 is not UTF-8",
        ),
        (b"", "holds no questions"),
        (b"\n\n", "holds no questions"),
    ],
)
def test_question_files_that_cannot_be_read_name_the_line_and_the_fix(tmp_path, content, expected):
    from hepwb.evaluation import load_questions
    from hepwb.exceptions import ConfigError

    f = tmp_path / "q.jsonl"
    f.write_bytes(content)
    with pytest.raises(ConfigError, match=expected):
        load_questions(f)


def test_a_run_cleared_by_a_killed_rerun_leaves_the_catalog_and_the_report(tmp_path):
    """A re-run clears metrics.json before writing the new one; killed in between, the folder no longer
    backs the recorded run: the next sync drops its rows (the report then lists it no more), and the
    finished re-run is recorded again. A folder that is gone altogether (a moved project) is left alone."""
    from hepwb.experiment import ExperimentConfig, run_experiment
    from hepwb.paths import Layout
    from tests.helpers import tiny_corpus

    corpus, questions = tiny_corpus(tmp_path)
    layout = Layout(tmp_path)
    cfg = ExperimentConfig.from_params(corpus=str(corpus), questions=str(questions), chunk_size=48,
                                       retriever="bm25")  # fmt: skip
    res = run_experiment(cfg, layout=layout, progress=False)
    cat = Catalog(layout.catalog)
    assert cat.sync_runs(layout.runs) == [res.record.run_id]
    (res.run_dir / "metrics.json").unlink()  # what SIGKILL between "clear" and "write" leaves
    assert cat.sync_runs(layout.runs) == []
    assert cat.sql("SELECT count(*) AS n FROM runs")["n"].iloc[0] == 0
    assert cat.sql("SELECT count(*) AS n FROM metrics")["n"].iloc[0] == 0
    again = run_experiment(cfg, layout=layout, progress=False)
    assert cat.sync_runs(layout.runs) == [again.record.run_id]
    # killed after writing a forced re-run's results but before recording them: the catalog row is older
    # than the folder's metrics.json; the next sync replaces it with the folder's
    recorded = cat.sql("SELECT created FROM runs")["created"].iloc[0]
    forced = cfg.model_copy(update={"run_dir": str(res.run_dir)})
    rerun = run_experiment(forced, layout=layout, progress=False, reuse=False)  # forced: not read back
    assert rerun.record.created != recorded
    assert cat.sync_runs(layout.runs) == [rerun.record.run_id]
    assert cat.sql("SELECT created FROM runs")["created"].tolist() == [rerun.record.created]
    moved = res.run_dir.with_name("moved")
    res.run_dir.rename(moved)
    assert cat.forget_replaced_runs() == [] and cat.has_run(again.record.run_id)
