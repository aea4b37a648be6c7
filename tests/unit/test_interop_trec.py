"""TREC run, qrels and topics files (issue 42): written so IR tools keep hepwb's order, read with every check.

A run written by hepwb is ranked by ir_measures exactly as hepwb ranked it (ties included); a run read by
hepwb is ranked as ir_measures ranks it. A malformed run file (wrong column count, unknown qid or docno,
duplicate ranks, 10^7 lines) is one line naming the file, the line and the fix, exit 2, and the huge one
is refused in bounded memory before any paper is converted.
"""

from __future__ import annotations

import json
import tracemalloc

import ir_measures
import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.files.readers import ReadError
from hepwb.interop.trec import (
    check_run_file,
    read_qrels,
    read_run,
    read_topics,
    trec_order,
    write_qrels,
    write_run,
    write_topics,
)
from tests.helpers import two_notes

runner = CliRunner()


def _rr(qrels_path, run_path):
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    run = list(ir_measures.read_trec_run(str(run_path)))
    return {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.RR], qrels, run)}


def test_a_run_hepwb_writes_is_ranked_by_ir_measures_as_hepwb_ranked_it(tmp_path):
    # q1's scores tie (trec_eval would reorder c9 before c1): written as 1/rank; q2's decrease: kept
    rankings = {"q1": [("c1", 2.0), ("c9", 2.0), ("c5", 1.0)], "q2": [("c3", 7.5), ("c2", 0.25)]}
    assert write_run(tmp_path / "run.trec", rankings, "bm25") == 5
    write_qrels(tmp_path / "qrels.txt", {"q1": {"c9": 1}, "q2": {"c2": 1}})
    assert _rr(tmp_path / "qrels.txt", tmp_path / "run.trec") == {
        "q1": 0.5,
        "q2": 0.5,
    }  # hepwb's ranks 2 and 2
    lines = (tmp_path / "run.trec").read_text().splitlines()
    assert lines[0] == "q1 Q0 c1 1 1.0 bm25" and lines[3] == "q2 Q0 c3 1 7.5 bm25"
    back = read_run(tmp_path / "run.trec")
    assert [d for d, _ in back.rankings["q1"]] == ["c1", "c9", "c5"] and back.tags == ("bm25",)
    assert back.rankings["q2"] == rankings["q2"] and back.n_lines == 5


def test_a_run_hepwb_reads_is_ranked_as_ir_measures_ranks_it(tmp_path):
    # ties and a rank column that disagrees with the scores: trec_eval sorts by score, then docno descending
    (tmp_path / "run.trec").write_text(
        "q1 Q0 a 1 1.0 x\nq1 Q0 b 2 1.0 x\nq1 Q0 c 3 1.0 x\nq1 Q0 d 4 3.0 x\n", encoding="utf-8"
    )
    order = [d for d, _ in read_run(tmp_path / "run.trec").rankings["q1"]]
    assert (
        order == ["d", "c", "b", "a"] == [d for d, _ in trec_order([("a", 1), ("b", 1), ("c", 1), ("d", 3)])]
    )
    for relevant in "abcd":
        write_qrels(tmp_path / "qrels.txt", {"q1": {relevant: 1}})
        assert _rr(tmp_path / "qrels.txt", tmp_path / "run.trec")["q1"] == 1 / (order.index(relevant) + 1)
    assert [d for d, _ in read_run(tmp_path / "run.trec", k=2).rankings["q1"]] == ["d", "c"]


def test_qrels_and_topics_round_trip(tmp_path):
    qrels = {"P01-01": {"P01": 1, "P03": 2}, "N1": {"note-a": 1}}
    write_qrels(tmp_path / "qrels.txt", qrels)
    assert read_qrels(tmp_path / "qrels.txt") == qrels
    assert {q.query_id for q in ir_measures.read_trec_qrels(str(tmp_path / "qrels.txt"))} == {"P01-01", "N1"}
    topics = {"P01-01": "What value of\tA_LU did\nHERMES obtain?", "N1": "What is the fitted amplitude?"}
    write_topics(tmp_path / "topics.tsv", topics)
    assert read_topics(tmp_path / "topics.tsv") == {
        "P01-01": "What value of A_LU did HERMES obtain?",
        "N1": "What is the fitted amplitude?",
    }
    with pytest.raises(Exception, match="holds whitespace"):
        write_qrels(tmp_path / "bad.txt", {"my question": {"P01": 1}})


def test_trec_files_opening_with_a_byte_order_mark_read_their_first_line(tmp_path):
    bom = "\ufeff"
    (tmp_path / "qrels.txt").write_text(bom + "N1 0 note-a 1\nN2 0 note-b 2\n", encoding="utf-8")
    assert read_qrels(tmp_path / "qrels.txt") == {"N1": {"note-a": 1}, "N2": {"note-b": 2}}
    (tmp_path / "topics.tsv").write_text(bom + "N1\tWhat is the fitted amplitude?\n", encoding="utf-8")
    assert read_topics(tmp_path / "topics.tsv") == {"N1": "What is the fitted amplitude?"}
    (tmp_path / "run.trec").write_text(bom + "N1 Q0 c1 1 0.5 t\n", encoding="utf-8")
    assert read_run(tmp_path / "run.trec", qids={"N1"}).rankings == {"N1": [("c1", 0.5)]}


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        ("q1 Q0 c1 1 0.5\n", "line 1: 5 columns ('q1 Q0 c1 1 0.5'); write one line per retrieved document"),
        ("q1 Q0 c1 1 0.5 t\nq9 Q0 c1 1 0.5 t\n", "line 2: qid 'q9' is not a question of the question set"),
        ("q1 Q0 c1 1 0.5 t\nq1 Q0 zz 2 0.4 t\n", "line 2: docno 'zz' is not a chunk here"),
        (
            "q1 Q0 c1 1 0.5 t\nq1 Q0 c2 1 0.4 t\n",
            "line 2: rank 1 is given twice for qid 'q1' (first on line 1)",
        ),
        ("q1 Q0 c1 1 0.5 t\nq1 Q0 c1 2 0.4 t\n", "line 2: docno 'c1' is ranked twice for qid 'q1'"),
        ("q1 Q0 c1 0 0.5 t\n", "line 1: rank '0' is not a whole number from 1"),
        ("q1 Q0 c1 1 nan t\n", "line 1: score 'nan' is not a finite number"),
        ("q1 Q0 c1 1 1_000 t\n", "line 1: score '1_000' is not a finite number"),
        ("q1 Q0 c1 1 0.5 t\n" + "q1 Q0 " + "x" * 5000 + " 2 0.4 t\n", "line 2: longer than 4,096 characters"),
    ],
    ids=[
        "columns",
        "qid",
        "docno",
        "duplicate-rank",
        "duplicate-docno",
        "rank-0",
        "nan",
        "underscore",
        "long-line",
    ],
)
def test_a_malformed_run_file_is_one_line_naming_its_line(tmp_path, body, expect):
    path = tmp_path / "run.trec"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ReadError) as err:
        read_run(
            path,
            qids={"q1", "q2"},
            docno_problem=lambda d: None if d in {"c1", "c2"} else "is not a chunk here",
        )
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"run file {path} ") and expect in message


def _write_lines(path, n: int) -> None:
    line = b"q1 Q0 c1 1 1 t\n"
    block = line * 100_000
    with path.open("wb") as fh:
        for _ in range(n // 100_000):
            fh.write(block)


def test_a_run_file_of_ten_million_lines_is_refused_in_bounded_memory(tmp_path):
    big = tmp_path / "big.trec"
    _write_lines(big, 10_000_000)  # 150 MB: under the byte cap, so the line count must refuse it
    tracemalloc.start()
    try:
        with pytest.raises(
            ReadError, match=r"has more than 1,000,000 lines \(hepwb reads at most 1,000,000\)"
        ):
            check_run_file(big)
        with pytest.raises(ReadError, match="more than 1,000,000 lines"):
            read_run(big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, (
        f"peak {peak / 2**20:.1f} MiB while refusing a {big.stat().st_size / 1e6:.0f} MB file"
    )


@pytest.fixture
def notes(tmp_path, monkeypatch):
    """Two markdown notes and two questions: a project where the paper level needs no chunking."""
    evaluate = two_notes(tmp_path)
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return evaluate


def _error_line(output: str) -> str:
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in output, output
    return errors[0]


def test_the_cli_refuses_a_huge_run_file_in_one_line_before_converting_a_paper(notes, tmp_path):
    big = tmp_path / "big.trec"
    _write_lines(big, 10_000_000)
    tracemalloc.start()
    try:
        res = runner.invoke(app, [*notes, "--run-file", str(big)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.exit_code == 2, res.output
    assert res.output.strip() == _error_line(res.output)  # nothing else printed: no paper was converted
    assert "has more than 1,000,000 lines" in res.output and "awk '$4 <= 100'" in res.output
    assert peak < 16 * 2**20 and not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        ("N1 Q0 note-a 1 2.0 mine extra\n", "line 1: 7 columns"),
        ("N9 Q0 note-a 1 2.0 mine\n", "line 1: qid 'N9' is not a question of the question set"),
        (
            "N1 Q0 note-z 1 2.0 mine\n",
            "line 1: docno 'note-z' is not a paper of the corpus (note-a, note-b, …)",
        ),
        ("N1 Q0 note-a 1 2.0 mine\nN1 Q0 note-b 1 1.0 mine\n", "line 2: rank 1 is given twice for qid 'N1'"),
    ],
    ids=["columns", "qid", "docno", "duplicate-rank"],
)
def test_the_cli_names_the_bad_line_of_a_run_file_exit_2(notes, tmp_path, body, expect):
    run = tmp_path / "mine.trec"
    run.write_text(body, encoding="utf-8")
    res = runner.invoke(app, [*notes, "--run-file", str(run)])
    assert res.exit_code == 2, res.output
    line = _error_line(res.output)
    assert f"run file {run} {expect}" in line, line


def test_a_paper_level_run_file_is_scored_and_recorded(notes, tmp_path):
    run = tmp_path / "mine.trec"
    # N1: note-b first, then a passage of note-a (LABEL#passage); N2 has no line: scored 0
    run.write_text("N1 Q0 note-b 1 2.0 mine\nN1 Q0 note-a#3 2 1.0 mine\n", encoding="utf-8")
    res = runner.invoke(app, [*notes, "--run-file", str(run)])
    assert res.exit_code == 0, res.output
    assert "doc_mrr@10                    0.250  [0.027, 0.802]  small sample: 2 questions" in res.output
    assert "1 question(s) have no line in the run file: scored 0" in res.output
    assert "retriever run:mine" in res.output
    folder = next((tmp_path / "reports" / "runs").glob("run-mine-papers-*"))
    summary = json.loads((folder / "metrics.json").read_text())["summary"]
    assert summary["doc_mrr@10"] == pytest.approx((1 / 2 + 0) / 2) and summary["doc_hit_rate@1"] == 0.0
    assert "--level, --baseline and --sweep go with --run-file" in _error_line(
        runner.invoke(app, [*notes]).output
    )
