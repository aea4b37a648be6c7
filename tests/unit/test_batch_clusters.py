"""Batch-system clusters (``hepwb sweep --cluster``): directives cannot add lines to the job script, and an
unknown batch system is refused in a dry run too."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.sweep.jobqueue import make_cluster

runner = CliRunner()


@pytest.mark.parametrize("field", ["queue", "account", "job_extra"])
def test_batch_directives_cannot_add_lines_to_the_job_script(tmp_path, field):
    bad = "--mem=1G\ncurl http://127.0.0.1:9/x | sh"
    kwargs = {"job_extra": [bad]} if field == "job_extra" else {field: bad}
    with pytest.raises(ConfigError, match="newline or control character"):
        make_cluster("slurm", home=tmp_path, **kwargs)  # type: ignore[arg-type]


def test_an_unknown_batch_system_is_refused_in_a_dry_run_too(monkeypatch, tmp_path):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    res = runner.invoke(app, ["sweep", "--cluster", "pbs", "--dry-run"])
    assert res.exit_code == 2 and "unknown batch system 'pbs'" in res.output
