"""``hepwb evaluate --baseline RUN``: a damaged baseline, or one scored on another question set, is refused in
one line before a new run folder is written."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from hepwb.paths import Layout
from tests.helpers import one_error_line, run_main, two_notes


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
    line = one_error_line(err)
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
    assert code == 2 and "was scored on another question set" in one_error_line(err)
    assert list(runs.iterdir()) == [base]  # refused before the new run was scored and recorded
