"""Numeric options and addresses a user types are checked: exit 2 and one message, no hang or traceback."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.sweep.executors.dask import DaskExecutor


@pytest.mark.parametrize(
    ("option", "value"),
    [("--workers", "-1"), ("--workers", "0"), ("--gpu-workers", "-2"), ("--max-cells", "0")],
)
def test_counts_below_their_minimum_are_refused(option, value):
    out = CliRunner().invoke(app, ["sweep", "--dry-run", option, value])
    assert out.exit_code == 2 and f"Invalid value for '{option}'" in out.output


@pytest.mark.parametrize("address", ["not a url::", "tcp://", "tcp://256.1.1.1:notaport"])
def test_a_malformed_scheduler_address_is_one_message(address):
    with pytest.raises(ConfigError, match=r"cannot connect to the Dask scheduler at .*give tcp://host:port"):
        DaskExecutor(scheduler=address)
