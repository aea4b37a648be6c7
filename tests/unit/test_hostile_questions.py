"""Hostile question files, pins and folders are one line naming the input and the fix (exit 2), never a crash.

Found by an independent probe of hostile input: a lone surrogate in a qid crashed pytrec_eval
(segfault), a question that retrieved nothing crashed ragas, a 5,000-digit page crashed ``int()``,
duplicate JSON keys and CSV columns were silently dropped, a FIFO question file was "not found", an
empty folder validated, corpus text reached the terminal with its escape sequences, and a damaged
``hepwb-defaults.json`` was silently ignored.
"""

from __future__ import annotations

import json
import math
import os
import re

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.cli_show import check_lines, unscored_lines
from hepwb.evaluation.questions import load_questions
from hepwb.exceptions import ConfigError
from hepwb.parsers import parse_json, read_csv
from hepwb.pipeline.stages import questions_path
from hepwb.project_defaults import ProjectDefaults, current_defaults, write_defaults
from hepwb.readers import ReadError

runner = CliRunner()

_QUOTE = "An average value of -0.23"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A scratch project with a two-paper markdown corpus."""
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "P01.md").write_text(f"# A\n\n{_QUOTE} plus or minus 0.04 is obtained.\n")
    (tmp_path / "corpus" / "P02.md").write_text("# B\n\nThe t-slope parameter b was found to be 6.02.\n")
    return tmp_path


def _one_error_line(res, *needles: str) -> None:
    assert res.exit_code == 2, res.output
    assert res.output.startswith("error: ") and res.output.count("\n") == 1, res.output
    for needle in needles:
        assert needle in res.output, res.output


# 1. a lone surrogate or a control character in a question's text fields


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
    _one_error_line(res, "q.jsonl line 1", "'qid'", "lone surrogate")
    res = runner.invoke(app, ["questions", "check", "q.jsonl", "--corpus", "corpus"])
    _one_error_line(res, "q.jsonl line 1", "'qid'", "lone surrogate")


# 2. a question that retrieves nothing is scored (ragas NaN), not a crash


def test_ragas_scores_a_question_that_retrieved_nothing_as_nan():
    pytest.importorskip("ragas")
    from hepwb.evaluation.ragas_eval import OFFLINE_METRICS, offline_scores

    base = {
        "user_input": "q",
        "reference_context_ids": ["c1"],
        "reference_contexts": [_QUOTE],
        "reference": "",
    }
    samples = {
        "Q1": {**base, "retrieved_contexts": [], "retrieved_context_ids": []},
        "Q2": {**base, "retrieved_contexts": [_QUOTE], "retrieved_context_ids": ["c1"]},
    }
    df = offline_scores(samples)
    assert all(math.isnan(df.loc["Q1", m]) for m in OFFLINE_METRICS)
    assert df.loc["Q2", "id_context_recall"] == 1.0


# 3. a page of thousands of digits


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


# 4. duplicate JSON keys and CSV columns


def test_a_repeated_json_key_is_named():
    with pytest.raises(ReadError, match=r"q.jsonl line 1: key 'qid' appears twice in one object"):
        parse_json('{"qid": "Q1", "qid": "Q2"}', "q.jsonl line 1")
    with pytest.raises(ReadError, match="key 'b' appears twice"):
        parse_json('{"a": [{"b": 1, "c": 2, "b": 3}]}', "f.json")
    assert parse_json('{"a": {"a": 1}, "b": NaN}', "f.json")["a"] == {"a": 1}


def test_a_question_line_with_a_repeated_key_is_refused(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"qid":"Q1","qid":"Q2","question":"x","evidence":[{"doc":"P01","quote":"An average"}]}\n'
    )
    with pytest.raises(ConfigError, match=r"q.jsonl line 1: key 'qid' appears twice"):
        load_questions(path)


def test_a_repeated_csv_column_is_named(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text(f"qid,question,doc,quote,quote\nQ1,x,P01,{_QUOTE},other\n")
    with pytest.raises(ReadError, match=r"q.csv: column 'quote' appears twice in the header"):
        read_csv(path, "question file")


def test_a_repeated_key_in_the_pinned_defaults_is_named(home):
    (home / "hepwb-defaults.json").write_text('{"retriever": "bm25", "chunk_size": 256, "chunk_size": 512}')
    with pytest.raises(ConfigError, match="key 'chunk_size' appears twice"):
        current_defaults(home)


def test_hepwbs_own_pin_still_reads(home):
    write_defaults(ProjectDefaults("bm25", 256, "test"), home)
    assert current_defaults(home).chunk_size == 256


# 5. a question file that is no regular file


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
    _one_error_line(res, "q.jsonl is a FIFO, not a regular file")


# 6. validate on a folder without HEPilot files


@pytest.mark.parametrize("files", [[], ["notes.json"]])
def test_validate_refuses_a_folder_without_hepilot_files(home, files):
    (home / "empty").mkdir()
    for name in files:
        (home / "empty" / name).write_text("{}")
    res = runner.invoke(app, ["validate", "empty"])
    _one_error_line(res, "no HEPilot JSON files in empty", "data/processed/chunksets/ID")


# 7. corpus and user strings in the question-check tables


def test_check_and_unscored_lines_strip_escape_sequences():
    osc8 = "Q\x1b]8;;http://evil\x07click\x1b]8;;\x07"
    row = {
        "evidence": osc8 + "#e0",
        "qid": osc8,
        "doc": "P\x1b[2J01",
        "page": None,
        "found_on_page": ["\x9b1m2"],
        "status": "not_found",
        "reason": "the quote \x1b]52;c;SGk=\x07is not\r in the text",
        "quote": "q\x1b[31mx",
    }
    for line in check_lines([row]) + unscored_lines([row]):
        assert "\x1b" not in line and "\x07" not in line and "\x9b" not in line and "\r" not in line, repr(
            line
        )
        assert "Qclick" in line and "P01" in line


# 8. a folder where the pin goes


def test_pinning_into_a_folder_is_one_line(home):
    (home / "hepwb-defaults.json").mkdir()
    res = runner.invoke(app, ["defaults", "pin", "bm25", "256"])
    _one_error_line(res, "hepwb-defaults.json is a folder", "remove or rename it")


# 9. a damaged pin is one line in every command that uses it


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"retriever": "bm', "invalid JSON"),
        ('{"retriever": "bm25", "chunk_size": true}', "got True"),
        ('{"retriever": "nosuch", "chunk_size": 256}', "unknown retriever 'nosuch'"),
    ],
)
@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--corpus", "corpus", "--questions", "q.jsonl"],
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
        ["search", "average value", "--corpus", "corpus"],
        ["defaults", "show"],
    ],
)
def test_a_damaged_pin_is_one_line(home, content, needle, argv):
    (home / "hepwb-defaults.json").write_text(content)
    res = runner.invoke(app, argv)
    _one_error_line(res, "hepwb-defaults.json", needle, "hepwb defaults unpin")


def test_help_works_with_a_damaged_pin(home):
    (home / "hepwb-defaults.json").write_text("{")
    for argv in (["evaluate", "--help"], ["search", "--help"], ["defaults", "--help"]):
        res = runner.invoke(app, argv)
        assert res.exit_code == 0, res.output


def test_a_bool_chunk_size_is_refused(home):
    (home / "hepwb-defaults.json").write_text('{"retriever": "bm25", "chunk_size": false}')
    with pytest.raises(ConfigError, match=r"chunk_size: .*got False"):
        current_defaults(home)


# a question file saved by Excel ("CSV UTF-8") or Windows Notepad opens with a byte-order mark


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


def test_read_csv_drops_the_byte_order_mark_from_the_first_column(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("qid,question\nQ1,x\n", encoding="utf-8-sig")
    assert read_csv(path, "question file") == (["qid", "question"], [(2, {"qid": "Q1", "question": "x"})])
