"""``hepwb sql`` bounds the work a typed query can ask for: a statement timeout, a row cap, its memory, and
the bytes and columns it fetches and prints (long cells are cut in DuckDB, not copied into Python)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from hepwb.catalog import Catalog
from hepwb.cli import app
from tests.helpers import HEPWB

runner = CliRunner()


def test_a_runaway_statement_is_stopped_and_the_catalog_released(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    start = time.perf_counter()
    out = CliRunner().invoke(
        app, ["sql", "SELECT count(*) FROM range(1000000000000) t(a)", "--timeout-s", "0.5", "--no-lance"]
    )
    assert out.exit_code == 2 and out.output.count("\n") == 1
    assert "ran over 0.5 s and was stopped; narrow it or raise --timeout-s" in out.output
    assert time.perf_counter() - start < 30
    catalog = Catalog(tmp_path / "reports" / "catalog.duckdb")
    assert catalog.sql_bounded("SELECT 42 AS x")[0]["x"].tolist() == [42]  # usable again at once


def test_rows_are_capped_in_the_query_not_after_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = CliRunner().invoke(
        app, ["sql", "SELECT * FROM range(200000000) t(a)", "--max-rows", "3", "--no-lance"]
    )
    assert out.exit_code == 0, out.output
    assert out.output.split()[:4] == ["a", "0", "1", "2"]
    assert "the first 3 rows; there are more" in out.output
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 200_000  # KiB: never materialised
    bad = CliRunner().invoke(app, ["sql", "SELECT 1", "--max-rows", "0"])
    assert bad.exit_code == 2 and "--max-rows" in bad.output


def test_sql_cannot_lift_its_memory_or_threads(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    for query in ("SET memory_limit='100GB'", "SELECT 1; SET threads=64", "RESET memory_limit"):
        out = CliRunner().invoke(app, ["sql", query, "--no-lance"])
        assert out.exit_code == 2 and out.output.count("\n") == 1, out.output
        assert "the configuration has been locked: hepwb sql fixes memory (2,048 MiB)" in out.output
    shown = CliRunner().invoke(
        app, ["sql", "SELECT current_setting('threads') AS t", "--no-lance", "--memory-mb", "100"]
    )
    assert shown.output.split() == ["t", "2"]


def test_a_statement_over_its_memory_stops_with_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    query = "SELECT length(string_agg(repeat('x', 100), ',')) FROM generate_series(1, 5000000)"
    out = CliRunner().invoke(app, ["sql", query, "--no-lance", "--memory-mb", "64"])
    assert out.exit_code == 2 and out.output.count("\n") == 1, out.output
    assert "needed more than the 64 MiB of memory hepwb sql allows and was stopped" in out.output
    assert "--memory-mb" in out.output
    assert time.perf_counter() - start < 20
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 400_000  # KiB


_CHILD_RSS = """
import resource, subprocess, sys
out = subprocess.run(sys.argv[1:], capture_output=True, check=False)
print(out.returncode, len(out.stdout), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.stderr.write(out.stdout[-300:].decode("utf-8", "replace") + out.stderr.decode("utf-8", "replace"))
"""


@pytest.mark.heavy
def test_a_huge_cell_is_cut_in_duckdb_not_copied_into_python(home):
    query = "SELECT repeat('a', 50000000) AS s FROM range(3)"
    env = {**os.environ, "HEPWB_HOME": str(home)}
    argv = [sys.executable, "-c", _CHILD_RSS, HEPWB, "sql", query, "--memory-mb", "16", "--no-lance"]
    res = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=True)
    code, printed, rss_kib = map(int, res.stdout.split())
    assert code == 0, res.stderr
    assert printed < 100_000  # three cells of 20,000 characters (the old code printed 150 MB)
    assert "(cells longer than 20,000 characters are cut, ending in …)" in res.stderr
    assert rss_kib < 800_000  # the old code peaked at 1.2 GB on this query


def test_rows_stop_at_the_byte_cap_and_say_so(home, monkeypatch):
    from hepwb import limits

    monkeypatch.setattr(limits, "SQL_MAX_RESULT_BYTES", 2 * 1_048_576)
    res = runner.invoke(app, ["sql", "SELECT repeat('b', 10000) AS s FROM range(1000)", "--no-lance"])
    assert res.exit_code == 0, res.output[-300:]
    rows = [line for line in res.output.splitlines() if line.startswith("bbb")]
    assert 100 < len(rows) < 1000
    assert res.output.rstrip().endswith(
        f"(the first {len(rows):,} rows, 2 MiB of cells; there are more: add a LIMIT or select fewer or "
        "shorter columns)"
    )


def test_nested_values_print_as_text_and_a_too_wide_result_is_refused(home):
    res = runner.invoke(app, ["sql", "SELECT 1 AS a, [1, 2] AS l, {'k': 1} AS s, 'x' AS a", "--no-lance"])
    assert res.exit_code == 0 and res.output.split("\n")[1].split() == ["1", "[1,", "2]", "{'k':", "1}", "x"]
    wide = "SELECT " + ", ".join(f"{i} AS c{i}" for i in range(201))
    res = runner.invoke(app, ["sql", wide, "--no-lance"])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert "the result has 201 columns, more than the 200 hepwb sql prints" in res.output
