"""Numeric options and addresses a user types are checked (counts, ports, ``hepwb acquire``'s interval and
service URLs, scheduler addresses): exit 2 and one message, no hang or traceback."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.sweep.executors.dask import DaskExecutor
from tests.helpers import run_hepwb, run_main

runner = CliRunner()


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


@pytest.mark.parametrize(
    ("port", "words"), [("70000", "less than or equal to 65535"), ("-1", "greater than")]
)
def test_a_port_out_of_range_is_one_line_and_exit_2(home, port, words):
    res = run_hepwb(home, "ner-serve", "--port", port)
    err = res.stderr.decode()
    assert res.returncode == 2 and err.count("\n") == 1, err
    assert err.startswith("error: Invalid value for '--port': Input should be") and words in err
    with pytest.raises(
        ConfigError, match=f"port is a TCP port \\(0: a free one\\) from 0 to 65535, got {port}"
    ):
        from hepwb.ner.service import NERService

        NERService(port=int(port))  # the Python API says it too


def test_a_port_in_use_is_one_line_and_exit_2(home):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = runner.invoke(app, ["ner-serve", "--port", str(port)])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert f"error: cannot listen on 127.0.0.1:{port}: Address already in use" in res.output


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--min-interval", "nan", "min_interval is seconds"),
        ("--min-interval", "-5", "got -5.0"),
        ("--min-interval", "1e400", "got inf"),
        ("--max-results", "0", "max_results is a whole number"),
        ("--arxiv-url", "http://[::1", "--arxiv-url (HEPWB_ARXIV_API_URL) 'http://[::1' is malformed"),
        ("--arxiv-url", "file:///etc/passwd", "is not an http:// or https:// URL"),
        ("--oai-url", "http://" + "a" * 5000 + ".example", "--oai-url (HEPWB_ARXIV_OAI_URL)"),
        ("--inspire-url", "http://me:s3cret@127.0.0.1:99999/api", "outside 1-65535"),
        ("--pdf-base", "ftp://arxiv.org", "--pdf-base (HEPWB_ARXIV_PDF_BASE)"),
    ],
)
def test_acquire_refuses_a_bad_interval_or_url_before_any_request(
    home, monkeypatch, capsys, option, value, says
):
    code, _, err = run_main(monkeypatch, capsys, "acquire", "acq", "--query", "higgs", option, value)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1
    assert "s3cret" not in err and not (home / "acq").exists()  # nothing written, no password shown
