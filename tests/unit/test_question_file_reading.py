"""Question files (JSONL and CSV) are read strictly: what is no text, no page or no well-formed file is
refused in one line naming the file, the line and the fix (exit 2), never a crash; a byte-order mark is read.

Found by probes of hostile input: a lone surrogate in a qid crashed pytrec_eval (segfault), a 5,000-digit page
crashed ``int()``, a duplicate JSON key was silently dropped, a FIFO question file was "not found", an
unterminated CSV quote swallowed every following row, and a second CSV row of a qid replaced its question.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.evaluation.questions import load_questions
from hepwb.exceptions import ConfigError
from hepwb.experiment.stages import questions_path
from hepwb.files.readers import ReadError
from tests.helpers import assert_one_line_exit_2, one_error_line, run_main, three_notes

runner = CliRunner()


_QUOTE = "An average value of -0.23"


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("qid", "Q1\ud800", "a lone surrogate (U+D800)"),
        ("qid", "Q1\x00", "the control character U+0000"),
        ("qid", "Q\x1b]8;;http://x\x07L\x1b]8;;\x07", "the control character U+001B"),
        ("question", "why\udfff", "a lone surrogate (U+DFFF)"),
        ("answer", "a\x00b", "the control character U+0000"),
    ],
)
def test_question_text_that_is_not_unicode_text_is_refused(tmp_path, field, value, problem):
    record = {"qid": "Q1", "question": "why?", "evidence": [{"doc": "P01", "quote": _QUOTE}], field: value}
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(record) + "\n")  # ensure_ascii: "\ud800" stays an escape in the file
    with pytest.raises(ConfigError, match=re.escape(f"q.jsonl line 1: field '{field}' holds {problem}")):
        load_questions(path)


def test_a_control_character_in_a_doc_label_is_refused(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps({"qid": "Q1", "question": "x", "evidence": [{"doc": "P\x0701", "quote": _QUOTE}]})
    )
    with pytest.raises(
        ConfigError, match=r"line 1, evidence\[0\]: field 'doc' holds the control character U\+0007"
    ):
        load_questions(path)


def test_a_quote_keeps_its_newlines_and_tabs(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps({"qid": "Q1", "question": "x?\n\ty", "evidence": [{"doc": "P01", "quote": "a\nb"}]})
    )
    assert load_questions(path)[0].evidence[0].quote == "a\nb"


def test_evaluate_refuses_a_surrogate_qid_before_any_retrieval(home):
    record = {"qid": "Q1\ud800", "question": "average value", "evidence": [{"doc": "P01", "quote": _QUOTE}]}
    (home / "q.jsonl").write_text(json.dumps(record) + "\n")
    res = runner.invoke(
        app,
        [
            "evaluate",
            "--corpus",
            "corpus",
            "--questions",
            "q.jsonl",
            "--retriever",
            "bm25",
            "--chunk-size",
            "64",
        ],
    )
    assert_one_line_exit_2(res, "q.jsonl line 1", "'qid'", "lone surrogate")
    res = runner.invoke(app, ["questions", "check", "q.jsonl", "--corpus", "corpus"])
    assert_one_line_exit_2(res, "q.jsonl line 1", "'qid'", "lone surrogate")


@pytest.mark.parametrize(
    ("page", "shown"),
    [("9" * 5000, "a number of 5,000 digits"), ("1234567", "a number of 7 digits"), ("²", "'²'")],
)
def test_a_huge_or_strange_csv_page_is_one_line(tmp_path, page, shown):
    path = tmp_path / "q.csv"
    path.write_text(f"qid,question,doc,quote,page\nQ1,x,P01,{_QUOTE},{page}\n")
    with pytest.raises(ConfigError, match=r"q.csv line 2: field 'page' is ") as info:
        load_questions(path)
    assert shown in str(info.value) and "at most 6 digits" in str(info.value)
    assert len(str(info.value)) < 300


def test_a_huge_json_page_is_one_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps(
            {"qid": "Q1", "question": "x", "evidence": [{"doc": "P01", "page": 10**40, "quote": _QUOTE}]}
        )
    )
    with pytest.raises(ConfigError, match="field 'page' is a number of 41 digits"):
        load_questions(path)


def test_a_question_line_with_a_repeated_key_is_refused(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"qid":"Q1","qid":"Q2","question":"x","evidence":[{"doc":"P01","quote":"An average"}]}\n'
    )
    with pytest.raises(ConfigError, match=r"q.jsonl line 1: key 'qid' appears twice"):
        load_questions(path)


def test_a_fifo_or_folder_question_file_is_named_as_such(tmp_path):
    os.mkfifo(tmp_path / "q.jsonl")
    with pytest.raises(ReadError, match=r"q.jsonl is a FIFO, not a regular file; pass --questions FILE"):
        questions_path(tmp_path / "q.jsonl")
    (tmp_path / "d.jsonl").mkdir()
    with pytest.raises(ReadError, match=r"d.jsonl is a folder"):
        questions_path(tmp_path / "d.jsonl")
    with pytest.raises(FileNotFoundError, match="no question set found"):
        questions_path(tmp_path / "missing.jsonl")


def test_evaluate_names_a_fifo_question_file(home):
    os.mkfifo(home / "q.jsonl")
    res = runner.invoke(app, ["evaluate", "--corpus", "corpus", "--questions", "q.jsonl"])
    assert_one_line_exit_2(res, "q.jsonl is a FIFO, not a regular file")


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("q.csv", f"qid,question,doc,quote,page\r\nQ1,Which value?,P01,{_QUOTE},\r\n"),
        ("q.jsonl", json.dumps({"qid": "Q1", "question": "Which value?",
                                "evidence": [{"doc": "P01", "quote": _QUOTE}]}) + "\n"),
    ],
)  # fmt: skip
def test_a_question_file_opening_with_a_byte_order_mark_is_read(home, name, body):
    path = home / name
    path.write_text(body, encoding="utf-8-sig")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    (q,) = load_questions(path)
    assert (q.qid, q.question, [(e.doc, e.page, e.quote) for e in q.evidence]) == (
        "Q1",
        "Which value?",
        [("P01", None, _QUOTE)],
    )
    papers = home / "papers"
    papers.mkdir()
    (papers / "P01.md").write_text(f"# A note\n\n{_QUOTE} was measured.\n", encoding="utf-8")
    res = runner.invoke(app, ["questions", "check", str(path), "--corpus", str(papers)])
    assert res.exit_code == 0, res.output
    assert "1 of 1 question can be scored; every quote located" in res.output


QUOTE = "The W boson and Z boson backgrounds are small."


def test_a_csv_quote_left_open_is_named_with_the_line_it_opened_on(home, monkeypatch, capsys):
    corpus = three_notes(home)
    rows = [
        "qid,question,doc,page,quote",
        f'Q0,Which are small?,P00,,"{QUOTE}',
        f"Q1,Which are small?,P01,,{QUOTE}",
        f"Q2,Which are small?,P02,,{QUOTE}",
    ]
    (home / "u.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    code, _, err = run_main(monkeypatch, capsys, "questions", "check", "u.csv", "--corpus", str(corpus))
    line = one_error_line(err)
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
    corpus = three_notes(home)
    (home / "h.csv").write_text("qid,question,doc,page,quote\n", encoding="utf-8")
    code, _, err = run_main(monkeypatch, capsys, "questions", "check", "h.csv", "--corpus", str(corpus))
    line = one_error_line(err)
    assert code == 2 and "has no question rows under the header" in line and "JSON object" not in line


def test_csv_rows_sharing_a_qid_must_share_its_question(tmp_path, monkeypatch):
    """Hostile-input probe 5 (issue 38), F16: a second row of ``Q0`` with another question was merged silently
    (its text lost)."""
    from tests.helpers import tiny_corpus

    corpus, _ = tiny_corpus(tmp_path)
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    quote = "The HERMES experiment measured the beam-spin asymmetry"
    head = "qid,question,doc,quote,answer\n"
    same = tmp_path / "same.csv"  # one question, two quotes (the later row may leave the question empty)
    same.write_text(head + f"Q0,What did HERMES measure?,A01,{quote},x\nQ0,,A01,{quote},\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["questions", "check", str(same), "--corpus", str(corpus)])
    assert res.exit_code == 0, res.output
    for row, field in [
        (f"Q0,A completely different question?,A01,{quote},x", "question"),
        (f"Q0,What did HERMES measure?,A01,{quote},y", "answer"),
    ]:
        bad = tmp_path / "c.csv"
        bad.write_text(head + f"Q0,What did HERMES measure?,A01,{quote},x\n{row}\n", encoding="utf-8")
        res = CliRunner().invoke(app, ["questions", "check", str(bad), "--corpus", str(corpus)])
        out = res.output
        assert res.exit_code == 2 and out.count("\n") == 1, out
        assert f"{bad} line 3: qid 'Q0' has {field} " in out and f"at {bad} line 2" in out, out


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("qid;question;doc;quote\nq1;Q?;P1;x\n", "not separated by commas: save it as 'CSV UTF-8"),
        ("sep=,\nqid,question,doc,quote\nq1,Q?,P1,x\n", "Excel's separator hint 'sep=…': delete that line"),
    ],
)  # fmt: skip
def test_an_excel_csv_that_is_not_comma_separated_names_the_fix(tmp_path, text, says):
    path = tmp_path / "q.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="CSV header lacks column") as err:
        load_questions(path)
    assert says in str(err.value) and "\n" not in str(err.value)
