"""Store-backed sweeps in this process (serial executor) against a ``file://`` store: what goes where.

The real servers (SeaweedFS, workers that cannot see the client's folder) are in
``tests/integration/test_sweep_store.py``; here the logic: inputs published, a cell keyed and recorded as
the client's, failures remembered by the client, the project setting, one-line refusals.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hepwb.corpus import failure_marker
from hepwb.exceptions import ConfigError
from hepwb.paths import Layout
from hepwb.runs.record import RunRecord
from hepwb.store import ArtefactStore, StoreError
from hepwb.sweep import SweepSpec, run_sweep
from hepwb.sweep.store_client import corpus_bundle
from tests.helpers import run_main, tiny_corpus

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("store-sweep")
    corpus, questions = tiny_corpus(root)
    (corpus / "Z09_broken.md").write_bytes(b"# Broken\n\n\xff\xfe not UTF-8\n")  # its conversion fails
    return root, {"corpus": str(corpus), "questions": str(questions), "tokenizer": "words"}


def _spec(base: dict) -> SweepSpec:
    return SweepSpec.from_dict(
        {"name": "s", **base, "grid": {"chunk_size": [32], "retriever": ["bm25", "dense"]}}
    )


def test_a_store_backed_sweep_equals_the_local_one_and_keeps_the_clients_keys(tiny):
    root, base = tiny
    local = run_sweep(
        _spec(base), layout=Layout(root / "local"), executor="serial", progress=False, store="local"
    )
    url = f"file://{root}/store"
    layout = Layout(root / "client")
    res = run_sweep(_spec(base), layout=layout, executor="serial", progress=False, store=url)
    assert not res.failed and len(res.computed) == 2
    assert [o.detail["summary"] for o in res.cells] == [o.detail["summary"] for o in local.cells]
    store = ArtefactStore(url)
    kinds = ("corpus", "questions", "document", "chunkset", "table", "run")
    assert [len(store.published(k)) for k in kinds] == [1, 1, 3, 1, 1, 2]
    for cell, mine in zip(res.plan.cells, local.plan.cells, strict=True):
        rec, ref = RunRecord.load(cell.run_dir), RunRecord.load(mine.run_dir)
        assert rec.cell_key == cell.key == ref.cell_key and rec.config == ref.config
        assert rec.config_hash == ref.config_hash and rec.inputs.questions_file == base["questions"]
        assert rec.chunkset_root == str(layout.chunksets / rec.chunkset_id)
        assert str(layout.root) in (cell.run_dir / "rerun.sh").read_text()  # this project's command
    # the failing paper is remembered here, as by a local sweep, and left out of every stage
    (broken,) = [f for cp in res.plan.corpora.values() for f in cp.failed]
    assert failure_marker(layout, broken.conversion_key).is_file()
    (failed,) = [o for o in res.stages if o.stage == "convert" and o.key == broken.conversion_key]
    assert not failed.ok and str(broken.path) in failed.error and "hepwb-scratch" not in failed.error
    assert str(broken.path) in failure_marker(layout, broken.conversion_key).read_text()
    assert set(res.moved) >= {"plan", "inputs", "convert", "chunkset", "embed", "index", "cell", "fetch"}
    assert not (layout.lancedb).exists()  # no embedding cache here: vectors went to the store per table
    again = run_sweep(_spec(base), layout=layout, executor="serial", progress=False, store=url)
    assert again.executor == "none" and not again.computed


def test_the_project_setting_names_the_store_and_local_overrides_it(tiny, monkeypatch):
    root, base = tiny
    monkeypatch.delenv("HEPWB_STORE", raising=False)
    layout = Layout(root / "configured")
    layout.root.mkdir()
    (layout.root / "hepwb-store.json").write_text(json.dumps({"url": f"file://{root}/store2"}))
    spec = SweepSpec.from_dict({"name": "p", **base, "grid": {"chunk_size": [48], "retriever": ["bm25"]}})
    res = run_sweep(spec, layout=layout, executor="serial", progress=False)
    assert len(ArtefactStore(f"file://{root}/store2").published("run")) == 1 and res.moved
    local = run_sweep(spec, layout=Layout(root / "configured-local"), executor="serial", progress=False,
                      store="local")  # fmt: skip
    assert not local.moved and [o.detail["summary"] for o in local.cells] == [
        o.detail["summary"] for o in res.cells
    ]


def test_half_written_and_damaged_runs_are_never_read(tiny):
    root, base = tiny
    url = f"file://{root}/store3"
    spec = SweepSpec.from_dict({"name": "h", **base, "grid": {"chunk_size": [40], "retriever": ["bm25"]}})
    first = run_sweep(spec, layout=Layout(root / "h1"), executor="serial", progress=False, store=url)
    (cell,) = first.plan.cells
    store = ArtefactStore(url)
    body = store.manifest("run", cell.key)
    assert body is not None
    # a second project: a half-written attempt lies beside the published one; only the latter is read
    store.fs.pipe_file(f"{store.root}/objects/run/{cell.key}/dead00000000/reports/runs/{cell.name}/metrics.json",
                       b'{"half')  # fmt: skip
    other = run_sweep(spec, layout=Layout(root / "h2"), executor="serial", progress=False, store=url)
    assert other.executor == "none" and other.cells[0].detail["summary"] == first.cells[0].detail["summary"]
    # damaged in the store: refused in one line naming the manifest to delete, never read
    Path(store.root, body["base"], f"reports/runs/{cell.name}/hits.parquet").write_bytes(b"damaged")
    with pytest.raises(StoreError, match=r"does not match its manifest manifests/run/"):
        run_sweep(spec, layout=Layout(root / "h3"), executor="serial", progress=False, store=url)
    assert not (Layout(root / "h3").runs / cell.name).exists()


def test_chunk_sets_and_tables_are_built_under_a_store_lease_released_after(tiny, monkeypatch):
    import hepwb.sweep.store_tasks as store_tasks

    root, base = tiny
    url = f"file://{root}/store-lease"
    taken = []
    real = store_tasks.lease

    def spy(store, name, what, **kw):
        taken.append(name)
        return real(store, name, what, **kw)

    monkeypatch.setattr(store_tasks, "lease", spy)
    spec = SweepSpec.from_dict({"name": "l", **base, "grid": {"chunk_size": [36], "retriever": ["bm25"]}})
    res = run_sweep(spec, layout=Layout(root / "lease"), executor="serial", progress=False, store=url)
    assert not res.failed
    store = ArtefactStore(url)
    (cs_key,) = store.published("chunkset")
    (table_key,) = store.published("table")
    assert taken == [f"chunkset-{cs_key}", f"table-{table_key}"]
    assert not list(Path(store.root, "locks").glob("*.json"))  # released


def test_corpus_bundle_carries_the_sidecar_and_latex_sources(tmp_path):
    papers = tmp_path / "papers"
    (papers / "pdf").mkdir(parents=True)
    (papers / "tex" / "P01_src").mkdir(parents=True)
    (papers / "pdf" / "P01_a.pdf").write_bytes(b"%PDF-1.4 one")
    (papers / "pdf" / "P02_b.md").write_text("# two\n")
    (papers / "tex" / "P01_src" / "main.tex").write_text("\\section{x}")
    (papers / "tex" / "unused").mkdir()
    (papers / "tex" / "unused" / "other.tex").write_text("no")
    (papers / "papers.json").write_text(
        json.dumps({"papers": [{"pid": "P01", "pdf": "P01_a.pdf", "tex": "P01_src"}]})
    )
    files, sub = corpus_bundle(papers / "pdf")
    assert sub == "pdf"
    assert sorted(files) == ["papers.json", "pdf/P01_a.pdf", "pdf/P02_b.md", "tex/P01_src/main.tex"]


def test_notebooks_and_halving_refuse_a_store_in_one_line(tiny, tmp_path):
    _, base = tiny
    with pytest.raises(ConfigError, match="--notebooks runs cells on a shared file system"):
        run_sweep(_spec(base), layout=Layout(tmp_path), executor="serial", notebooks=True,
                  store=f"file://{tmp_path}/s")  # fmt: skip
    out = subprocess.run([BIN / "hepwb", "sweep", "--search", "halving", "--store", f"file://{tmp_path}/s"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 2 and out.stderr.strip().endswith("add --store local"), out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_sweep_help_shows_the_store_option_and_a_bad_url_is_one_line(tmp_path):
    env = {**os.environ, "COLUMNS": "200"}
    out = subprocess.run(
        [BIN / "hepwb", "sweep", "--help"], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0 and "--store" in out.stdout and "s3://BUCKET/PREFIX" in out.stdout
    bad = subprocess.run([BIN / "hepwb", "sweep", "--store", "s3://KEY:SECRET@bucket/x", "--dry-run"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "holds credentials" in bad.stderr and "SECRET" not in bad.stderr


@pytest.mark.heavy
def test_a_canary_credential_reaches_no_artefact_of_a_store_backed_sweep(tmp_path):
    import yaml

    corpus, questions = tiny_corpus(tmp_path)
    (corpus / "P09_environ.md").symlink_to("/proc/self/environ")  # the process's credentials, as a paper
    canary = "hepwbCANARYsecret0123456789"
    spec = tmp_path / "grid.yaml"
    grid = {"chunk_size": [32], "retriever": ["bm25"]}
    body = {"name": "c", "corpus": str(corpus), "questions": str(questions), "tokenizer": "words"}
    spec.write_text(yaml.safe_dump({**body, "grid": grid}))
    env = {**os.environ, "HEPWB_HOME": str(tmp_path / "home"), "AWS_SECRET_ACCESS_KEY": canary,
           "AWS_ACCESS_KEY_ID": "hepwbCANARYid"}  # fmt: skip
    store = tmp_path / "store"
    out = subprocess.run(
        [BIN / "hepwb", "sweep", str(spec), "--executor", "serial", "--store", f"file://{store}"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert "P09_environ.md" in out.stderr and "/proc" in out.stderr  # named, not read
    for root in (store, tmp_path / "home"):
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                assert canary.encode() not in path.read_bytes(), path


def test_a_store_folder_that_cannot_be_made_is_one_line(home, monkeypatch, capsys):
    corpus = home / "c"
    corpus.mkdir()
    (corpus / "P01_a.md").write_text("# A\n\nThe W boson and Z boson backgrounds are small.\n")
    questions = home / "q.jsonl"
    quote = "The W boson and Z boson backgrounds are small."
    questions.write_text(
        json.dumps({"qid": "Q1", "question": "Which?", "evidence": [{"doc": "P01", "quote": quote}]})
    )
    sweep = home / "s.yaml"
    sweep.write_text(
        f"corpus: {corpus}\nquestions: {questions}\ntokenizer: words\ngrid: {{chunk_size: [64]}}\n"
    )
    code, _, err = run_main(
        monkeypatch, capsys, "sweep", str(sweep), "--executor", "serial", "--store", "file:///proc/self/x"
    )
    assert code == 2 and "its folder cannot be made" in err and len(err.strip().splitlines()) == 1
