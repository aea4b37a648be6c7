"""Evidence marked in the document view lands in a question file, checked, or is refused in one line."""

from __future__ import annotations

import json

import pytest

from hepwb.evaluation.question_file import add_evidence, read_question_file
from hepwb.evaluation.questions import load_questions
from hepwb.exceptions import ConfigError
from hepwb.types import Block, Document

PAGE1 = "The HERMES experiment measured the beam-spin asymmetry with the positron beam of HERA."
PAGE2 = "The amplitude is negative. Its value is -0.23 ± 0.04 (stat) over the acceptance."
PAGE3 = "Radiative corrections are small. The amplitude is negative in every bin."


def _doc(label: str = "P01") -> Document:
    md, blocks = "", []
    for page, text in enumerate((PAGE1, PAGE2, PAGE3), start=1):
        start = len(md)
        md += text + "\n\n"
        blocks.append(Block("text", start, start + len(text), page))
    return Document(f"id-{label}", label, md, tuple(blocks), {"pages": 3})


def _refused(path, **kwargs) -> str:
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(ConfigError) as info:
        add_evidence(path, **{"question": "Which value?", "doc": _doc(), "page": 2, **kwargs})
    assert (path.read_bytes() if path.exists() else None) == before, "a refusal writes nothing"
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"not added to {path}: ")
    return message.removeprefix(f"not added to {path}: ")


def test_a_new_question_is_written_and_reads_back(tmp_path):
    path = tmp_path / "sub" / "mine.jsonl"
    q = add_evidence(
        path,
        question=" Which value did HERMES obtain? ",
        doc=_doc(),
        page=2,
        quote=" Its value is -0.23 ± 0.04 ",
    )
    assert (q.qid, q.question, q.answer) == ("P01-01", "Which value did HERMES obtain?", "")
    (back,) = load_questions(path)
    assert back == q
    assert [(e.eid, e.doc, e.page, e.quote) for e in back.evidence] == [
        ("P01-01#e0", "P01", 2, "Its value is -0.23 ± 0.04")
    ]
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "qid": "P01-01",
        "question": "Which value did HERMES obtain?",
        "evidence": [{"doc": "P01", "page": 2, "quote": "Its value is -0.23 ± 0.04"}],
    }
    q2 = add_evidence(path, question="Who measured it?", doc=_doc(), page=1, quote="The HERMES experiment",
                      answer="HERMES", kind="setup")  # fmt: skip
    assert (q2.qid, q2.answer, q2.kind) == ("P01-02", "HERMES", "setup")
    assert [x.qid for x in load_questions(path)] == ["P01-01", "P01-02"]


def test_evidence_is_added_to_an_existing_question_and_other_lines_are_kept(tmp_path):
    path = tmp_path / "qa.jsonl"
    first = (
        '{"style": "lexical", "qid": "P01-07", "question": "Q7?",  "evidence": [{"quote": "x1", "doc": "X"}]}'
    )
    evidence = [{"doc": "P01", "page": 1, "quote": "positron beam of HERA"}]
    second = json.dumps(
        {
            "qid": "P01-09",
            "kind": "numeric",
            "question": "Which value?",
            "answer": "-0.23",
            "evidence": evidence,
        }
    )
    path.write_text(f"{first}\n\n{second}\n", encoding="utf-8")
    q = add_evidence(path, question="", doc=_doc(), page=2, quote="value is -0.23 ± 0.04", qid="P01-09")
    assert [(e.eid, e.page, e.quote) for e in q.evidence] == [
        ("P01-09#e0", 1, "positron beam of HERA"),
        ("P01-09#e1", 2, "value is -0.23 ± 0.04"),
    ]
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[:2] == [first, ""]  # untouched, byte for byte
    assert list(json.loads(lines[2])) == ["qid", "kind", "question", "answer", "evidence"]  # key order kept
    assert load_questions(path)[1] == q
    # a question typed as it stands in the file is that question, not a new one
    q = add_evidence(
        path, question="Which value?", doc=_doc(), page=3, quote="Radiative corrections are small"
    )
    assert q.qid == "P01-09" and len(q.evidence) == 3
    # a new question's id is one past the label's highest
    assert (
        add_evidence(path, question="Q?", doc=_doc(), page=1, quote="measured the beam-spin").qid == "P01-10"
    )


def test_a_quote_found_only_on_another_page_is_written_with_that_page(tmp_path):
    path = tmp_path / "qa.jsonl"
    q = add_evidence(path, question="Q?", doc=_doc(), page=1, quote="Radiative corrections are small")
    assert q.evidence[0].page == 3
    q = add_evidence(path, question="Q?", doc=_doc(), page=None, quote="HERMES experiment measured")
    assert (
        q.evidence[1].page is None
        and "page" not in json.loads(path.read_text().splitlines()[0])["evidence"][1]
    )


def test_refusals_say_why_in_one_line_and_write_nothing(tmp_path):
    path = tmp_path / "qa.jsonl"
    add_evidence(path, question="Which value?", doc=_doc(), page=2, quote="Its value is -0.23 ± 0.04")
    # the same quote again, however it is spaced or cased, for the same document
    why = _refused(path, quote="its value is  −0.23 ± 0.04.")
    assert why == "P01-01 already quotes 'Its value is -0.23 ± 0.04' from P01; select another passage"
    # ambiguous: a short quote that stands on two pages, neither the one named
    assert "matches in 2 places (pages 2, 3)" in _refused(path, quote="The amplitude is negative", page=1)
    assert "no document is labelled 'P99'" in _refused(path, doc="P99", quote="Its value is")
    assert "not in P01's converted text" in _refused(path, quote="a sentence the paper does not hold at all")
    assert "no text is selected" in _refused(path, quote="  ")
    assert "the question is empty" in _refused(path, question=" ", quote="Radiative corrections")
    assert "has no letter or digit" in _refused(path, quote="± −")
    assert [q.qid for q in load_questions(path)] == ["P01-01"]


def test_the_same_quote_of_another_document_is_not_a_duplicate(tmp_path):
    path = tmp_path / "qa.jsonl"
    add_evidence(path, question="Q?", doc=_doc("P01"), page=1, quote="The HERMES experiment")
    q = add_evidence(path, question="Q?", doc=_doc("P02"), page=1, quote="The HERMES experiment")
    assert q.qid == "P01-01" and [e.doc for e in q.evidence] == ["P01", "P02"]


def test_a_malformed_or_csv_file_is_refused(tmp_path):
    assert read_question_file(tmp_path / "none.jsonl") == []
    with pytest.raises(ConfigError, match=r"CSV file; .*choose a \.jsonl path"):
        add_evidence(tmp_path / "q.csv", question="Q?", doc=_doc(), page=1, quote="The HERMES experiment")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "A"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.jsonl line 1: field 'evidence' is missing"):
        add_evidence(bad, question="Q?", doc=_doc(), page=1, quote="The HERMES experiment")
    assert bad.read_text(encoding="utf-8") == '{"qid": "A"}\n'
