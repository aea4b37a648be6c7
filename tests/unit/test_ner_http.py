"""The NER service parses HTTP defensively: a bad Content-Length gets a JSON error; idle clients time out."""

from __future__ import annotations

import json
import socket
import time

import pytest

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
