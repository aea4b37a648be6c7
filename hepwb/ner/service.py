"""The NER HTTP service: ``POST /ner`` → entities, ``GET /health``; stdlib server on 127.0.0.1.

Request ``{"texts": ["…", …]}`` (or ``{"text": "…"}``); reply ``{"model": NAME, "entities": [[{"entity",
"start", "end", "text"}, …], …]}``, one list per text, offsets into that text. ``model`` names the active
model: ``hepwb-hep-dictionary@<sha256 of the dictionary, 12 hex>``, recorded with every chunk set indexed
through the service.

Example:
    >>> import httpx
    >>> with NERService() as ner:
    ...     reply = httpx.post(ner.url + "/ner", json={"text": "LHCb at sqrt(s) = 13 TeV"}).json()
    >>> sorted(e["entity"] for e in reply["entities"][0])
    ['energy:13tev', 'experiment:lhcb']
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hepwb.ids import text_sha256
from hepwb.models.entities import EntityExtractor
from hepwb.types import JSONObject

__all__ = ["NERService", "model_name"]

_MAX_BODY = 16 * 1024 * 1024
_LENGTH = re.compile(r"[0-9]{1,12}")  # Content-Length: digits only (no sign, exponent, spaces or list)
READ_TIMEOUT_S = 10.0
"""A connection that sends nothing (or too little) for this long is answered 408 or closed."""


def model_name() -> str:
    """The name of the default model: the HEP dictionary and rules, with the dictionary's hash."""
    from importlib.resources import files

    data = files("hepwb.models").joinpath("hep_entities.yaml").read_text(encoding="utf-8")
    return f"hepwb-hep-dictionary@{text_sha256(data)[:12]}"


class NERService:
    """The NER service on ``host``:``port`` (0: a free port), in a background thread.

    Args:
        extractor: The model (default: hepwb's HEP dictionary and rules).
        host: Interface to listen on (127.0.0.1: this machine only).
        port: TCP port (0 picks a free one; see :attr:`url`).
    """

    def __init__(
        self,
        extractor: EntityExtractor | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        read_timeout_s: float = READ_TIMEOUT_S,
    ) -> None:

        self.extractor = extractor or EntityExtractor.default()
        self.model = model_name() if extractor is None else type(extractor).__name__
        self.host = host
        self.read_timeout_s = read_timeout_s
        self._server = ThreadingHTTPServer((host, port), self._handler())
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
        found = [
            [
                {"entity": m.entity, "start": m.start, "end": m.end, "text": m.surface}
                for m in self.extractor.find(t)
            ]
            for t in texts
        ]
        return {"model": self.model, "entities": found}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        service = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.0: one request per connection (no unbounded keep-alive); every read times out
            protocol_version = "HTTP/1.0"
            timeout = service.read_timeout_s

            def log_message(self, *args: Any) -> None:  # quiet: no line per request
                return

            def _send(self, code: int, body: JSONObject) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/health":
                    self._send(200, {"status": "ok", "model": service.model})
                else:
                    self._send(404, {"error": "unknown path; use POST /ner or GET /health"})

            def do_POST(self) -> None:
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
                if length > _MAX_BODY:
                    self._send(413, {"error": f"body over {_MAX_BODY} bytes; send fewer texts per request"})
                    return
                try:
                    body = self.rfile.read(length)
                    if len(body) < length:
                        self._send(400, {"error": f"the body ended after {len(body)} of {length} bytes"})
                        return
                    self._send(200, service.reply(json.loads(body or b"null")))
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
