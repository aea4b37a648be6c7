"""Findings of the eighth hostile-input probe (issue 38), part b: ``import-beir``'s split and texts, CSV
question files, the NER token, a damaged baseline run and corrupt DuckDB blocks. Each reproduces the probe's
input through the real CLI (in-process) and real files."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from hepwb.evaluation import load_questions
from hepwb.exceptions import ConfigError
from hepwb.interop.beir import BeirDoc
from hepwb.interop.collection import write_collection
from hepwb.ner.source import ner_source
from hepwb.paths import Layout
from hepwb.tiers.audit import AuditLog
from hepwb.tiers.store import Tiers
from tests.helpers import run_main, two_notes

QUOTE = "The W boson and Z boson backgrounds are small."


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def _beir(folder, *, text="The W boson background is small.", query="Which background is small?"):
    """The probe's one-document BEIR folder (``qrels/test.tsv``); returns the folder."""
    (folder / "qrels").mkdir(parents=True)
    doc = json.dumps({"_id": "d1", "title": "T", "text": text})
    (folder / "corpus.jsonl").write_text(doc + "\n", encoding="utf-8")
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": query}) + "\n", encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    return folder


# F3: --split was followed as a path (absolute, or with ../), and a missing split listed the wrong folder


@pytest.mark.parametrize("split", ["{outside}", "../../outside", "../qrels/test", "te\x1bst"])
def test_import_beir_refuses_a_split_that_is_no_name(home, monkeypatch, capsys, split):
    folder = _beir(home / "b")
    (home / "outside.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    split = split.format(outside=home / "outside")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o", "--split", split)
    line = _one_line(err)
    assert code == 2 and "qrels split name" in line and "is not a plain name" in line
    assert "are ['test']" in line and "\x1b" not in line  # the splits of b/qrels, and no escape echoed
    assert not (home / "o").exists()


def test_import_beir_names_the_splits_there_when_one_is_missing(home, monkeypatch, capsys):
    folder = _beir(home / "b")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o", "--split", "dev")
    line = _one_line(err)
    assert code == 2 and "has no qrels/dev.tsv" in line and "are ['test']" in line
    code, out, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o", "--split", "test")
    assert code == 0 and "1 documents in o/corpus, 1 questions" in out, err


# M5: a lone surrogate in a document ended in UnicodeEncodeError (exit 3); a NUL was blamed on hepwb's own
# output file, an empty query on the qrels


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
    folder = _beir(home / "b", text=text)
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o")
    line = _one_line(err)
    assert code == 2 and f"{folder / 'corpus.jsonl'} line 1 (document 'd1')" in line and says in line
    assert "questions.jsonl" not in line and not (home / "o").exists()


def test_import_beir_names_the_line_of_an_empty_query(home, monkeypatch, capsys):
    folder = _beir(home / "b", query="   ")
    code, _, err = run_main(monkeypatch, capsys, "import-beir", str(folder), "o")
    line = _one_line(err)
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


# F4: an unterminated quote in a CSV question file swallowed every following row


def _corpus(home):
    corpus = home / "c"
    corpus.mkdir()
    for i in range(3):
        (corpus / f"P0{i}_doc.md").write_text(f"# Measurement {i}\n\n## Results\n{QUOTE}\n", encoding="utf-8")
    return corpus


def test_a_csv_quote_left_open_is_named_with_the_line_it_opened_on(home, monkeypatch, capsys):
    corpus = _corpus(home)
    rows = [
        "qid,question,doc,page,quote",
        f'Q0,Which are small?,P00,,"{QUOTE}',
        f"Q1,Which are small?,P01,,{QUOTE}",
        f"Q2,Which are small?,P02,,{QUOTE}",
    ]
    (home / "u.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    code, _, err = run_main(monkeypatch, capsys, "questions", "check", "u.csv", "--corpus", str(corpus))
    line = _one_line(err)
    assert code == 2 and "question file u.csv: a quote opened on line 2 is not closed" in line


def test_a_csv_quote_opened_on_a_later_line_of_a_record_is_found(tmp_path):
    # the record starts on line 2 with a closed multi-line field ("" a quote in it); the open quote: line 3
    text = 'qid,question,doc,quote\nQ0,"Which ""W""\nbackgrounds?",P00,"The W boson\nQ1,Why?,P01,x\n'
    (tmp_path / "q.csv").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"a quote opened on line 3 is not closed"):
        load_questions(tmp_path / "q.csv")


def test_a_well_quoted_csv_with_multi_line_fields_still_reads(tmp_path):
    text = f'qid,question,doc,quote\nQ0,"Which ""W""\nbackgrounds?",P00,"{QUOTE}"\nQ1,Why?,P01,"{QUOTE}"\n'
    (tmp_path / "q.csv").write_text(text, encoding="utf-8")
    got = load_questions(tmp_path / "q.csv")
    assert [q.qid for q in got] == ["Q0", "Q1"] and got[0].question == 'Which "W"\nbackgrounds?'


def test_a_csv_with_only_a_header_says_so(home, monkeypatch, capsys):
    corpus = _corpus(home)
    (home / "h.csv").write_text("qid,question,doc,page,quote\n", encoding="utf-8")
    code, _, err = run_main(monkeypatch, capsys, "questions", "check", "h.csv", "--corpus", str(corpus))
    line = _one_line(err)
    assert code == 2 and "has no question rows under the header" in line and "JSON object" not in line


# F7: ner-serve took a non-ASCII HEPWB_NER_TOKEN that hepwb's own client cannot send


@pytest.mark.parametrize("token", ["pässwort", "tok\x1b]52;c;aGk=\x07en", " padded "])
def test_ner_serve_refuses_a_token_no_http_header_carries(home, monkeypatch, capsys, token):
    monkeypatch.setenv("HEPWB_NER_TOKEN", token)
    with socket.socket() as taken:  # a port in use: were the token let through, binding fails (no hang)
        taken.bind(("127.0.0.1", 0))
        port = str(taken.getsockname()[1])
        code, _, err = run_main(monkeypatch, capsys, "ner-serve", "--port", port)
    line = _one_line(err)
    assert code == 2 and "HEPWB_NER_TOKEN" in line and "an HTTP header carries ASCII only" in line
    assert token.strip() not in line and "\x1b" not in line  # the secret is not shown


def test_the_ner_client_refuses_a_token_it_cannot_send(monkeypatch):
    monkeypatch.setenv("HEPWB_NER_TOKEN", "pässwort")
    with pytest.raises(ConfigError, match=r"^HEPWB_NER_TOKEN holds a character that is not ASCII: an HTTP"):
        ner_source("http://127.0.0.1:1")
    monkeypatch.setenv("HEPWB_NER_TOKEN", "s3cret-token_~+/=")
    assert ner_source("http://127.0.0.1:1").token == "s3cret-token_~+/="  # type: ignore[attr-defined]


# M1: a damaged per_question.parquet of the --baseline run ended in ArrowInvalid (exit 3), after the new
# run folder was written


def _papers(home):
    return two_notes(home, quote_a="fitted amplitude")


@pytest.mark.parametrize("damage", ["random bytes", "fifo"])
def test_a_damaged_baseline_is_named_before_a_run_folder_is_written(home, monkeypatch, capsys, damage):
    evaluate = _papers(home)
    (home / "base.trec").write_text("N1 Q0 note-a 1 2.0 base\nN2 Q0 note-a 1 1.0 base\n", encoding="utf-8")
    (home / "mine.trec").write_text("N1 Q0 note-a 1 2.0 mine\nN2 Q0 note-b 1 1.0 mine\n", encoding="utf-8")
    code, _, err = run_main(monkeypatch, capsys, *evaluate, "--run-file", "base.trec")
    assert code == 0, err
    runs = Layout.default().runs
    (base,) = runs.iterdir()
    code, out, err = run_main(
        monkeypatch, capsys, *evaluate, "--run-file", "mine.trec", "--baseline", str(base)
    )
    assert code == 0 and f"against {base.name}" in out, err  # the sound baseline compares
    for run in set(runs.iterdir()) - {base}:
        shutil.rmtree(run)
    table = base / "per_question.parquet"
    table.unlink()
    if damage == "fifo":
        os.mkfifo(table)
    else:
        table.write_bytes(os.urandom(3000))
    code, _, err = run_main(
        monkeypatch, capsys, *evaluate, "--run-file", "mine.trec", "--baseline", str(base)
    )
    line = _one_line(err)
    assert code == 2 and f"{table} is damaged" in line and "then compare again" in line
    assert list(runs.iterdir()) == [base]  # refused before the new run folder was written


def test_a_baseline_of_another_question_set_is_refused_before_a_run_folder_is_written(
    home, monkeypatch, capsys
):
    evaluate = _papers(home)
    (home / "base.trec").write_text("N1 Q0 note-a 1 2.0 base\nN2 Q0 note-a 1 1.0 base\n", encoding="utf-8")
    code, _, err = run_main(monkeypatch, capsys, *evaluate, "--run-file", "base.trec")
    assert code == 0, err
    runs = Layout.default().runs
    (base,) = runs.iterdir()
    questions = Path(evaluate[evaluate.index("--questions") + 1])
    other = questions.with_name("other.jsonl")
    other.write_text(questions.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # another file's hash
    mine = [
        *evaluate[: evaluate.index("--questions") + 1],
        str(other),
        *evaluate[evaluate.index("--questions") + 2 :],
    ]
    code, _, err = run_main(monkeypatch, capsys, *mine, "--run-file", "base.trec", "--baseline", str(base))
    assert code == 2 and "was scored on another question set" in _one_line(err)
    assert list(runs.iterdir()) == [base]  # refused before the new run was scored and recorded


# M2: a corrupt block of catalog.duckdb or audit.duckdb ("Corrupt database file: computed checksum …") was
# exit 3; only a file cut short was named


def _corrupt_blocks(path, start: int = 12_288) -> None:
    """Overwrite every byte of the DuckDB file ``path`` from ``start`` (default: after its 3 headers)."""
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.seek(start)
        fh.write(os.urandom(size - start))


def test_a_corrupt_block_of_the_catalog_is_named_by_report_and_sql(home, monkeypatch, capsys):
    from hepwb.catalog import Catalog

    catalog = Layout.default().catalog
    cat = Catalog(catalog)
    with cat._connect() as con:
        con.execute("CREATE TABLE filler AS SELECT range AS x, md5(range::VARCHAR) AS pad FROM range(100000)")
    assert catalog.stat().st_size > 500_000
    # 200 kB in the middle (the table's data, not the first block's metadata), as the probe did: the catalog
    # opens, and the query reading that block fails
    with catalog.open("r+b") as fh:
        fh.seek(300_000)
        fh.write(os.urandom(200_000))
    code, _, err = run_main(monkeypatch, capsys, "sql", "SELECT sum(length(pad)) FROM filler")
    line = _one_line(err)
    assert code == 2 and f"the catalog {catalog} is damaged (Corrupt database file" in line
    assert "delete it and run `hepwb report`" in line
    _corrupt_blocks(catalog)  # the first block too (the tables' metadata): opening the catalog fails
    code, _, err = run_main(monkeypatch, capsys, "report")
    line = _one_line(err)
    assert code == 2 and f"the catalog {catalog} is damaged" in line and "hepwb report" in line


def test_a_corrupt_block_of_the_audit_file_is_named_by_tiers_history(home, monkeypatch, capsys):
    layout = Layout.default()
    path = Tiers.folder("default", layout) / "audit.duckdb"
    log = AuditLog(path)
    with log.connect() as con:
        con.execute(
            "INSERT INTO audit SELECT uuid()::VARCHAR, range, 'mark', 'alice', 'done', 1, [], [], '', "
            "0, 0, 0, 0, json_object('n', md5(range::VARCHAR)), range FROM range(20000)"
        )
    assert path.stat().st_size > 500_000
    # every block after the first (its metadata): history reads only the newest rows' blocks, so all are hit
    _corrupt_blocks(path, start=12_288 + 262_144)
    code, _, err = run_main(monkeypatch, capsys, "tiers", "history")
    line = _one_line(err)
    assert code == 2 and f"the tiers' audit file {path} is damaged (Corrupt database file" in line
    assert "hepwb tiers init" in line
