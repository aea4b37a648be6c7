"""An IR collection becomes a hepwb corpus and question set (issue 42): a BEIR folder, or an ir_datasets
collection of local files. Documents are markdown files (ids that cannot name a file are renamed and listed,
identical texts merged), qrels become evidence quoting the relevant documents, every quote is located, and
what is left out is counted. Malformed files, and ids, splits, scores or texts that cannot be taken, are one
line naming the file and line, exit 2, and leave no folder behind; a query id too long for a question file is
skipped and said.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.interop import import_beir, import_local
from hepwb.interop.beir import BeirDoc, write_beir
from hepwb.interop.collection import write_collection
from tests.helpers import one_error_line, run_main

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


def _one_doc_beir(folder, *, text="The W boson background is small.", query="Which background is small?"):
    """A one-document BEIR folder (its split: ``qrels/test.tsv``); returns the folder."""
    (folder / "qrels").mkdir(parents=True)
    doc = json.dumps({"_id": "d1", "title": "T", "text": text})
    (folder / "corpus.jsonl").write_text(doc + "\n", encoding="utf-8")
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": query}) + "\n", encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("split", ["{outside}", "../../outside", "../qrels/test", "te\x1bst"])
def test_import_beir_refuses_a_split_that_is_no_name(home, monkeypatch, capsys, split):
    folder = _one_doc_beir(home / "b")
    (home / "outside.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    split = split.format(outside=home / "outside")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o", "--split", split)
    line = one_error_line(err)
    assert code == 2 and "qrels split name" in line and "is not a plain name" in line
    assert "are ['test']" in line and "\x1b" not in line  # the splits of b/qrels, and no escape echoed
    assert not (home / "o").exists()


def test_import_beir_names_the_splits_there_when_one_is_missing(home, monkeypatch, capsys):
    folder = _one_doc_beir(home / "b")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o", "--split", "dev")
    line = one_error_line(err)
    assert code == 2 and "has no qrels/dev.tsv" in line and "are ['test']" in line
    code, out, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o", "--split", "test")
    assert code == 0 and "1 documents in o/corpus, 1 questions" in out, err


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("a\ud800b", "field 'text' holds a lone surrogate (U+D800): not UTF-8 text"),
        ("a\x00b", "field 'text' holds the control character U+0000"),
    ],
    ids=["surrogate", "nul"],
)
def test_import_beir_refuses_a_document_that_is_no_text_naming_its_line(
    home, monkeypatch, capsys, text, says
):
    folder = _one_doc_beir(home / "b", text=text)
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o")
    line = one_error_line(err)
    assert code == 2 and f"{folder / 'corpus.jsonl'} line 1 (document 'd1')" in line and says in line
    assert "questions.jsonl" not in line and not (home / "o").exists()


def test_import_beir_names_the_line_of_an_empty_query(home, monkeypatch, capsys):
    folder = _one_doc_beir(home / "b", query="   ")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o")
    line = one_error_line(err)
    assert code == 2 and f"{folder / 'queries.jsonl'} line 1: query 'q1' has an empty text" in line
    assert "relevant document" not in line


def test_any_collection_refuses_a_document_with_nul_naming_it(tmp_path):
    docs = [BeirDoc("d1", "T", "fine text"), BeirDoc("d2", "T\x00", "more text")]
    with pytest.raises(
        ConfigError, match=r"^src: the title of document 'd2' holds the control character U\+0000"
    ):
        write_collection(tmp_path / "o", docs, {"q1": "which?"}, {"q1": {"d1": 1}}, source="src")
    assert not (tmp_path / "o").exists()


def test_no_question_left_says_why_the_queries_were_left_out(tmp_path):
    docs = [BeirDoc("d1", "T", "fine text")]
    with pytest.raises(ConfigError, match=r"left out: 1 judgements of documents not in the corpus"):
        write_collection(tmp_path / "o", docs, {"q1": "which?"}, {"q1": {"d9": 1}}, source="src")


def _beir_folder(folder: Path, docs: list[dict[str, str]], queries: list[dict[str, str]], qrels: str) -> Path:
    """A BEIR folder of ``docs``, ``queries`` and the ``test`` split's ``qrels`` lines; returns the folder."""
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return folder


_ONE_DOC = [{"_id": "d1", "text": "Alpha text about W boson."}]
_ONE_QUERY = [{"_id": "q1", "text": "alpha?"}]


def test_import_beir_keeps_a_document_whose_label_another_id_has(home, monkeypatch, capsys):
    docs = [
        {"_id": "a_b", "text": "Alpha text about W boson."},
        {"_id": "a-b-3ebec71b", "text": "Beta text about Z boson."},
    ]
    queries = [{"_id": "q1", "text": "alpha?"}, {"_id": "q2", "text": "beta?"}]
    folder = _beir_folder(home / "b2", docs, queries, "q1\ta_b\t1\nq2\ta-b-3ebec71b\t1\n")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o2")
    assert code == 0, err
    files = sorted((home / "o2" / "corpus").glob("*.md"))
    assert sorted(f.read_text() for f in files) == [d["text"] for d in docs]
    papers = json.loads((home / "o2" / "corpus" / "papers.json").read_text())["papers"]
    assert len({p["pid"] for p in papers}) == 2
    rows = [json.loads(line) for line in (home / "o2" / "questions.jsonl").read_text().splitlines()]
    quotes = {r["qid"]: r["evidence"][0]["quote"] for r in rows}
    assert quotes == {"q1": docs[0]["text"], "q2": docs[1]["text"]}


@pytest.mark.parametrize("score", ["--5", "\u00b2", "\u0661", "+-1"])
def test_import_beir_refuses_a_score_that_is_no_ascii_whole_number(home, monkeypatch, capsys, score):
    folder = _beir_folder(home / "b3", _ONE_DOC, _ONE_QUERY, f"q1\td1\t{score}\n")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o3")
    assert code == 2, err
    assert "is not a whole number" in err and "test.tsv" in err


def test_import_beir_reads_signed_ascii_scores(home, monkeypatch, capsys):
    folder = _beir_folder(home / "b3", _ONE_DOC, _ONE_QUERY, "q1\td1\t+5\n")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o3")
    assert code == 0, err


def test_import_beir_names_queries_file_for_a_control_character_and_leaves_nothing(home, monkeypatch, capsys):
    queries = [{"_id": "q1", "text": "alpha?"}, {"_id": "q\x1b[2J", "text": "beta?"}]
    folder = _beir_folder(home / "b4", _ONE_DOC, queries, "q1\td1\t1\n")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o4")
    assert code == 2, err
    assert "queries.jsonl line 2" in err and "U+001B" in err and "\x1b" not in err
    assert not (home / "o4").exists()


def test_import_beir_skips_a_query_whose_id_is_too_long(home, monkeypatch, capsys):
    folder = home / "b"
    (folder / "qrels").mkdir(parents=True)
    doc = {"_id": "d1", "text": "Alpha text about W boson."}
    (folder / "corpus.jsonl").write_text(json.dumps(doc) + "\n")
    long_id = "q" * 300
    queries = [{"_id": "q1", "text": "alpha?"}, {"_id": long_id, "text": "alpha again?"}]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_text(f"query-id\tcorpus-id\tscore\nq1\td1\t1\n{long_id}\td1\t1\n")
    code, out, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o")
    assert code == 0, err
    assert "longer than 256 characters" in out + err
    written = [json.loads(line)["qid"] for line in (home / "o" / "questions.jsonl").read_text().splitlines()]
    assert written == ["q1"]


def _ird(home: Path, queries: str, qrels: str) -> list[str]:
    (home / "docs.tsv").write_text("d1\tThe W boson backgrounds are small.\nd2\tHiggs mass.\n")
    (home / "q.tsv").write_text(queries)
    (home / "qrels").write_text(qrels)
    return ["--docs", "docs.tsv", "--queries", "q.tsv", "--qrels", "qrels"]


@pytest.mark.parametrize(
    ("queries", "qrels", "says"),
    [
        ("q1\tWhich backgrounds?\nq1\tDuplicate query text wins?\n", "q1 0 d1 1\n", "given twice"),
        ("q1\tWhich backgrounds?\n", "q1 0 d1 1\nq1 0 d1 0\nq1 0 d2 1\n", "judged twice"),
    ],
)
def test_import_ir_datasets_refuses_a_duplicate_query_or_judgement(
    home, monkeypatch, capsys, queries, qrels, says
):
    pytest.importorskip("ir_datasets")
    args = _ird(home, queries, qrels)
    code, _, err = run_main(monkeypatch, capsys, "import-ir-datasets", "oi3", *args)
    assert code == 2, err
    assert says in err and len(err.strip().splitlines()) == 1
    assert ("q.tsv" if "given" in says else "qrels") in err
    assert not (home / "oi3").exists()


def test_import_ir_datasets_names_the_qrels_file_for_a_huge_relevance_and_can_retry(
    home, monkeypatch, capsys
):
    pytest.importorskip("ir_datasets")
    args = _ird(home, "q1\tWhich backgrounds?\n", "q1 0 d1 " + "9" * 4000 + "\n")
    (home / "oi2").mkdir()  # an empty folder given: it stays, empty
    code, _, err = run_main(monkeypatch, capsys, "import-ir-datasets", "oi2", *args)
    assert code == 2, err
    assert "qrels" in err and "questions.jsonl" not in err
    assert list((home / "oi2").iterdir()) == []
    (home / "qrels").write_text("q1 0 d1 1\n")
    code, _, err = run_main(monkeypatch, capsys, "import-ir-datasets", "oi2", *args)
    assert code == 0, err


def test_import_ir_datasets_leaves_no_folder_after_a_parse_error(home, monkeypatch, capsys):
    pytest.importorskip("ir_datasets")
    args = _ird(home, "q1\tWhich backgrounds?\n", "q1 0 d1 1\n")
    (home / "docs.tsv").write_text("d1 no tab here\n")
    code, _, err = run_main(monkeypatch, capsys, "import-ir-datasets", "oi1", *args)
    assert code == 2, err
    assert not (home / "oi1").exists()
