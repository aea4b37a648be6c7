from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hepwb.cli import app

runner = CliRunner()


@pytest.mark.parametrize("command", ["ingest", "evaluate", "sweep", "report", "run", "validate", "sql"])
def test_every_command_has_help(command):
    res = runner.invoke(app, [command, "--help"])
    assert res.exit_code == 0, res.output
    assert "Usage" in res.output


def test_run_without_corpus_names_the_option(monkeypatch, tmp_path):
    monkeypatch.delenv("HEPWB_CORPUS", raising=False)
    monkeypatch.setenv("HEPWB_SHARED", str(tmp_path / "absent"))
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    res = runner.invoke(app, ["run"])
    assert res.exit_code == 2
    assert "--corpus" in res.output and "HEPWB_CORPUS" in res.output


def test_bad_chunk_sizes_are_rejected():
    res = runner.invoke(app, ["ingest", "--chunk-sizes", "big"])
    assert res.exit_code != 0
    assert "comma-separated integers" in res.output
