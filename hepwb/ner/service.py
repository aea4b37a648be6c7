"""The NER HTTP service: ``POST /ner`` → entities, ``GET /health``; stdlib server on 127.0.0.1.

Request ``{"texts": ["…", …]}`` (or ``{"text": "…"}``); reply ``{"model": NAME, "entities": [[{"entity",
"start", "end", "text"}, …], …]}``, one list per text, offsets into that text. ``model`` names the active
model: ``hepwb-hep-dictionary@<sha256 of the dictionary, 12 hex>``, recorded with every chunk set indexed
through the service.

One request holds at most :data:`~hepwb.limits.NER_MAX_TEXTS` texts and
:data:`~hepwb.limits.NER_MAX_REQUEST_CHARS` characters (a few seconds of tagging), and its reply at most
:data:`~hepwb.limits.NER_MAX_REPLY_BYTES`; beyond them the answer is HTTP 413 with a JSON ``error`` naming
the limit (:class:`~hepwb.ner.client.NERClient` sends smaller parts). On an address other than loopback the
service needs a token (:func:`check_token`); with a token every request must carry
``Authorization: Bearer <token>`` (else HTTP 401). At most :data:`~hepwb.limits.NER_MAX_BUSY` requests are
tagged at once (others wait up to the read timeout, then get HTTP 503, which the client retries) and at
most :data:`~hepwb.limits.NER_MAX_CONNECTIONS` connections are held open (one more is closed at once). A
request must arrive whole, headers and body, within the read timeout (:data:`READ_TIMEOUT_S`) in all: a
client sending a byte now and then is answered 408 and closed, so slow clients cannot keep the connections.
The body is JSON as RFC 8259 has it (UTF-8; no ``NaN``, no repeated key; nesting bounded), else HTTP 400.

Example:
    >>> import httpx
    >>> with NERService() as ner:
    ...     reply = httpx.post(ner.url + "/ner", json={"text": "LHCb at sqrt(s) = 13 TeV"}).json()
    >>> sorted(e["entity"] for e in reply["entities"][0])
    ['energy:13tev', 'experiment:lhcb']
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import re
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hepwb import limits
from hepwb.exceptions import ConfigError
from hepwb.ids import text_sha256
from hepwb.models.entities import EntityExtractor
from hepwb.readers import parse_json
from hepwb.types import JSONObject

_log = logging.getLogger(__name__)

__all__ = [
    "TOKEN_ENV",
    "NERService",
    "RequestTooLarge",
    "check_token",
    "is_loopback",
    "model_name",
    "parse_body",
]

TOKEN_ENV = "HEPWB_NER_TOKEN"
"""The environment variable holding the service's token (``hepwb ner-serve`` and the client read it)."""

_LENGTH = re.compile(r"[0-9]{1,12}")  # Content-Length: digits only (no sign, exponent, spaces or list)
_DRAIN = 65_536  # a refused (unauthenticated) request's body is read (and dropped) up to this size
READ_TIMEOUT_S = 10.0
"""A request (headers and body) not received whole within this many seconds is answered 408 or closed."""
_BODY_FIX = 'send one JSON object: {"texts": ["...", ...]}'


class RequestTooLarge(ValueError):
    """A request over one of the service's bounds (answered HTTP 413 with this message)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (``localhost``, ``127.0.0.0/8``, ``::1``).

    Example:
        >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0"), is_loopback("")
        (True, True, False, False)
    """
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name or an empty host (every interface): reachable from elsewhere
        return False


def check_token(host: str, token: str | None) -> str | None:
    """The token the service on ``host`` requires (``None``: none); refused without one off loopback.

    Raises:
        ConfigError: ``host`` is not loopback and there is no token (before anything binds).

    Example:
        >>> check_token("127.0.0.1", None) is None
        True
        >>> check_token("0.0.0.0", None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: the NER service on 0.0.0.0 is reachable from other machines: ...
    """
    token = token or None
    if token is None and not is_loopback(host):
        msg = (
            f"the NER service on {host or 'every interface'} is reachable from other machines: give a token "
            f"(--token TOKEN or {TOKEN_ENV}=TOKEN; clients send it from {TOKEN_ENV}), or serve on 127.0.0.1"
        )
        raise ConfigError(msg)
    return token


def model_name() -> str:
    """The name of the default model: the HEP dictionary and rules, with the dictionary's hash."""
    from importlib.resources import files

    data = files("hepwb.models").joinpath("hep_entities.yaml").read_text(encoding="utf-8")
    return f"hepwb-hep-dictionary@{text_sha256(data)[:12]}"


def parse_body(body: bytes) -> Any:
    """The JSON value of a ``POST /ner`` body, read as RFC 8259 has it (raises ``ValueError`` naming why not).

    UTF-8 only; ``NaN``, ``Infinity`` and a key given twice are refused, nesting and integers are bounded
    (:func:`hepwb.readers.parse_json`): every refusal is answered HTTP 400 with the reason.

    Example:
        >>> parse_body(b'{"texts": ["a"]}')
        {'texts': ['a']}
        >>> parse_body(b'{"texts": ["a"], "texts": ["b"]}')  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.readers.ReadError: request body: key 'texts' appears twice in one object ...
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"request body: byte {exc.start} is not UTF-8 (JSON is sent as UTF-8); {_BODY_FIX}"
        raise ValueError(msg) from None
    return parse_json(text or "null", "request body", fix=_BODY_FIX, strict=True)


class _BoundedServer(ThreadingHTTPServer):
    """A threading server holding at most :data:`~hepwb.limits.NER_MAX_CONNECTIONS` connections at once.

    One more connection is closed at once (a client retries), so idle or slow connections cannot make
    the service start threads without end.
    """

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(limits.NER_MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (reset, broken pipe, timeout) is normal; anything else is one log line.

        socketserver's default prints a whole traceback on the service's terminal, which any client could
        trigger by closing its connection before the reply.
        """
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return
        _log.warning("NER request from %s failed: %s: %s", client_address[0], type(exc).__name__, exc)


class NERService:
    """The NER service on ``host``:``port`` (0: a free port), in a background thread.

    Args:
        extractor: The model (default: hepwb's HEP dictionary and rules).
        host: Interface to listen on (127.0.0.1: this machine only; any other needs ``token``).
        port: TCP port (0 picks a free one; see :attr:`url`).
        read_timeout_s: Seconds a connection may take to send its request.
        token: Every request must carry ``Authorization: Bearer <token>`` (required off loopback).

    Raises:
        ConfigError: ``host`` is not loopback and there is no ``token`` (nothing is bound).
    """

    def __init__(
        self,
        extractor: EntityExtractor | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        read_timeout_s: float = READ_TIMEOUT_S,
        token: str | None = None,
    ) -> None:
        self.token = check_token(host, token)
        self.extractor = extractor or EntityExtractor.default()
        self.model = model_name() if extractor is None else type(extractor).__name__
        self.host = host
        self.read_timeout_s = read_timeout_s
        self.busy = threading.BoundedSemaphore(limits.NER_MAX_BUSY)
        limits.PORT.check(port)
        try:
            self._server = _BoundedServer((host, port), self._handler())
        except OSError as exc:  # the port taken, the address not this machine's …
            why = exc.strerror or exc
            msg = f"cannot listen on {host}:{port}: {why}; choose another --port (0: a free one)"
            raise ConfigError(msg) from None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL of the running service."""
        return f"http://{self.host}:{self._server.server_port}"

    def reply(self, payload: Any) -> JSONObject:
        """The reply to one request body (raises ``ValueError`` for a malformed one)."""
        if not isinstance(payload, dict):
            msg = 'the body must be a JSON object: {"texts": ["...", ...]} or {"text": "..."}'
            raise ValueError(msg)
        texts = payload.get("texts", [payload["text"]] if "text" in payload else None)
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            msg = '"texts" must be a list of strings (or give one "text")'
            raise ValueError(msg)
        if len(texts) > limits.NER_MAX_TEXTS:
            msg = (
                f"{len(texts):,} texts, more than the {limits.NER_MAX_TEXTS:,} one request may hold "
                "(limits.NER_MAX_TEXTS); send fewer per request"
            )
            raise RequestTooLarge(msg)
        chars = sum(len(t) for t in texts)
        if chars > limits.NER_MAX_REQUEST_CHARS:
            msg = (
                f"{chars:,} characters of text, more than the {limits.NER_MAX_REQUEST_CHARS:,} one request "
                "may hold (limits.NER_MAX_REQUEST_CHARS); send fewer or shorter texts per request"
            )
            raise RequestTooLarge(msg)
        found, size = [], 0
        for t in texts:
            row = [
                {"entity": m.entity, "start": m.start, "end": m.end, "text": m.surface}
                for m in self.extractor.find(t)
            ]
            size += len(json.dumps(row))
            if size > limits.NER_MAX_REPLY_BYTES:
                msg = (
                    f"the entities of these texts make a reply over {limits.NER_MAX_REPLY_BYTES:,} bytes "
                    "(limits.NER_MAX_REPLY_BYTES); send fewer or shorter texts per request"
                )
                raise RequestTooLarge(msg)
            found.append(row)
        return {"model": self.model, "entities": found}

    def authorized(self, header: str | None) -> bool:
        """Whether an ``Authorization`` header value carries the token (always, without a token)."""
        if self.token is None:
            return True
        scheme, _, given = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        service = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.0: one request per connection (no unbounded keep-alive); every read times out
            protocol_version = "HTTP/1.0"
            timeout = service.read_timeout_s

            def log_message(self, *args: Any) -> None:  # quiet: no line per request
                return

            def setup(self) -> None:
                super().setup()
                # one deadline for the whole request: a per-read timeout lets a byte every few seconds
                # keep a connection (and all of them, NER_MAX_CONNECTIONS) for ever
                self.late = False
                self.deadline = threading.Timer(service.read_timeout_s, self._expire)
                self.deadline.daemon = True
                self.deadline.start()

            def _expire(self) -> None:
                self.late = True
                with contextlib.suppress(OSError):  # a blocked read returns now, with what has come
                    self.connection.shutdown(socket.SHUT_RD)

            def _received(self) -> bool:
                """Stop the deadline: the request is in; ``False`` (answered 408) when it came too late."""
                self.deadline.cancel()
                if self.late:
                    self._send(
                        408, {"error": f"the request was not sent whole within {service.read_timeout_s:g} s"}
                    )
                return not self.late

            def finish(self) -> None:
                self.deadline.cancel()
                super().finish()

            def _send(self, code: int, body: JSONObject) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                if code == 401:
                    self.send_header("WWW-Authenticate", 'Bearer realm="hepwb-ner"')
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _refused(self) -> bool:
                """Answer 401 (and say so) when the request lacks the service's token."""
                if service.authorized(self.headers.get("Authorization")):
                    return False
                raw = self.headers.get("Content-Length") or ""
                if _LENGTH.fullmatch(raw) and int(raw) <= _DRAIN:  # read a small body: the 401 then arrives
                    with contextlib.suppress(OSError):
                        self.rfile.read(int(raw))
                self._send(
                    401, {"error": f"send the service's token: Authorization: Bearer <token> ({TOKEN_ENV})"}
                )
                return True

            def do_GET(self) -> None:
                if not self._received() or self._refused():
                    return
                if self.path.rstrip("/") == "/health":
                    self._send(200, {"status": "ok", "model": service.model})
                else:
                    self._send(404, {"error": "unknown path; use POST /ner or GET /health"})

            def do_POST(self) -> None:
                if self.late:
                    self._received()
                    return
                if self._refused():
                    return
                if self.path.rstrip("/") != "/ner":
                    self._send(404, {"error": "unknown path; use POST /ner"})
                    return
                raw = self.headers.get_all("Content-Length") or []
                if self.headers.get("Transfer-Encoding") or not raw:
                    self._send(
                        411, {"error": "send the body with a Content-Length header (no chunked encoding)"}
                    )
                    return
                if len(raw) != 1 or not _LENGTH.fullmatch(raw[0]):
                    self._send(
                        400, {"error": "Content-Length must be one non-negative whole number of bytes"}
                    )
                    return
                length = int(raw[0])
                if length > limits.NER_MAX_BODY_BYTES:
                    most = limits.NER_MAX_BODY_BYTES
                    self._send(413, {"error": f"body over {most} bytes; send fewer texts per request"})
                    return
                try:
                    body = self.rfile.read(length)
                    if not self._received():
                        return
                    if len(body) < length:
                        self._send(400, {"error": f"the body ended after {len(body)} of {length} bytes"})
                        return
                    if not service.busy.acquire(timeout=service.read_timeout_s):
                        busy = f"busy: {limits.NER_MAX_BUSY} requests are being tagged; retry shortly"
                        self._send(503, {"error": busy})
                        return
                    try:
                        self._send(200, service.reply(parse_body(body)))
                    finally:
                        service.busy.release()
                except RequestTooLarge as exc:
                    self._send(413, {"error": str(exc)})
                except TimeoutError:
                    self._send(408, {"error": f"no body within {service.read_timeout_s:g} s"})
                except (ValueError, KeyError) as exc:
                    self._send(400, {"error": str(exc)})
                except Exception as exc:  # a bug must answer 500, not drop the connection
                    self._send(500, {"error": f"{type(exc).__name__}: {exc}"})

        return Handler

    def start(self) -> NERService:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (``hepwb ner-serve``)."""
        self._server.serve_forever()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> NERService:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
