"""The Dask Gateway's and the object store's addresses and settings: a malformed gateway address or store URL,
a broken ``hepwb-store.json`` link and bad gateway options are one line and exit 2 (never exit 3, never a
password shown), checked before anything runs; a gateway or S3 endpoint that never answers is one line, not a
hang. Servers bind 127.0.0.1 only."""

from __future__ import annotations

import contextlib
import re
import socket
import threading

import pytest
from typer.testing import CliRunner

from hepwb import limits
from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.store.url import check_store_url
from hepwb.sweep.gateway import gateway_address
from tests.helpers import run_main

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


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("http://" + "a" * 5000 + ".example", "has 5,0"),
        ("http://" + "a" * 70 + ".example", "is malformed"),
        ("http://alice:S3cretPW@" + "b" * 70 + ".example", "http://***@"),
        ("http://alice:S3cretPW@127.0.0.1:1", "cannot reach the Dask Gateway at http://***@127.0.0.1:1"),
    ],
)
def test_a_bad_gateway_address_is_one_line_without_its_password(address, says):
    pytest.importorskip("dask_gateway")
    from hepwb.exceptions import ConfigError
    from hepwb.sweep.gateway import make_gateway_cluster

    with pytest.raises(ConfigError) as info:
        make_gateway_cluster(address=address, workers=1)
    assert says in str(info.value) and "S3cretPW" not in str(info.value)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--adapt-min", "10", "--adapt-max", "2"], "--adapt-min 10 is above --adapt-max 2"),
        (["--image", "img\x1b]52;c;aGk=\x07"], "--image must be a container image"),
        (["--image", "a b; rm -rf /"], "--image must be a container image"),
    ],
)
def test_gateway_options_are_checked_before_anything_runs(home, monkeypatch, capsys, extra, says):
    pytest.importorskip("dask_gateway")
    args = ["sweep", "s.yaml", "--cluster", "gateway", "--gateway-address", "http://127.0.0.1:1", *extra]
    code, _, err = run_main(monkeypatch, capsys, *args)
    assert code == 2 and says in err and "\x1b" not in err


@pytest.mark.parametrize("kind", ["dangling", "loop"])
def test_a_broken_store_setting_link_is_refused(tmp_path, kind):
    from hepwb.store.url import STORE_FILE, resolve_store

    link = tmp_path / STORE_FILE
    link.symlink_to(tmp_path / "missing.json" if kind == "dangling" else link)
    with pytest.raises(ConfigError) as info:
        resolve_store(None, root=tmp_path)
    assert STORE_FILE in str(info.value)


@pytest.fixture
def silent_port():
    """A TCP listener on 127.0.0.1 that accepts every connection and never sends a byte."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_silent_gateway_is_one_line(silent_port, monkeypatch, scheme):
    pytest.importorskip("dask_gateway")
    from hepwb.sweep.gateway import make_gateway_cluster

    monkeypatch.setattr(limits, "GATEWAY_WAIT_S", 1.0)
    address = f"{scheme}://127.0.0.1:{silent_port}"
    with pytest.raises(ConfigError) as info:
        make_gateway_cluster(address=address)
    assert "does not answer HTTP within 1 s" in str(info.value) and address in str(info.value)


def test_a_silent_s3_endpoint_is_one_line(silent_port, monkeypatch, tmp_path):
    pytest.importorskip("s3fs")
    from hepwb.paths import Layout
    from hepwb.store import StoreError
    from hepwb.sweep.store_client import StoreSweep

    endpoint = f"http://127.0.0.1:{silent_port}"
    for name, value in {
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "y",
        "AWS_ENDPOINT_URL": endpoint,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(limits, "STORE_PROBE_S", 1.0)
    with pytest.raises(StoreError) as info:
        StoreSweep("s3://hepwb-probe-bucket/x", Layout(tmp_path))
    text = str(info.value)
    assert "s3://hepwb-probe-bucket/x" in text and endpoint in text and "\n" not in text
