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

import hmac
import json
import threading
from typing import Any

from hepwb import limits
from hepwb.exceptions import ConfigError
from hepwb.models.entities import EntityExtractor
from hepwb.ner.handler import TOKEN_ENV, BoundedServer, RequestTooLarge, check_token_text, handler_for
from hepwb.text.ids import text_sha256
from hepwb.types import JSONObject

__all__ = ["TOKEN_ENV", "NERService", "check_token", "is_loopback", "model_name"]

READ_TIMEOUT_S = 10.0
"""A request (headers and body) not received whole within this many seconds is answered 408 or closed."""


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
        ConfigError: ``host`` is not loopback and there is no token, or the token is no printable ASCII
            (:func:`~hepwb.ner.handler.check_token_text`), before anything binds.

    Example:
        >>> check_token("127.0.0.1", None) is None
        True
        >>> check_token("0.0.0.0", None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: the NER service on 0.0.0.0 is reachable from other machines: ...
    """
    token = token or None
    if token is not None:
        check_token_text(token, f"the NER service's token (--token or {TOKEN_ENV})")
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
            self._server = BoundedServer((host, port), handler_for(self))
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
