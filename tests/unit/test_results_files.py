"""Every published results table is a file a bench wrote: its stamp matches its text, and no two disagree."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from bench.results import RESULTS, Row, comparison_key, problems, read_results, write_results

TABLE = "| method | found@5 |\n|---|---:|\n| bm25 | 0.710 |\n"
KEY = {"config": {"retriever": "bm25", "chunk_size": 256}, "questions_sha256": "ab" * 32, "corpus": "c" * 16}


def _write(folder, name="t", value=0.71, table=TABLE):
    rows = [Row("bm25 at 256", KEY, {"hit_rate@5": value})]
    return write_results(name, table, caption="found@5 of bm25 on a test set.", rows=rows, folder=folder)


def test_the_published_results_files_match_their_stamps_and_agree():
    assert problems(RESULTS) == []


def test_a_results_file_is_stamped_with_its_command_commit_machine_and_date(tmp_path):
    path = _write(tmp_path)
    stamp, rest = read_results(path)
    assert rest == "found@5 of bm25 on a test set.\n\n" + TABLE
    assert re.fullmatch(r"([0-9a-f]{7,}(\+dirty)?|unknown)", stamp["commit"])
    assert stamp["command"].startswith("python")
    assert {"cores", "memory_gib", "cpu", "gpu", "device"} <= stamp["machine"].keys()
    assert stamp["machine"]["cores"] >= 1
    assert dt.datetime.fromisoformat(stamp["date"]).utcoffset() == dt.timedelta(0)
    assert json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["rows"][0]["values"] == {
        "hit_rate@5": 0.71
    }
    assert problems(tmp_path) == []


def test_a_table_edited_by_hand_is_found(tmp_path):
    path = _write(tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace("0.710", "0.730"), encoding="utf-8")
    assert [p for p in problems(tmp_path) if "t.md was edited by hand" in p]


def test_rows_edited_by_hand_are_found(tmp_path):
    path = _write(tmp_path)
    rows = path.with_suffix(".json")
    rows.write_text(rows.read_text(encoding="utf-8").replace("0.71", "0.73"), encoding="utf-8")
    assert [p for p in problems(tmp_path) if "t.json was edited by hand" in p]


def test_a_file_without_a_stamp_is_found(tmp_path):
    (tmp_path / "typed.md").write_text("Typed by hand.\n\n" + TABLE, encoding="utf-8")
    assert [p for p in problems(tmp_path) if "typed.md" in p and "stamp" in p]


def test_two_files_publishing_different_values_for_one_configuration_are_found(tmp_path):
    _write(tmp_path, "a", 0.71)
    _write(tmp_path, "b", 0.71)
    assert problems(tmp_path) == []  # the same value twice is fine
    _write(tmp_path, "c", 0.734)
    found = problems(tmp_path)
    assert len(found) == 1
    assert "a.md (bm25 at 256) and c.md (bm25 at 256) publish hit_rate@5 0.71 and 0.734" in found[0]


def test_comparisons_are_keyed_by_both_runs_and_the_metric(tmp_path):
    other = {**KEY, "config": {"retriever": "dense", "chunk_size": 256}}
    rows = [Row("dense vs bm25", comparison_key(other, KEY, "hit_rate@5"), {"diff": -0.1, "p": 0.01})]
    write_results("a", TABLE, caption="x", rows=rows, folder=tmp_path)
    rows = [Row("bm25 vs dense", comparison_key(KEY, other, "hit_rate@5"), {"diff": 0.1, "p": 0.01})]
    write_results("b", TABLE, caption="x", rows=rows, folder=tmp_path)
    assert problems(tmp_path) == []  # the reverse comparison is another key
    rows = [Row("dense vs bm25 again", comparison_key(other, KEY, "hit_rate@5"), {"diff": -0.12})]
    write_results("c", TABLE, caption="x", rows=rows, folder=tmp_path)
    assert [p for p in problems(tmp_path) if "publish diff -0.1 and -0.12" in p]


def test_rows_left_without_their_results_file_are_found(tmp_path):
    path = _write(tmp_path)
    path.unlink()
    assert problems(tmp_path) == ["t.json: rows without their results file t.md"]


@pytest.mark.parametrize("name", ["../escape", ".hidden", "a/b"])
def test_a_results_name_that_is_not_plain_is_refused(tmp_path, name):
    with pytest.raises(ValueError, match="not a plain name"):
        write_results(name, TABLE, caption="x", folder=tmp_path)
