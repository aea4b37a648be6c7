"""The NER service over real HTTP on 127.0.0.1, and the client's behaviour when the service fails; a service
URL with a space, a control character or a bad port is refused before connecting, its password never shown."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.models.entities import EntityExtractor
from hepwb.ner import NERClient, NERService, NERUnavailableError
from hepwb.ner.client import check_url
from tests.helpers import one_error_line

TEXTS = [
    "LHCb measured the J/psi production cross section at sqrt(s) = 13 TeV.",
    "With 140 fb^-1 CMS measured B_s^0 -> mu+ mu-.",
    "No entities in this sentence at all.",
]


def test_service_gives_the_in_process_entities_with_offsets():
    ex = EntityExtractor.default()
    with NERService() as ner:
        health = httpx.get(ner.url + "/health").json()
        reply = httpx.post(ner.url + "/ner", json={"texts": TEXTS}).json()
        client = NERClient(ner.url)
        assert client.entities(TEXTS) == [ex.entities(t) for t in TEXTS]
    assert health["status"] == "ok" and health["model"].startswith("hepwb-hep-dictionary@")
    assert client.model == reply["model"] == health["model"]
    for text, found in zip(TEXTS, reply["entities"], strict=True):
        assert all(text[e["start"] : e["end"]] == e["text"] for e in found)
    assert "experiment:lhcb" in {e["entity"] for e in reply["entities"][0]} and reply["entities"][2] == []


def test_bad_requests_get_400_with_the_fix():
    with NERService() as ner:
        r = httpx.post(ner.url + "/ner", content=b"[1, 2]", headers={"Content-Type": "application/json"})
        r2 = httpx.post(ner.url + "/ner", json={"texts": [1]})
        r3 = httpx.get(ner.url + "/nothing")
    assert r.status_code == 400 and '"texts"' in r.json()["error"]
    assert r2.status_code == 400 and "list of strings" in r2.json()["error"]
    assert r3.status_code == 404


class _Faulty:
    """A 127.0.0.1 server answering /ner with a fixed fault."""

    def __init__(self, mode: str) -> None:
        self.calls = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return

            def do_POST(self):
                outer.calls += 1
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if mode == "slow":
                    time.sleep(1.0)
                body = b"{not json" if mode == "malformed" else b'{"entities": []}'
                self.send_response(500 if mode == "500" else 200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(
    ("mode", "why"),
    [("500", "answered HTTP 500 3 times"), ("malformed", "malformed reply"),
     ("slow", "did not answer within"), ("short", "0 entity lists for 3 texts")],
)  # fmt: skip
def test_failures_stop_with_the_fix_or_fail_soft_with_a_log(mode, why, caplog):
    with _Faulty(mode) as srv:
        client = NERClient(srv.url, timeout=0.3, attempts=3)
        with pytest.raises(NERUnavailableError, match=why) as err:
            client.entities(TEXTS)
        assert "hepwb ner-serve" in str(err.value) and "--ner-fail-soft" in str(err.value)
        assert isinstance(err.value, ConnectionError)
        if mode == "500":
            assert srv.calls == 3  # retried
        soft = NERClient(srv.url, timeout=0.3, attempts=1, fail_soft=True)
        with caplog.at_level(logging.WARNING, logger="hepwb.ner"):
            assert soft.entities(TEXTS) == [[], [], []]
    assert any("failed soft for 3 text(s)" in r.getMessage() for r in caplog.records)


def test_a_service_that_is_down():
    with NERService() as ner:
        url = ner.url
    with pytest.raises(NERUnavailableError, match="cannot reach"):
        NERClient(url, attempts=1).entities(["LHCb"])


def test_a_service_that_never_answers_is_named_with_every_try_and_the_time_spent():
    import socket

    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(NERUnavailableError) as err:
            NERClient(url, timeout=0.2, attempts=3).entities(["LHCb"])
    assert "did not answer within 0.2 s in 3 tries (" in str(err.value) and "s in all)" in str(err.value)


def test_ner_serve_command_serves_until_stopped():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "hepwb"), "ner-serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for _ in range(100):
            try:
                reply = httpx.post(
                    f"http://127.0.0.1:{port}/ner", json={"text": "ATLAS at 13 TeV"}, timeout=1
                )
                break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            pytest.fail("hepwb ner-serve did not start")
        assert "experiment:atlas" in json.dumps(reply.json())
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert f"127.0.0.1:{port}/ner" in out


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:1 /x", "http://127.0.0.1:1/\tner", "http://127.0.0.1:1/\x1b]8;;x"]
)
def test_a_ner_url_with_a_space_or_control_character_is_refused_before_connecting(url):
    from hepwb.ner.client import check_url

    with pytest.raises(ConfigError, match="space or control character"):
        check_url(url)


def test_ner_url_password_is_never_shown(hub_env):
    with pytest.raises(ConfigError) as bad:
        check_url("http://user:s3cr3t@[::1")
    assert "s3cr3t" not in str(bad.value) and "'http://***@[::1' is malformed (Invalid port" in str(bad.value)
    client = NERClient("http://user:secretpw@127.0.0.1:1", attempts=1, timeout=2)
    with pytest.raises(NERUnavailableError) as down:
        client.entities(["LHCb"])
    assert "secretpw" not in str(down.value) and "cannot reach http://***@127.0.0.1:1/ner" in str(down.value)


def test_ner_url_with_a_bad_port_is_refused_before_connecting(hub_env):
    for url in ("http://127.0.0.1:99999", "http://u:s3cr3t@127.0.0.1:0/x"):
        with pytest.raises(ConfigError, match=r"has port \d+, outside 1-65535") as bad:
            check_url(url, "--ner-url (HEPWB_NER_URL)")
        assert "s3cr3t" not in str(bad.value)
    r = CliRunner().invoke(app, ["--ner-url", "http://user:s3cr3t@127.0.0.1:99999", "retrievers"])
    assert r.exit_code == 2
    line = one_error_line(r.output)
    assert "'http://***@127.0.0.1:99999' has port 99999" in line and "s3cr3t" not in line
