"""The bad-input matrix (issue #17): every bad question file, parameter and corpus given to `hepwb evaluate`
exits with status 2 and one message naming the file (and line or field) and the fix; nothing finished before
(run folders, catalog rows) changes."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hepwb.catalog import Catalog
from hepwb.cli import app
from hepwb.paths import Layout
from tests.helpers import tiny_corpus

QUOTE = "measured the beam-spin asymmetry in deeply virtual"
GOOD = {"qid": "x1", "question": "What did HERMES measure?", "answer": "-",
        "evidence": [{"doc": "A01", "page": 1, "quote": QUOTE}]}  # fmt: skip


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A project with one finished evaluation recorded in the catalog."""
    root = tmp_path_factory.mktemp("matrix")
    corpus, questions = tiny_corpus(root)
    old = os.environ.get("HEPWB_HOME")
    os.environ["HEPWB_HOME"] = str(root)
    try:
        r = CliRunner().invoke(app, [*_base(corpus, questions)])
        assert r.exit_code == 0, r.output
        layout = Layout(root)
        (run_dir,) = [p.parent for p in layout.runs.rglob("metrics.json")]
        Catalog(layout.catalog).record_run(run_dir)
        yield root, corpus, questions
    finally:
        if old is None:
            os.environ.pop("HEPWB_HOME", None)
        else:
            os.environ["HEPWB_HOME"] = old


def _base(corpus: Path, questions: Path) -> list[str]:
    return ["evaluate", "--corpus", str(corpus), "--questions", str(questions), "--chunk-size", "48",
            "--retriever", "bm25"]  # fmt: skip


def _state(root: Path) -> tuple[object, ...]:
    """What a failed invocation must leave alone: catalog rows and every finished run file's bytes."""
    lay = Layout(root)
    counts = (
        Catalog(lay.catalog)
        .sql(
            "SELECT (SELECT count(*) FROM runs) AS runs, (SELECT count(*) FROM metrics) AS metrics, "
            "(SELECT count(*) FROM hits) AS hits"
        )
        .iloc[0]
    )
    files = {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(lay.runs.rglob("*"))
        if p.is_file()
    }
    return tuple(int(v) for v in counts), files


def _lines(*records: object) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


QUESTION_FILES = {
    # name: (file name, content, what the message must say besides the file name)
    "empty": ("q.jsonl", b"", "empty"),
    "not-json": ("q.jsonl", _lines(GOOD) + b'{"qid": "x2", "question": \n', "line 2"),
    "non-utf8": ("q.jsonl", _lines(GOOD) + b'{"qid": "x2\xff\xfe"}\n', "line 2"),
    "duplicate-qid": ("q.jsonl", _lines(GOOD, GOOD), "x1"),
    "missing-field": ("q.jsonl", _lines({"qid": "x3", "question": "Where?"}), "evidence"),
    "csv-wrong-columns": ("q.csv", b"name,text\nx1,What did HERMES measure?\n", "column"),
    "unknown-document": (
        "q.jsonl",
        _lines(
            {**GOOD, "evidence": [{"doc": "Z99", "page": 1, "quote": "a quote from nowhere at all here"}]}
        ),
        "evidence[0].doc",
    ),
    "huge-question": ("q.jsonl", _lines({**GOOD, "question": "why " * 2000}), "characters"),
}


@pytest.mark.parametrize("case", list(QUESTION_FILES))
def test_bad_question_files(home, tmp_path, case):
    root, corpus, _ = home
    name, content, hint = QUESTION_FILES[case]
    bad = tmp_path / name
    bad.write_bytes(content)
    before = _state(root)
    r = CliRunner().invoke(app, _base(corpus, bad))
    assert r.exit_code == 2, r.output
    assert str(bad) in r.output and hint in r.output, r.output
    assert r.output.count("error:") == 1 and "Traceback" not in r.output
    assert _state(root) == before


def test_a_question_file_over_the_size_bound_is_refused_before_reading(home, tmp_path):
    _, corpus, _ = home
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as fh:
        fh.truncate(60 * 10**6)  # sparse: 60 MB on paper, nothing on disk
    r = CliRunner().invoke(app, _base(corpus, huge))
    assert r.exit_code == 2 and str(huge) in r.output and "MB" in r.output, r.output


PARAMETERS = {
    "chunk-size-zero": (["--chunk-size", "0"], "chunk_size"),
    "chunk-size-negative": (["--chunk-size", "-5"], "chunk_size"),
    "chunk-size-absurd": (["--chunk-size", "1000000000"], "chunk_size"),
    "overlap-one": (["--chunk-overlap", "1.0"], "overlap"),
    "overlap-negative": (["--chunk-overlap", "-0.1"], "overlap"),
    "unknown-chunker": (["--chunker", "nope"], "hepilot"),
    "unknown-retriever": (["--retriever", "nope"], "bm25"),
    "unknown-model": (
        ["--retriever", "dense", "--embedding-model", "no-such/model-xyz"],
        "no-such/model-xyz",
    ),
    "k-zero": (["--k", "0"], "k"),
    "k-absurd": (["--k", "1000000000"], "k"),
}


@pytest.mark.parametrize("case", list(PARAMETERS))
def test_bad_parameters(home, case):
    root, corpus, questions = home
    extra, hint = PARAMETERS[case]
    before = _state(root)
    r = CliRunner().invoke(app, [*_base(corpus, questions), *extra])
    assert r.exit_code == 2, r.output
    assert hint in r.output and r.output.count("error:") == 1 and "Traceback" not in r.output, r.output
    assert _state(root) == before


def test_missing_corpus_and_malformed_papers_json(home, tmp_path):
    root, corpus, questions = home
    before = _state(root)
    r = CliRunner().invoke(app, _base(tmp_path / "nowhere", questions))
    assert r.exit_code == 2 and str(tmp_path / "nowhere") in r.output and "--corpus" in r.output, r.output
    messy = tmp_path / "corpus"
    messy.mkdir()
    for f in corpus.iterdir():
        (messy / f.name).write_bytes(f.read_bytes())
    (messy / "papers.json").write_text('{"papers": [{"pid": "A01",')
    r = CliRunner().invoke(app, _base(messy, questions))
    assert r.exit_code == 2 and str(messy / "papers.json") in r.output and "JSON" in r.output, r.output
    assert _state(root) == before


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupt_cached_artefacts_are_named_and_rebuilt(tmp_path, caplog, damage):
    """A truncated or overwritten cached document.json, full_document.md or chunks.parquet is rebuilt."""
    from hepwb.experiment import build_chunkset, ingest
    from hepwb.hepilot import ProcessingLog

    corpus, _ = tiny_corpus(tmp_path)
    layout = Layout(tmp_path / "home")
    docs = ingest(corpus, layout=layout, progress=False)
    cs = build_chunkset(docs, layout=layout, progress=False, chunk_size=48, tokenizer="words")

    def spoil(path: Path) -> None:
        data = path.read_bytes()
        path.write_bytes(
            {"truncate": data[: len(data) // 2], "garbage": b"\x00not it\xff", "empty": b""}[damage]
        )

    cached = sorted(layout.interim.glob("*/document.json"))
    spoil(cached[0])
    spoil(sorted(layout.interim.glob("*/full_document.md"))[1])
    spoil(cs.root / "chunks.parquet")
    log = ProcessingLog()
    with caplog.at_level("WARNING"):
        again = ingest(corpus, layout=layout, progress=False, log=log)
        cs2 = build_chunkset(again, layout=layout, log=log, progress=False, chunk_size=48, tokenizer="words")
    assert [(d.document_id, d.markdown) for d in again] == [(d.document_id, d.markdown) for d in docs]
    assert [c.text for c in cs2.chunks] == [c.text for c in cs.chunks]
    assert str(cached[0]) in caplog.text and str(cs.root) in caplog.text
    assert sum("is unreadable" in e.message for e in log.entries) == 3
    assert not list(layout.interim.glob(".*corrupt*")) and not list(layout.chunksets.glob(".*corrupt*"))
