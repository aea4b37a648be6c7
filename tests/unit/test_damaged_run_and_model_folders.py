"""Findings of the seventh hostile-input probe (issue 38) in run folders, model folders and input files:
``hepwb export`` and the catalog reading a damaged ``hits.parquet``, a model folder naming custom code,
``validate`` following a link out of the tree, a 100,000-character qid, ``--credentials /dev/zero``. Each
reproduces the probe's input with real files and the real CLI."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pandas as pd
import pytest

from hepwb import limits
from hepwb.evaluation.questions import load_questions, question_schema
from tests.helpers import run_main


def _project(root: Path, sizes: tuple[int, ...]) -> list[Path]:
    """bm25 runs over the three tiny markdown papers at ``sizes`` tokens; their run folders."""
    from hepwb.experiment.config import ExperimentConfig
    from hepwb.experiment.run import run_experiment
    from hepwb.paths import Layout
    from tests.helpers import tiny_corpus

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HEPWB_HOME", str(root))
        mp.chdir(root)
        corpus, questions = tiny_corpus(root)
        runs = []
        for size in sizes:
            cfg = ExperimentConfig.from_params(
                corpus=str(corpus), questions=str(questions), chunk_size=size, retriever="bm25", k=5
            )
            runs.append(run_experiment(cfg, layout=Layout(root), progress=False).run_dir)
    return runs


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("probe7-export")
    return root, _project(root, (48,))[0]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _damage(run_dir: Path, how) -> bytes:
    """Rewrite ``run_dir/hits.parquet`` through ``how`` (frame to frame); returns the sound file's bytes."""
    hits = run_dir / "hits.parquet"
    good = hits.read_bytes()
    how(pd.read_parquet(hits)).to_parquet(hits)
    return good


def _text_score(d: pd.DataFrame) -> pd.DataFrame:
    d["score"] = d["score"].astype(str)
    d.loc[0, "score"] = "x"
    return d


def _set(column: str, value):
    def how(d: pd.DataFrame) -> pd.DataFrame:
        d.loc[0, column] = value
        return d

    return how


def _skip_a_rank(d: pd.DataFrame) -> pd.DataFrame:
    d.loc[d.index[-1], "rank"] += 5
    return d


def _int_qids(d: pd.DataFrame) -> pd.DataFrame:
    d["qid"] = range(len(d))
    return d


# F3 and M3: export wrote a TREC run hepwb's own reader refuses (duplicate rows, exit 0), or crashed (exit 3)


@pytest.mark.parametrize(
    ("how", "says"),
    [
        (lambda d: pd.concat([d, d]), "ranks chunk"),  # F3: every row twice
        (_text_score, "column 'score' holds large_string, not floats"),  # M3
        (_set("rank", 2**62), f"rank {2**62} is not a whole number from 1 to {2**31 - 1}"),
        (_set("rank", -1), "rank -1 is not a whole number from 1"),
        (_set("score", math.nan), "column 'score' has 1 empty value(s)"),  # pandas writes NaN as null
        (_set("score", math.inf), "a score is not a finite number"),
        (_skip_a_rank, "are not 1 to"),
        (_int_qids, "column 'qid' holds int64, not text"),
    ],
    ids=["duplicated", "text-score", "rank-2**62", "rank-1", "nan", "inf", "rank-gap", "int-qid"],
)
def test_export_of_damaged_hits_is_one_line_naming_file_and_rebuild_and_writes_nothing(
    one_run, monkeypatch, capsys, how, says
):
    root, run_dir = one_run
    monkeypatch.setenv("HEPWB_HOME", str(root))
    monkeypatch.chdir(root)
    good = _damage(run_dir, how)
    try:
        code, _, err = run_main(monkeypatch, capsys, "export", str(run_dir), "ex")
    finally:
        (run_dir / "hits.parquet").write_bytes(good)
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: {run_dir / 'hits.parquet'} is damaged (")
    assert says in line
    assert line.endswith(f"rebuild the run with: bash {run_dir / 'rerun.sh'}, then export")
    assert not (root / "ex").exists()
    assert not list(root.glob(".ex.partial-*"))


def test_a_failed_export_leaves_an_existing_folder_as_it_was(one_run, monkeypatch, capsys):
    root, run_dir = one_run
    monkeypatch.setenv("HEPWB_HOME", str(root))
    monkeypatch.chdir(root)
    out = root / "kept"
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "keep.txt").write_text("mine\n")
    (out / "runs" / "old.trec").write_text("q 0 d 1 1.0 old\n")
    before = _files(out)
    good = _damage(run_dir, _set("chunk_id", "a b"))  # refused by the TREC writer, after topics and qrels
    try:
        code, _, err = run_main(monkeypatch, capsys, "export", str(run_dir), str(out))
    finally:
        (run_dir / "hits.parquet").write_bytes(good)
    assert code == 2, err
    assert "cannot be a column of a TREC file" in err
    assert _files(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
    code, stdout, err = run_main(monkeypatch, capsys, "export", str(run_dir), str(out))
    assert code == 0, err
    after = _files(out)
    assert after["keep.txt"] == b"mine\n" and "runs/old.trec" in after
    assert "manifest.json" in after and f"runs/{run_dir.name}.trec" in after and "topics.tsv" in after
    assert f"into {out}" in stdout
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


# M4: one run's damaged hits.parquet (rank 2**62) stopped the whole report with exit 3, naming no run


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("probe7-report")
    return root, _project(root, (48, 64))


def test_sync_skips_a_damaged_run_with_one_line_and_records_the_others(two_runs, caplog):
    from hepwb.catalog import Catalog
    from hepwb.paths import Layout

    root, (bad, ok) = two_runs
    layout = Layout(root)
    layout.catalog.unlink(missing_ok=True)
    good = _damage(bad, _set("rank", 2**62))
    try:
        with caplog.at_level(logging.WARNING, logger="hepwb"):
            cat = Catalog(layout.catalog)
            recorded = cat.sync_runs(layout.runs)
    finally:
        (bad / "hits.parquet").write_bytes(good)
    (line,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.startswith(f"skipped run {bad.name}: {bad / 'hits.parquet'} is damaged (rank {2**62} ")
    assert line.endswith(f"rebuild the run with: bash {bad / 'rerun.sh'}")
    runs = cat.sql("SELECT run_id, run_dir FROM runs")
    assert recorded == list(runs["run_id"]) and list(runs["run_dir"]) == [str(ok)]
    assert cat.sql("SELECT count(*) AS n FROM hits")["n"].iloc[0] > 0
    assert len(cat.sync_runs(layout.runs)) == 1  # the sound file is back: it is recorded next time
    assert set(cat.sql("SELECT run_dir FROM runs")["run_dir"]) == {str(bad), str(ok)}


def test_recording_a_run_with_a_damaged_per_question_file_names_it_and_records_nothing(two_runs):
    from hepwb.catalog import Catalog
    from hepwb.paths import Layout
    from hepwb.runs.folder import DamagedRunError

    root, (bad, _) = two_runs
    layout = Layout(root)
    layout.catalog.unlink(missing_ok=True)
    per_q = bad / "per_question.parquet"
    good = per_q.read_bytes()
    per_q.write_bytes(good[:200])
    cat = Catalog(layout.catalog)
    try:
        with pytest.raises(DamagedRunError) as info:
            cat.record_run(bad)
    finally:
        per_q.write_bytes(good)
    assert str(info.value).startswith(f"{per_q} is damaged (")
    assert str(info.value).endswith(f"rebuild the run with: bash {bad / 'rerun.sh'}")
    for table in ("runs", "metrics", "question_results", "hits"):
        assert cat.sql(f"SELECT count(*) AS n FROM {table}")["n"].iloc[0] == 0, table


@pytest.mark.slow
def test_report_renders_the_other_runs_and_says_which_was_skipped(two_runs, monkeypatch, capsys, caplog):
    from hepwb.paths import Layout

    root, (bad, _) = two_runs
    monkeypatch.setenv("HEPWB_HOME", str(root))
    monkeypatch.chdir(root)
    Layout(root).catalog.unlink(missing_ok=True)
    good = _damage(bad, _set("rank", 2**62))
    try:
        with caplog.at_level(logging.WARNING, logger="hepwb"):
            code, out, err = run_main(monkeypatch, capsys, "report")
    finally:
        (bad / "hits.parquet").write_bytes(good)
    assert code == 0, err
    skipped = [r.getMessage() for r in caplog.records if "skipped run" in r.getMessage()]
    assert len(skipped) == 1 and bad.name in skipped[0] and "rerun.sh" in skipped[0]
    html = (root / "reports" / "report.html").read_text(encoding="utf-8")
    assert f"skipped run {bad.name}: " in html
    assert "1 run(s) of sweep" in html
    assert f"report: {root / 'reports' / 'report.html'}" in out


# M7: a model folder naming custom code in modules.json was exit 3 after 11 s (no code ran)


@pytest.mark.parametrize("given", ["absolute", "relative", "adapted"])
def test_a_model_folder_naming_custom_code_is_refused_before_any_work(home, monkeypatch, capsys, given):
    from tests.helpers import tiny_corpus

    corpus, questions = tiny_corpus(home)
    name = "evilmodel"
    folder = {
        "absolute": home / name,
        "relative": home / name,
        "adapted": home / "proj" / "data" / "models" / name,
    }[given]
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"")
    (folder / "modules.json").write_text(
        json.dumps([{"idx": 0, "name": "0", "path": "", "type": "evilmod.Evil"}])
    )
    marker = home / "PWNED"
    (folder / "evilmod.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n")
    model = str(folder) if given == "absolute" else name
    code, _, err = run_main(
        monkeypatch, capsys, "evaluate", "--corpus", str(corpus), "--questions", str(questions),
        "--chunk-size", "64", "--retriever", "dense", "--embedding-model", model,
    )  # fmt: skip
    assert code == 2, err
    (line,) = err.strip().splitlines()
    shown = name if given == "relative" else str(folder)
    assert line == (
        f"error: embedding_model: model folder {shown} is not a plain sentence-transformers model "
        "(modules.json names custom code 'evilmod.Evil'); hepwb never runs a model's code"
    )
    assert not marker.exists()
    assert not (home / "proj" / "reports" / "runs").exists()


def test_a_plain_model_folder_passes_the_check(home):
    from hepwb.models.tokenizers import model_problem, resolve_model_path

    folder = Path(resolve_model_path("all-MiniLM-L6-v2"))
    assert (folder / "modules.json").is_file()
    assert model_problem(str(folder)) is None


# Notes: validate followed a link out of the tree and read it


def test_validate_does_not_read_a_link_out_of_the_tree(tmp_path, monkeypatch, capsys):
    tree = tmp_path / "tree"
    doc = tree / "documents" / "P00"
    doc.mkdir(parents=True)
    (tree / "catalog.json").write_text("{}", encoding="utf-8")
    (doc / "tables.json").write_text('{"x": 1}', encoding="utf-8")
    secret = tmp_path / "secret.json"
    secret.write_text('{"token": "TOPSECRET"}', encoding="utf-8")
    (doc / "extra.json").symlink_to(secret)
    (doc / "inside.json").symlink_to(doc / "tables.json")  # a link within the tree is a file of it
    (doc / "nowhere.json").symlink_to(tmp_path / "missing.json")
    code, out, err = run_main(monkeypatch, capsys, "validate", str(tree))
    assert code == 1, err
    lines = out.splitlines()
    (extra,) = [line for line in lines if line.startswith("documents/P00/extra.json: ")]
    assert extra == (
        f"documents/P00/extra.json: a link to {secret}, outside the folder validated, not read: a HEPilot "
        "output tree holds its own files (put the file itself there)"
    )
    (nowhere,) = [line for line in lines if line.startswith("documents/P00/nowhere.json: ")]
    assert "a link that leads nowhere" in nowhere
    assert not any(
        line.startswith(("documents/P00/inside.json", "documents/P00/tables.json")) for line in lines
    )
    assert "TOPSECRET" not in out + err


# Notes: a qid of 100,000 characters was accepted and printed whole


def _question(qid: str) -> str:
    quote = "measured the beam-spin asymmetry in deeply virtual Compton scattering"
    return json.dumps({"qid": qid, "question": "What?", "evidence": [{"doc": "A01", "quote": quote}]}) + "\n"


def test_a_qid_over_the_cap_is_one_line_naming_file_line_and_fix(home, monkeypatch, capsys):
    from tests.helpers import tiny_corpus

    corpus, _ = tiny_corpus(home)
    path = home / "long.jsonl"
    path.write_text(_question("Q0") + _question("Q" * 100_000))
    code, out, err = run_main(monkeypatch, capsys, "questions", "check", str(path), "--corpus", str(corpus))
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line == (
        f"error: {path} line 2: field 'qid' is 100,000 characters long ({'Q' * 20!r}…); a qid names a "
        f"question in at most {limits.MAX_QID_CHARS} characters: give a shorter one"
    )
    assert len(out + err) < 1_000


def test_a_qid_at_the_cap_is_read_and_the_schema_says_the_cap(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(_question("Q" * limits.MAX_QID_CHARS))
    assert [len(q.qid) for q in load_questions(path)] == [limits.MAX_QID_CHARS]
    assert question_schema()["properties"]["qid"]["maxLength"] == limits.MAX_QID_CHARS


# Notes: `acquire --credentials /dev/zero` said "not found"


@pytest.mark.parametrize("given", ["/dev/zero", "folder"])
def test_credentials_that_are_no_regular_file_are_named_so_before_anything_is_written(
    home, monkeypatch, capsys, given
):
    (home / "folder").mkdir()
    code, _, err = run_main(
        monkeypatch, capsys, "acquire", "acq", "--query", "higgs", "--credentials", given,
        "--credential-id", "x", "--arxiv-url", "http://127.0.0.1:1/api",
    )  # fmt: skip
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line == (
        f"error: credentials file {given} is not a regular file (a folder, device or pipe); give the path of "
        "a credentials.json (git-ignored) or drop --credential-id"
    )
    assert not (home / "acq").exists()
