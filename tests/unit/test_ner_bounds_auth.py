"""``POST /ner`` work per request is bounded (HTTP 413 naming the limit; the client splits), and a service
off loopback needs a token (issue 38 items 5 and 8), one an HTTP header can carry (ASCII). Servers bind
127.0.0.1 only."""

from __future__ import annotations

import socket
import time

import httpx
import pytest
from typer.testing import CliRunner

from hepwb import limits
from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.models.entities import EntityExtractor
from hepwb.ner import NERClient, NERService, NERUnavailableError
from hepwb.ner import service as service_module
from hepwb.ner.source import ner_source
from tests.helpers import one_error_line, run_main

WORDS = "LHCb ATLAS CMS ALICE BaBar "


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.0.2.1", "example.org"])
def test_off_loopback_the_service_refuses_to_start_without_a_token(monkeypatch, host):
    def no_bind(*_args, **_kwargs):
        raise AssertionError("bound a socket")

    monkeypatch.setattr(service_module, "BoundedServer", no_bind)
    with pytest.raises(ConfigError, match=r"reachable from other machines: give a token .*HEPWB_NER_TOKEN"):
        NERService(host=host)
    monkeypatch.delenv("HEPWB_NER_TOKEN", raising=False)
    out = CliRunner().invoke(app, ["ner-serve", "--host", host or "0.0.0.0", "--port", "0"])
    assert out.exit_code == 2 and out.output.count("\n") == 1, out.output
    assert "give a token (--token TOKEN or HEPWB_NER_TOKEN=TOKEN" in out.output


def test_loopback_names_need_no_token():
    assert all(service_module.is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"))
    assert service_module.check_token("127.0.0.1", None) is None
    assert service_module.check_token("0.0.0.0", "s3cret") == "s3cret"


def test_a_service_with_a_token_answers_only_requests_carrying_it(monkeypatch):
    monkeypatch.delenv("HEPWB_NER_TOKEN", raising=False)
    with NERService(token="s3cret") as ner:
        none = httpx.post(ner.url + "/ner", json={"text": "LHCb"})
        wrong = httpx.post(ner.url + "/ner", json={"text": "LHCb"}, headers={"Authorization": "Bearer nope"})
        health = httpx.get(ner.url + "/health")
        right = httpx.post(
            ner.url + "/ner", json={"text": "LHCb"}, headers={"Authorization": "Bearer s3cret"}
        )
        with pytest.raises(NERUnavailableError, match=r"needs the service's token .*HEPWB_NER_TOKEN"):
            NERClient(ner.url, attempts=1).entities(["LHCb"])
        monkeypatch.setenv("HEPWB_NER_TOKEN", "s3cret")
        client = NERClient(ner.url)
        assert client.entities(["LHCb at 13 TeV"]) == [EntityExtractor.default().entities("LHCb at 13 TeV")]
        assert client.model.startswith("hepwb-hep-dictionary@")
        assert "s3cret" not in repr(client)
    for r in (none, wrong, health):
        assert r.status_code == 401 and "Authorization: Bearer <token>" in r.json()["error"]
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
    assert right.status_code == 200 and right.json()["entities"][0][0]["entity"] == "experiment:lhcb"


def test_requests_over_the_bounds_get_413_naming_the_limit_at_once():
    with NERService() as ner:
        start = time.perf_counter()
        many = httpx.post(ner.url + "/ner", json={"texts": ["x"] * (limits.NER_MAX_TEXTS + 1)})
        long = httpx.post(ner.url + "/ner", json={"text": WORDS * (limits.NER_MAX_REQUEST_CHARS // 20)})
        elapsed = time.perf_counter() - start
    assert many.status_code == 413 and "limits.NER_MAX_TEXTS" in many.json()["error"]
    assert long.status_code == 413 and "limits.NER_MAX_REQUEST_CHARS" in long.json()["error"]
    assert elapsed < 10  # refused before any tagging
    assert limits.NER_MAX_REQUEST_CHARS <= 2_000_000 and limits.NER_MAX_REPLY_BYTES <= 32 * 1_048_576


def test_a_reply_over_its_bound_gets_413(monkeypatch):
    monkeypatch.setattr(limits, "NER_MAX_REPLY_BYTES", 1_000)
    with NERService() as ner:
        r = httpx.post(ner.url + "/ner", json={"text": WORDS * 10})
    assert r.status_code == 413 and "limits.NER_MAX_REPLY_BYTES" in r.json()["error"]


@pytest.mark.heavy
def test_the_client_splits_its_batches_to_stay_under_the_bounds(monkeypatch):
    """Small bounds: many texts, a long text and replies over the bound still give every entity."""
    monkeypatch.setattr(limits, "NER_MAX_TEXTS", 3)
    monkeypatch.setattr(limits, "NER_MAX_REQUEST_CHARS", 200)
    monkeypatch.setattr(limits, "NER_MAX_REPLY_BYTES", 400)
    ex = EntityExtractor.default()
    texts = [f"{WORDS[: 5 * (i % 5 + 1)]}measured at 13 TeV." for i in range(10)] + [WORDS * 40, ""]
    with NERService() as ner:
        got = NERClient(ner.url).entities(texts)
    assert got == [ex.entities(t) for t in texts]


def test_the_service_tags_a_bounded_number_of_requests_at_once(monkeypatch):
    monkeypatch.setattr(limits, "NER_MAX_BUSY", 1)
    with NERService(read_timeout_s=0.5) as ner:
        assert ner.busy.acquire()  # one request being tagged
        try:
            r = httpx.post(ner.url + "/ner", json={"text": "LHCb"}, timeout=10)
            assert r.status_code == 503 and "busy: 1 requests" in r.json()["error"]
        finally:
            ner.busy.release()
        r = httpx.post(ner.url + "/ner", json={"text": "LHCb"}, timeout=10)
        assert r.status_code == 200 and r.json()["entities"][0]


def test_the_service_holds_a_bounded_number_of_connections(monkeypatch):
    import socket

    monkeypatch.setattr(limits, "NER_MAX_CONNECTIONS", 2)
    with NERService(read_timeout_s=30) as ner:
        port = int(ner.url.rsplit(":", 1)[1])
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]  # send nothing
        try:
            extra = socket.create_connection(("127.0.0.1", port))
            extra.settimeout(10)
            assert extra.recv(1) == b""  # closed by the service at once, not left waiting
            extra.close()
        finally:
            for s in idle:
                s.close()
        deadline = time.monotonic() + 10  # the idle connections' threads end when they see the close
        while True:
            try:
                r = httpx.get(ner.url + "/health", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
        assert r.status_code == 200


def test_a_client_that_goes_away_prints_no_traceback_on_the_service_terminal(capfd, caplog):
    """Probe round 6 (G6): a connection closed before the reply wrote 40 lines of traceback to stderr."""
    import socket
    import struct

    with NERService() as ner:
        port = int(ner.url.rsplit(":", 1)[1])
        body = b'{"texts": ["' + b"LHCb ATLAS " * 20_000 + b'"]}'
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"POST /ner HTTP/1.0\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # a reset, before the reply is written
        for exc in (BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "reset"), TimeoutError()):
            try:
                raise exc
            except OSError:
                ner._server.handle_error(None, ("127.0.0.1", 1))
        try:
            raise RuntimeError("a bug")
        except RuntimeError:
            ner._server.handle_error(None, ("127.0.0.1", 1))
        assert httpx.get(ner.url + "/health", timeout=10).status_code == 200  # the service goes on
    assert "Traceback" not in capfd.readouterr().err
    messages = [r.getMessage() for r in caplog.records]
    assert "NER request from 127.0.0.1 failed: RuntimeError: a bug" in messages  # anything else: one line
    assert not [m for m in messages if "Error" in m and "RuntimeError" not in m]  # a client leaving: nothing


@pytest.mark.parametrize("token", ["pässwort", "tok\x1b]52;c;aGk=\x07en", " padded "])
def test_ner_serve_refuses_a_token_no_http_header_carries(home, monkeypatch, capsys, token):
    monkeypatch.setenv("HEPWB_NER_TOKEN", token)
    with socket.socket() as taken:  # a port in use: were the token let through, binding fails (no hang)
        taken.bind(("127.0.0.1", 0))
        port = str(taken.getsockname()[1])
        code, _, err = run_main(monkeypatch, capsys, "ner-serve", "--port", port)
    line = one_error_line(err)
    assert code == 2 and "HEPWB_NER_TOKEN" in line and "an HTTP header carries ASCII only" in line
    assert token.strip() not in line and "\x1b" not in line  # the secret is not shown


def test_the_ner_client_refuses_a_token_it_cannot_send(monkeypatch):
    monkeypatch.setenv("HEPWB_NER_TOKEN", "pässwort")
    with pytest.raises(ConfigError, match=r"^HEPWB_NER_TOKEN holds a character that is not ASCII: an HTTP"):
        ner_source("http://127.0.0.1:1")
    monkeypatch.setenv("HEPWB_NER_TOKEN", "s3cret-token_~+/=")
    assert ner_source("http://127.0.0.1:1").token == "s3cret-token_~+/="  # type: ignore[attr-defined]
