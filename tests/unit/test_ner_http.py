"""The NER service parses HTTP defensively: a bad Content-Length gets a JSON error, bodies go through the
bounded JSON reader, idle clients time out and slow ones cannot keep the service from everyone."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time

import httpx
import pytest

from hepwb import limits
from hepwb.ner.service import NERService


@pytest.fixture(scope="module")
def service():
    with NERService(read_timeout_s=1.0) as svc:
        yield svc


def exchange(svc: NERService, head: str, body: bytes = b"") -> tuple[int, dict, float]:
    """Send raw bytes on 127.0.0.1; the status, JSON reply and seconds until the server closed."""
    start = time.perf_counter()
    with socket.create_connection((svc.host, int(svc.url.rsplit(":", 1)[1])), timeout=10) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1]) if data else 0
    reply = json.loads(data.split(b"\r\n\r\n", 1)[1]) if b"\r\n\r\n" in data else {}
    return status, reply, time.perf_counter() - start


BODY = json.dumps({"text": "the CMS detector"}).encode()


@pytest.mark.parametrize(
    ("length", "status"),
    [("-5", 400), ("1e3", 400), (" 12x", 400), ("12, 12", 400), ("99999999999999", 400), (None, 411)],
)
def test_a_content_length_that_is_not_a_plain_number_is_refused_with_json(service, length, status):
    head = "POST /ner HTTP/1.1\r\nHost: x" + (f"\r\nContent-Length: {length}" if length is not None else "")
    code, reply, _ = exchange(service, head, BODY)
    assert code == status and "error" in reply


def test_the_body_cap_and_chunked_bodies(service):
    code, reply, _ = exchange(service, f"POST /ner HTTP/1.1\r\nContent-Length: {17 * 1024 * 1024}")
    assert code == 413 and "send fewer texts" in reply["error"]
    code, reply, _ = exchange(service, "POST /ner HTTP/1.1\r\nTransfer-Encoding: chunked", b"0\r\n\r\n")
    assert code == 411
    code, reply, _ = exchange(service, f"POST /ner HTTP/1.1\r\nContent-Length: {len(BODY)}", BODY)
    assert code == 200 and reply["entities"][0]


def test_a_client_that_sends_too_little_or_nothing_is_let_go(service):
    code, _reply, took = exchange(service, "POST /ner HTTP/1.1\r\nContent-Length: 100", b'{"text": ')
    assert code == 408 and took < 5
    start = time.perf_counter()
    with socket.create_connection((service.host, int(service.url.rsplit(":", 1)[1])), timeout=10) as sock:
        assert sock.recv(1024) == b""  # the server closes an idle connection after its read timeout
    assert time.perf_counter() - start < 5


def _post_raw(url: str, body: bytes) -> tuple[int, str]:
    """POST ``body`` to ``url``/ner on a raw socket: the status and the reply's JSON ``error``."""
    port = int(url.rsplit(":", 1)[1])
    head = f"POST /ner HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, json.loads(data.split(b"\r\n\r\n", 1)[1]).get("error", "")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b'{"texts":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested deeper than 100 levels"),
        (b'{"texts": ["a"], "texts": ["b"]}', "key 'texts' appears twice in one object"),
        (b'{"texts": ["a"], "x": NaN}', "NaN is not a JSON number"),
        (b'{"texts": ["a"], "x": 1e999}', "beyond the range of a float"),
        (b'{"texts": ["caf\xe9"]}', "is not UTF-8"),
    ],
)
def test_ner_bodies_go_through_the_bounded_json_reader(body, words):
    with NERService() as ner:
        status, error = _post_raw(ner.url, body)
        ok = httpx.post(ner.url + "/ner", json={"texts": ["LHCb"]})
    assert status == 400 and words in error and "\n" not in error, (status, error)
    assert ok.status_code == 200 and ok.json()["entities"][0][0]["entity"] == "experiment:lhcb"


@pytest.mark.heavy
def test_slow_clients_cannot_keep_the_ner_service_from_everyone(monkeypatch):
    monkeypatch.setattr(limits, "NER_MAX_CONNECTIONS", 8)
    stop = threading.Event()
    with NERService(read_timeout_s=3.0) as ner:
        port = int(ner.url.rsplit(":", 1)[1])
        slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(10)]  # more than the slots
        for s in slow:
            s.sendall(b"POST /ner HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")

        def trickle() -> None:  # a byte per connection every 0.2 s, until the test ends
            while not stop.wait(0.2):
                for s in slow:
                    with contextlib.suppress(OSError):
                        s.sendall(b" ")

        threading.Thread(target=trickle, daemon=True).start()
        try:
            first = slow[0]
            first.settimeout(30)  # a guard: before the fix the service never answered it
            answer = b""
            while chunk := first.recv(4096):
                answer += chunk
            assert answer.startswith(b"HTTP/1.0 408") and b"not sent whole within 3 s" in answer, answer
            for _ in range(50):  # the slots of the cut connections free as their threads end
                try:
                    health = httpx.get(ner.url + "/health", timeout=5)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            else:
                pytest.fail("/health never answered while slow clients trickled")
            assert health.status_code == 200 and health.json()["status"] == "ok"
        finally:
            stop.set()
            for s in slow:
                s.close()
