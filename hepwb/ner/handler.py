"""The NER service's HTTP side: a server holding a bounded number of connections, and its request handler.

The handler answers ``GET /health`` and ``POST /ner`` for a :class:`Service` (the
:class:`~hepwb.ner.service.NERService`): one deadline for the whole request (408), the token (401), the
``Content-Length`` (411, 400, 413), the requests tagged at once (503), the body (400) and the reply's bounds
(413), as :mod:`hepwb.ner.service` describes them. A bug answers 500 rather than dropping the connection.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from hepwb import limits
from hepwb.exceptions import ConfigError
from hepwb.files.parsers import parse_json
from hepwb.types import JSONObject

__all__ = [
    "TOKEN_ENV",
    "BoundedServer",
    "RequestHandler",
    "RequestTooLarge",
    "Service",
    "check_token_text",
    "handler_for",
    "parse_body",
]

_log = logging.getLogger("hepwb.ner.service")  # the service's log, whichever module writes it

TOKEN_ENV = "HEPWB_NER_TOKEN"
"""The environment variable holding the service's token (``hepwb ner-serve`` and the client read it)."""


def check_token_text(token: str, what: str = TOKEN_ENV) -> str:
    """``token`` when an HTTP header can carry it: printable ASCII, no space at either end.

    A header is ASCII (RFC 9110); a token of other characters would be sent by some clients as Latin-1 and
    by others as UTF-8, or not at all, so the service and hepwb's client refuse it (without showing it).

    Raises:
        ConfigError: Naming ``what`` (``HEPWB_NER_TOKEN``) and what is wrong with the token.

    Example:
        >>> check_token_text("s3cr-et_~+/=")
        's3cr-et_~+/='
        >>> check_token_text("p\u00e4sswort")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: HEPWB_NER_TOKEN holds a character that is not ASCII: an HTTP header ...
    """
    if not token.isascii():
        why = "holds a character that is not ASCII"
    elif any(ch < " " or ch == "\x7f" for ch in token):
        why = "holds a control character"
    elif token != token.strip():
        why = "starts or ends with a space"
    else:
        return token
    msg = (
        f"{what} {why}: an HTTP header carries ASCII only; give a token of ASCII letters, digits and "
        '-._~+/= (e.g. python -c "import secrets; print(secrets.token_urlsafe())")'
    )
    raise ConfigError(msg)


_LENGTH = re.compile(r"[0-9]{1,12}")  # Content-Length: digits only (no sign, exponent, spaces or list)
_DRAIN = 65_536  # a refused (unauthenticated) request's body is read (and dropped) up to this size
_BODY_FIX = 'send one JSON object: {"texts": ["...", ...]}'


class RequestTooLarge(ValueError):
    """A request over one of the service's bounds (answered HTTP 413 with this message)."""


def parse_body(body: bytes) -> Any:
    """The JSON value of a ``POST /ner`` body, read as RFC 8259 has it (raises ``ValueError`` naming why not).

    UTF-8 only; ``NaN``, ``Infinity`` and a key given twice are refused, nesting and integers are bounded
    (:func:`hepwb.files.parsers.parse_json`): every refusal is answered HTTP 400 with the reason.

    Example:
        >>> parse_body(b'{"texts": ["a"]}')
        {'texts': ['a']}
        >>> parse_body(b'{"texts": ["a"], "texts": ["b"]}')  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.files.readers.ReadError: request body: key 'texts' appears twice in one object ...
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"request body: byte {exc.start} is not UTF-8 (JSON is sent as UTF-8); {_BODY_FIX}"
        raise ValueError(msg) from None
    return parse_json(text or "null", "request body", fix=_BODY_FIX, strict=True)


class BoundedServer(ThreadingHTTPServer):
    """A threading server holding at most :data:`~hepwb.limits.NER_MAX_CONNECTIONS` connections at once.

    One more connection is closed at once (a client retries), so idle or slow connections cannot make
    the service start threads without end.
    """

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(limits.NER_MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection in a thread when a slot is free; else close it at once."""
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """Serve the connection, then free its slot."""
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


class Service(Protocol):
    """What the handler asks of the service it answers for."""

    model: str
    read_timeout_s: float
    busy: threading.BoundedSemaphore

    def authorized(self, header: str | None) -> bool:
        """Whether an ``Authorization`` header value carries the service's token."""
        ...

    def reply(self, payload: Any) -> JSONObject:
        """The reply to one request body."""
        ...


def handler_for(service: Service) -> type[RequestHandler]:
    """A :class:`RequestHandler` class answering for ``service``, its reads timing out as the service says."""
    handler: type[RequestHandler] = type(
        "Handler", (RequestHandler,), {"service": service, "timeout": service.read_timeout_s}
    )
    return handler


class RequestHandler(BaseHTTPRequestHandler):
    """One request to the service (:func:`handler_for` binds the service)."""

    # HTTP/1.0: one request per connection (no unbounded keep-alive); every read times out
    protocol_version = "HTTP/1.0"
    service: Service

    def log_message(self, *args: Any) -> None:
        """Quiet: no line per request."""
        return

    def setup(self) -> None:
        """Start the request's deadline."""
        super().setup()
        # one deadline for the whole request: a per-read timeout lets a byte every few seconds
        # keep a connection (and all of them, NER_MAX_CONNECTIONS) for ever
        self.late = False
        self.deadline = threading.Timer(self.service.read_timeout_s, self._expire)
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
                408, {"error": f"the request was not sent whole within {self.service.read_timeout_s:g} s"}
            )
        return not self.late

    def finish(self) -> None:
        """Stop the deadline and close the connection's files."""
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
        if self.service.authorized(self.headers.get("Authorization")):
            return False
        raw = self.headers.get("Content-Length") or ""
        if _LENGTH.fullmatch(raw) and int(raw) <= _DRAIN:  # read a small body: the 401 then arrives
            with contextlib.suppress(OSError):
                self.rfile.read(int(raw))
        self._send(401, {"error": f"send the service's token: Authorization: Bearer <token> ({TOKEN_ENV})"})
        return True

    def do_GET(self) -> None:
        """``GET /health``: the service's model."""
        if not self._received() or self._refused():
            return
        if self.path.rstrip("/") == "/health":
            self._send(200, {"status": "ok", "model": self.service.model})
        else:
            self._send(404, {"error": "unknown path; use POST /ner or GET /health"})

    def do_POST(self) -> None:
        """``POST /ner``: the entities of the body's texts, or the status saying why not."""
        if self.late:
            self._received()
            return
        if self._refused():
            return
        if self.path.rstrip("/") != "/ner":
            self._send(404, {"error": "unknown path; use POST /ner"})
            return
        length = self._length()
        if length is None:
            return
        try:
            self._answer(length)
        except RequestTooLarge as exc:
            self._send(413, {"error": str(exc)})
        except TimeoutError:
            self._send(408, {"error": f"no body within {self.service.read_timeout_s:g} s"})
        except (ValueError, KeyError) as exc:
            self._send(400, {"error": str(exc)})
        except Exception as exc:  # a bug must answer 500, not drop the connection
            self._send(500, {"error": f"{type(exc).__name__}: {exc}"})

    def _length(self) -> int | None:
        """The body's length from its one ``Content-Length``; ``None`` once answered 411, 400 or 413."""
        raw = self.headers.get_all("Content-Length") or []
        if self.headers.get("Transfer-Encoding") or not raw:
            self._send(411, {"error": "send the body with a Content-Length header (no chunked encoding)"})
            return None
        if len(raw) != 1 or not _LENGTH.fullmatch(raw[0]):
            self._send(400, {"error": "Content-Length must be one non-negative whole number of bytes"})
            return None
        length = int(raw[0])
        if length > limits.NER_MAX_BODY_BYTES:
            most = limits.NER_MAX_BODY_BYTES
            self._send(413, {"error": f"body over {most} bytes; send fewer texts per request"})
            return None
        return length

    def _answer(self, length: int) -> None:
        """Read the body within the deadline, wait for a free tagger (else 503), and answer its entities."""
        body = self.rfile.read(length)
        if not self._received():
            return
        if len(body) < length:
            self._send(400, {"error": f"the body ended after {len(body)} of {length} bytes"})
            return
        if not self.service.busy.acquire(timeout=self.service.read_timeout_s):
            busy = f"busy: {limits.NER_MAX_BUSY} requests are being tagged; retry shortly"
            self._send(503, {"error": busy})
            return
        try:
            self._send(200, self.service.reply(parse_body(body)))
        finally:
            self.service.busy.release()
