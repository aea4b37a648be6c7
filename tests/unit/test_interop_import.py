"""An IR collection becomes a hepwb corpus and question set (issue 42): a BEIR folder, or an ir_datasets
collection of local files. Documents are markdown files (ids that cannot name a file are renamed and listed,
identical texts merged), qrels become evidence quoting the relevant documents, every quote is located, and
what is left out is counted. Malformed files are one line naming the file and line, exit 2.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.interop import import_beir, import_local
from hepwb.interop.beir import write_beir

runner = CliRunner()

DOCS = [
    ("d1", "Jet calibration", "The jet energy scale is calibrated with photon plus jet events at 13 TeV."),
    (
        "<dbpedia:Jet_(physics)>",
        "Jet (physics)",
        "A jet is a narrow cone of hadrons produced by a quark or gluon.",
    ),
    ("d3", "Copy", "The jet energy scale is calibrated with photon plus jet events at 13 TeV."),  # d1's text
    ("d4", "Empty", " ... "),
    ("d5", "Neutrinos", "Reactor antineutrinos disappear: sin^2(2 theta13) is 0.084 at the far detector."),
]
QUERIES = {
    "q1": "How is the jet energy scale calibrated?",
    "q2": "What is a jet?",
    "q3": "What is measured at the far detector?",
    "q4": "A query judged only as not relevant",
    "q5": "A query whose relevant document is missing",
}
QRELS = {
    "q1": {"d1": 2, "<dbpedia:Jet_(physics)>": 1},
    "q2": {"<dbpedia:Jet_(physics)>": 1, "d3": 1},
    "q3": {"d5": 1},
    "q4": {"d1": 0},
    "q5": {"d-missing": 1},
}


@pytest.fixture
def beir(tmp_path):
    folder = tmp_path / "beir"
    write_beir(folder, [{"_id": i, "title": t, "text": x} for i, t, x in DOCS],
               [{"_id": q, "text": t} for q, t in QUERIES.items()], QRELS)  # fmt: skip
    return folder


def test_a_beir_folder_becomes_a_corpus_and_a_question_set_every_quote_located(beir, tmp_path, monkeypatch):
    done = import_beir(beir, tmp_path / "mine")
    assert (done.n_documents, done.n_questions) == (3, 3)
    assert done.skipped == {
        "documents repeating another's text (merged into it)": 1,
        "documents without a letter or digit": 1,
        "queries without a relevant document": 2,
        "judgements of documents not in the corpus": 1,
    }
    renamed = (tmp_path / "mine" / "docids.tsv").read_text().splitlines()
    jet = next(line.split("\t")[0] for line in renamed if line.endswith("\t<dbpedia:Jet_(physics)>"))
    assert jet.startswith("dbpedia-Jet--physics-") and "_" not in jet and "d1\td3" in renamed
    assert sorted(p.name for p in done.corpus.glob("*.md")) == sorted(["d1.md", f"{jet}.md", "d5.md"])
    assert (done.corpus / "d5.md").read_text() == DOCS[4][2]  # the text exactly, without pages
    papers = {p["pid"]: p for p in json.loads((done.corpus / "papers.json").read_text())["papers"]}
    assert papers[jet]["title"] == "Jet (physics)" and papers[jet]["source_id"] == "<dbpedia:Jet_(physics)>"
    questions = [json.loads(line) for line in done.questions.read_text().splitlines()]
    q1, q2, _ = questions
    assert q1["evidence"] == [{"doc": "d1", "quote": DOCS[0][2], "relevance": 2},
                              {"doc": jet, "quote": DOCS[1][2], "relevance": 1}]  # fmt: skip
    assert [e["doc"] for e in q2["evidence"]] == [jet, "d1"]  # d3's judgement went to d1, its identical text
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    res = runner.invoke(app, ["questions", "check", str(done.questions), "--corpus", str(done.corpus)])
    assert res.exit_code == 0, res.output
    assert "3 of 3 questions can be scored; every quote located" in res.output
    assert f"hepwb evaluate --corpus {done.corpus} --questions {done.questions}" in done.summary()


def test_an_ir_datasets_collection_of_local_files_imports_like_its_beir_folder(beir, tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    (files / "docs.tsv").write_text("".join(f"{i}\t{x}\n" for i, _, x in DOCS), encoding="utf-8")
    (files / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()), encoding="utf-8")
    (files / "qrels.txt").write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in QRELS.items() for d, r in docs.items()), encoding="utf-8"
    )
    local = import_local(tmp_path / "irds", files / "docs.tsv", files / "queries.tsv", files / "qrels.txt")
    folder = import_beir(beir, tmp_path / "from-beir")
    assert local.questions.read_text() == folder.questions.read_text()
    assert local.skipped == folder.skipped and local.n_documents == folder.n_documents
    assert sorted(p.read_text() for p in local.corpus.glob("*.md")) == sorted(
        p.read_text() for p in folder.corpus.glob("*.md")
    )


def _error(output: str) -> str:
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in output, output
    return errors[0]


def test_malformed_collections_are_one_line_naming_file_and_line(beir, tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    corpus = beir / "corpus.jsonl"
    lines = corpus.read_text().splitlines()
    corpus.write_text("\n".join([lines[0], '{"_id": "d9", "text": ', *lines[1:]]) + "\n")
    res = runner.invoke(app, ["import-beir", str(beir), str(tmp_path / "out")])
    assert res.exit_code == 2
    assert f"{corpus} line 2: invalid JSON" in _error(res.output)
    res = runner.invoke(app, ["import-beir", str(beir), str(tmp_path / "out2"), "--split", "dev"])
    assert res.exit_code == 2 and "has no qrels/dev.tsv; its splits are ['test']: choose one" in _error(
        res.output
    )
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    res = runner.invoke(app, ["import-beir", str(beir), str(tmp_path / "full")])
    assert res.exit_code == 2 and "exists and is not an empty folder" in _error(res.output)
    docs = tmp_path / "docs.tsv"
    docs.write_text("d1 no tab here\n")
    (tmp_path / "q.tsv").write_text("q1\twhat?\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    args = [
        "import-ir-datasets",
        str(tmp_path / "irds"),
        "--docs",
        str(docs),
        "--queries",
        str(tmp_path / "q.tsv"),
    ]
    res = runner.invoke(app, [*args, "--qrels", str(tmp_path / "qrels.txt")])
    assert res.exit_code == 2 and "ir_datasets cannot read it (expected 2 fields, got 1)" in _error(
        res.output
    )
    res = runner.invoke(app, [*args, "--qrels", str(tmp_path / "nope.txt")])
    assert res.exit_code == 2 and f"qrels file {tmp_path / 'nope.txt'} does not exist" in _error(res.output)


BOM = "\ufeff"
"""The byte-order mark a file saved as "UTF-8 with BOM" (Excel, Windows Notepad) opens with."""


def test_collection_files_opening_with_a_byte_order_mark_import_like_plain_ones(beir, tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    (files / "docs.tsv").write_text("".join(f"{i}\t{x}\n" for i, _, x in DOCS), encoding="utf-8-sig")
    (files / "queries.tsv").write_text(
        "".join(f"{q}\t{t}\n" for q, t in QUERIES.items()), encoding="utf-8-sig"
    )
    (files / "qrels.txt").write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in QRELS.items() for d, r in docs.items()),
        encoding="utf-8-sig",
    )
    assert all(p.read_bytes().startswith(b"\xef\xbb\xbf") for p in files.iterdir())
    local = import_local(tmp_path / "irds", files / "docs.tsv", files / "queries.tsv", files / "qrels.txt")
    plain = import_beir(beir, tmp_path / "from-beir")
    assert local.questions.read_text() == plain.questions.read_text()  # q1 judges d1: neither id keeps a BOM
    assert local.skipped == plain.skipped and local.n_documents == plain.n_documents
    assert sorted(p.name for p in local.corpus.glob("*.md")) == sorted(
        p.name for p in plain.corpus.glob("*.md")
    )
    # a BEIR folder whose three files open with a byte-order mark
    marked = tmp_path / "beir-bom"
    marked.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (marked / name).parent.mkdir(exist_ok=True)
        (marked / name).write_text(BOM + (beir / name).read_text(encoding="utf-8"), encoding="utf-8")
    again = import_beir(marked, tmp_path / "from-beir-bom")
    assert again.questions.read_text() == plain.questions.read_text() and again.skipped == plain.skipped
