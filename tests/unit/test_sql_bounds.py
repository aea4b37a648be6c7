"""``hepwb sql`` bounds the work a typed query can ask for: a statement timeout and a row cap."""

from __future__ import annotations

import resource
import time

from typer.testing import CliRunner

from hepwb.catalog import Catalog
from hepwb.cli import app


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
