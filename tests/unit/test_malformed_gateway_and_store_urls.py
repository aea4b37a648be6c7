"""Probe round 6 (M3, M4): a malformed gateway address or store URL is one line and exit 2, never exit 3."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.store.url import check_store_url
from hepwb.sweep.gateway import gateway_address

runner = CliRunner()


@pytest.mark.parametrize("address", ["http://[::1", "https://gw:99999", "http://[zz]:80"])
def test_a_malformed_gateway_address_is_one_line(address):
    with pytest.raises(
        ConfigError, match=r"gateway address .*(malformed|outside 1-65535).*give https://HOST"
    ):
        gateway_address(address)


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("s3://b[x/p", "is no URL"),
        ("s3://bucket]/p", "is no URL"),
        ("s3://b\x1b]8;;http://x\x07/p", "holds the control character U+001B"),
        ("s3://b\udcff/p", "holds a lone surrogate"),
    ],
)
def test_a_malformed_store_url_is_one_line(url, words):
    with pytest.raises(ConfigError, match=re.escape(words)):
        check_store_url(url)


def test_the_cli_refuses_a_malformed_store_url_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    res = runner.invoke(app, ["sweep", "--store", "s3://b[x/p", "--dry-run"])
    assert res.exit_code == 2, res.output
    assert "is no URL" in res.output and "Traceback" not in res.output


def test_a_gateway_that_answers_its_health_check_then_stalls_is_one_line(monkeypatch):
    """Probe round 6 (G4, later stage): the dask-gateway client has no timeout of its own."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from hepwb import limits
    from hepwb.sweep.gateway import make_gateway_cluster

    pytest.importorskip("dask_gateway")
    release = threading.Event()

    class Stalling(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            if self.path.startswith("/api/health"):
                body = b'{"status": "pass"}'
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                release.wait(30)  # the options never come while the test waits

    server = ThreadingHTTPServer(("127.0.0.1", 0), Stalling)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(limits, "GATEWAY_WAIT_S", 1.0)
    address = f"http://127.0.0.1:{server.server_port}"
    try:
        words = re.escape(f"Gateway at {address}: no cluster options within 1 s")
        with pytest.raises(ConfigError, match=words):
            make_gateway_cluster(address=address)
    finally:
        release.set()
        server.shutdown()
        server.server_close()
