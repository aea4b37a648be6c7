"""``hepwb report``: its notebook kernel writes nothing in ``$HOME``, a catalog found damaged inside the
notebook is one line (exit 2), and nothing informational is printed on stderr."""

from __future__ import annotations

import os
import sys

import pytest

from tests.helpers import evaluate_bm25, run_main, three_notes


@pytest.mark.heavy
def test_the_report_kernel_writes_nothing_in_home(home, monkeypatch, capsys):
    corpus = three_notes(home)
    fresh = home / "fresh-home"
    fresh.mkdir()
    for variable in ("IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "MPLCONFIGDIR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(fresh))
    evaluate_bm25(monkeypatch, capsys, home, corpus)
    code, _, err = run_main(monkeypatch, capsys, "report")
    assert code == 0, err
    assert list(fresh.iterdir()) == [], sorted(str(p) for p in fresh.rglob("*"))[:5]
    assert (home / "proj" / "data" / "interim" / "jupyter" / "ipython").is_dir()
    for variable in (
        "IPYTHONDIR",
        "JUPYTER_RUNTIME_DIR",
        "MPLCONFIGDIR",
    ):  # set for this process by the report
        os.environ.pop(variable, None)


@pytest.mark.heavy
def test_a_catalog_damaged_inside_the_report_notebook_is_one_line(home, monkeypatch, capsys):
    corpus = three_notes(home)
    evaluate_bm25(monkeypatch, capsys, home, corpus)
    code, _, err = run_main(monkeypatch, capsys, "report")  # the catalog is made here
    assert code == 0, err
    catalog = home / "proj" / "reports" / "catalog.duckdb"
    with catalog.open("r+b") as fh:  # 200 kB of noise at offset 300,000
        fh.seek(300_000)
        fh.write(os.urandom(200_000))
    code, _, err = run_main(monkeypatch, capsys, "report")
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "damaged" in errors[0] and "a bug" not in errors[0], err[-500:]
    for variable in ("IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "MPLCONFIGDIR"):
        os.environ.pop(variable, None)


@pytest.mark.heavy
def test_report_prints_no_information_on_stderr(home, monkeypatch, capsys):
    import subprocess
    from pathlib import Path

    corpus = three_notes(home)
    evaluate_bm25(monkeypatch, capsys, home, corpus)
    hepwb_cli = Path(sys.executable).parent / "hepwb"
    done = subprocess.run(
        [str(hepwb_cli), "report"], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert "report.html" in done.stdout and "INFO" not in done.stderr, done.stderr[-500:]
