"""Evidence marked in the document view lands in a question file, checked, or is refused in one line.

Found by a probe of hostile input: a question or quote holding U+2028, U+2029 or U+0085 was cut in two
lines on the next add (``str.splitlines``), two processes adding at once lost a line and wrote a qid twice
(no lock), page 0 or a negative page became the page found, and a file opening with a byte-order mark was
refused.
"""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from hepwb.evaluation.question_file import add_evidence, read_question_file
from hepwb.evaluation.questions import load_questions
from hepwb.exceptions import ConfigError
from hepwb.experiment.questions_check import check_questions
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


SEPARATORS = "\u2028\u2029\x85"
"""Characters ``str.splitlines`` breaks a line at, which a JSON string may hold unescaped."""


def test_line_separators_in_a_question_or_quote_keep_it_on_one_line(home):
    path = home / "qa.jsonl"
    # a line another tool wrote, the separators raw (json.dumps with ensure_ascii=False keeps them)
    first = json.dumps(
        {
            "qid": "X-01",
            "question": f"Which{SEPARATORS}experiment?",
            "evidence": [{"doc": "P01", "quote": f"The HERMES{SEPARATORS}experiment"}],
        },
        ensure_ascii=False,
    )
    path.write_text(first + "\n", encoding="utf-8")
    q = add_evidence(path, question=f"Which value{SEPARATORS}is it?", doc=_doc(), page=None,
                     quote=f"Its value is{SEPARATORS}-0.23 ± 0.04")  # fmt: skip
    add_evidence(path, question="", qid=q.qid, doc=_doc(), page=None,
                 quote=f"Radiative{SEPARATORS}corrections are small")  # fmt: skip
    text = path.read_text(encoding="utf-8")
    assert text.count("\n") == 2 and text.split("\n")[0] == first  # the other line kept byte for byte
    back = load_questions(path)
    assert [(x.qid, x.question) for x in back] == [
        ("X-01", f"Which{SEPARATORS}experiment?"),
        ("P01-01", f"Which value{SEPARATORS}is it?"),
    ]
    assert [e.quote for e in back[1].evidence] == [
        f"Its value is{SEPARATORS}-0.23 ± 0.04",
        f"Radiative{SEPARATORS}corrections are small",
    ]
    # hepwb questions check reads the file and locates every quote
    papers = home / "papers"
    papers.mkdir()
    (papers / "P01.md").write_text("\n\n".join((PAGE1, PAGE2, PAGE3)) + "\n", encoding="utf-8")
    result = check_questions(path, papers, progress=False)
    assert not result.unlocated and result.n_scored == 2, result.rows()


def test_the_question_reader_counts_lines_at_newlines_only(tmp_path):
    path = tmp_path / "qa.jsonl"
    record = {"qid": "A", "question": f"Q{SEPARATORS}?", "evidence": [{"doc": "P01", "quote": "x y"}]}
    first = json.dumps(record, ensure_ascii=False)
    path.write_text(f'{first}\r\n{{"qid": "B"}}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"qa\.jsonl line 2: field 'evidence' is missing"):
        load_questions(path)
    with pytest.raises(ConfigError, match=r"qa\.jsonl line 2: field 'evidence' is missing"):
        add_evidence(path, question="Q?", doc=_doc(), page=1, quote="The HERMES experiment")


def test_a_file_opening_with_a_byte_order_mark_is_read_and_added_to(tmp_path):
    path = tmp_path / "qa.jsonl"
    first = {"qid": "X-01", "question": "Which experiment?", "evidence": [{"doc": "P01", "quote": "HERMES"}]}
    path.write_text(json.dumps(first) + "\r\n", encoding="utf-8-sig")
    assert [q.qid for q in read_question_file(path)] == ["X-01"]
    q = add_evidence(path, question="Which value?", doc=_doc(), page=2, quote="Its value is -0.23 ± 0.04")
    assert q.qid == "P01-01"
    assert [x.qid for x in load_questions(path)] == ["X-01", "P01-01"]
    # the mark and the line ending of a file saved on Windows stay: the other lines byte for byte
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf" + json.dumps(first).encode() + b"\r\n")
    assert data.endswith(b"\r\n") and data.count(b"\r\n") == data.count(b"\n") == 2


@pytest.mark.parametrize(
    ("page", "says"),
    [
        (0, "page 0 is no page number; give the 1-based page the passage was selected on, or None"),
        (-2, "page -2 is no page number"),
        (True, "page True is no page number"),
        ("2", "page '2' is no page number"),
        (2.0, "page 2.0 is no page number"),
        (4, "page 4 is past the last page of P01 (3); give a page from 1 to 3"),
        (10**30, "page 1000000000000000000000000000000 is no page number"),
    ],
)
def test_a_page_that_is_no_page_of_the_document_is_refused(tmp_path, page, says):
    path = tmp_path / "qa.jsonl"
    assert _refused(path, page=page, quote="Its value is -0.23 ± 0.04").startswith(says)
    add_evidence(path, question="Which value?", doc=_doc(), page=3, quote="Its value is -0.23 ± 0.04")
    assert _refused(path, page=page, quote="Radiative corrections are small").startswith(says)


WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def _sentence(worker: int, i: int) -> str:
    return f"The {WORDS[worker]} detector recorded {WORDS[i]} events in its calibration run."


def _many_sentences_doc(workers: int, adds: int) -> Document:
    md, blocks = "", []
    for w in range(workers):
        for i in range(adds):
            start = len(md)
            md += _sentence(w, i) + "\n\n"
            blocks.append(Block("text", start, start + len(_sentence(w, i)), 1 + w))
    return Document("id-P01", "P01", md, tuple(blocks), {"pages": workers})


def _add_many(path: str, worker: int, workers: int, adds: int, start: Any, out: Any) -> None:
    """One process's adds (a spawned process: no state shared with the test but the file)."""
    doc = _many_sentences_doc(workers, adds)
    start.wait()
    got: list[str] = []
    try:
        for i in range(adds):
            q = add_evidence(path, question=f"Question {worker}-{i}?", doc=doc, page=1 + worker,
                             quote=_sentence(worker, i))  # fmt: skip
            got.append(q.qid)
    except Exception as exc:  # told to the test, which fails naming it
        out.put((worker, f"add {len(got) + 1} failed: {type(exc).__name__}: {exc}"))
        return
    out.put((worker, got))


def test_two_processes_adding_at_once_land_every_add_once(tmp_path):
    path = tmp_path / "qa.jsonl"
    workers, adds = 2, 6
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Barrier(workers), ctx.Queue()
    procs = [
        ctx.Process(target=_add_many, args=(str(path), w, workers, adds, start, out)) for w in range(workers)
    ]
    for proc in procs:
        proc.start()
    results = dict(out.get(timeout=120) for _ in procs)
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    assert all(isinstance(got, list) for got in results.values()), results
    qids = [qid for w in range(workers) for qid in results[w]]
    assert len(set(qids)) == workers * adds  # every add reported its own question
    back = load_questions(path)  # the file passes the question reader: no qid twice, every line whole
    assert sorted(q.qid for q in back) == sorted(qids)
    assert sorted(q.question for q in back) == sorted(
        f"Question {w}-{i}?" for w in range(workers) for i in range(adds)
    )
    assert all(len(q.evidence) == 1 for q in back)
    assert len(Path(path).read_text(encoding="utf-8").split("\n")) == workers * adds + 1
    # and the file takes more
    more = add_evidence(path, question="One more?", doc=_doc("P02"), page=1, quote="The HERMES experiment")
    assert more.qid == "P02-01" and len(load_questions(path)) == workers * adds + 1
